//go:build e2e

// The Operation tests render example/operation's WatchOperations and
// CronOperation with the current CLI's `crossplane operation render`, which
// hands the request to Crossplane core's own Operation reconciler, run from
// the core binary as `crossplane internal render`. function-dependencies runs
// as its own process, served on loopback, as a Development-runtime function.
//
// From the required resources alone, opExpect works out what the function
// must do by the rules an Operation follows: every live dependent Object that
// provider-kubernetes manages (it carries the provider's own finalizer) and
// that isn't being deleted needs its reference finalizer on every live target
// it references; the function declares, as partial objects, exactly those
// that targets lack and the API server would accept, reports the references
// it leaves and why, and, in a sweep, the reference finalizers that name no
// Object referencing their target. The render must be exactly that. Golden
// files in testdata/ pin the whole output; run with -update to rewrite them.
package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// What provider-kubernetes and Crossplane's Operations define.
const (
	opAPIVersion         = "ops.crossplane.io/v1alpha1"
	opClusterGroup       = "kubernetes.crossplane.io"
	opNamespacedGroup    = "kubernetes.m.crossplane.io"
	opReferencePrefix    = "kubernetes.crossplane.io/referred-by-object-"
	opStep               = "repair-reference-finalizers"
	opReasonNotFound     = "TargetNotFound"
	opReasonDeleting     = "TargetDeleting"
	opReasonReleasing    = "DependentDeleting"
	opReasonNotManaged   = "DependentNotManaged"
	opFixedConditionTime = "2024-01-01T00:00:00Z" // What the CLI writes into every other condition.
)

// opDir is where the Operation example and its render inputs are.
func opDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(harness.Root(t), "example", "operation")
}

// TestOperationWatchDeclaresTheWatchedObjectsMissingFinalizer renders the
// WatchOperation of cluster-scoped Objects for payments-worker, whose
// finalizer payments-namespace lacks: it applies one partial object, to
// payments-namespace, with that finalizer alone, and leaves payments-app-config,
// which carries it, alone.
func TestOperationWatchDeclaresTheWatchedObjectsMissingFinalizer(t *testing.T) {
	r := newOpRenderer(t)
	watched := r.watched(t, "watched-object.yaml")
	want := opExpect(t, []doc{watched}, r.cluster, false)
	if len(want.applied) != 1 || want.protected == 0 {
		t.Fatalf("watched-object.yaml must reference one target that lacks its finalizer and one that carries it: the test would prove less (expected %+v)", want)
	}
	r.checkWatch(t, "watch-objects.yaml", "watched-object.yaml", "operation-watch.yaml", want)
}

// TestOperationWatchOfNamespacedObjectDeclaresFinalizerOnItsConfigMap
// renders the WatchOperation of namespaced Objects for ledger-exporter,
// which patches from a plain ConfigMap that lacks its finalizer: the
// partial object is that ConfigMap, namespaced, with that finalizer.
func TestOperationWatchOfNamespacedObjectDeclaresFinalizerOnItsConfigMap(t *testing.T) {
	r := newOpRenderer(t)
	watched := r.watched(t, "watched-namespaced-object.yaml")
	if opGroupOf(harness.String(watched, "apiVersion")) != opNamespacedGroup || harness.String(watched, "metadata", "namespace") == "" {
		t.Fatalf("watched-namespaced-object.yaml holds %s %s, not a namespaced Object", harness.String(watched, "apiVersion"), harness.String(watched, "metadata", "name"))
	}
	want := opExpect(t, []doc{watched}, r.cluster, false)
	if len(want.applied) != 1 || harness.String(want.applied[0], "kind") != "ConfigMap" {
		t.Fatalf("ledger-exporter's one target must be a ConfigMap that lacks its finalizer: the test would prove less (expected %+v)", want)
	}
	r.checkWatch(t, "watch-namespaced-objects.yaml", "watched-namespaced-object.yaml", "operation-watch-namespaced.yaml", want)
}

// checkWatch renders the WatchOperation for the watched Object of the file
// and checks the render against the golden file and what the rules expect.
func (r *opRenderer) checkWatch(t *testing.T, watchOperation, watchedFile, goldenFile string, want opPlan) {
	t.Helper()
	out := r.renderStable(t, watchOperation, r.clusterFile, filepath.Join(opDir(t), watchedFile))
	golden(t, filepath.Join("testdata", goldenFile), out.raw)
	checkOperation(t, out, want, r.cluster)
}

// TestOperationSweepDeclaresExactlyTheMissingFinalizersOfLiveManagedDependents
// renders the CronOperation's sweep of cluster.yaml, provider-kubernetes #371
// across a team's Objects: it declares each finalizer a live target lacks for
// a live, managed dependent, and nothing for a dependent being deleted, on a
// target being deleted, for a dependent the provider doesn't manage yet or to
// a target that doesn't exist, which it reports as skipped without failing;
// and it reports the stale finalizer it can't remove.
func TestOperationSweepDeclaresExactlyTheMissingFinalizersOfLiveManagedDependents(t *testing.T) {
	r := newOpRenderer(t)
	want := opExpect(t, opObjects(r.cluster), r.cluster, true)
	checkSweepFixture(t, want, r.cluster)
	out := r.renderStable(t, "cronoperation.yaml", r.clusterFile, "")
	golden(t, filepath.Join("testdata", "operation-sweep.yaml"), out.raw)
	checkOperation(t, out, want, r.cluster)
}

// TestOperationSweepDeclaresNothingOnceItsFinalizersAreApplied sweeps the
// cluster again as server-side apply leaves it after the first sweep: every
// repaired reference is protected now, so the Operation applies nothing (a
// partial object would only add a managedFields entry for the Operation's
// new field owner), and still reports the same skips and stale finalizer.
func TestOperationSweepDeclaresNothingOnceItsFinalizersAreApplied(t *testing.T) {
	r := newOpRenderer(t)
	first := opExpect(t, opObjects(r.cluster), r.cluster, true)
	repaired := opApply(t, r.cluster, first.applied)
	want := opExpect(t, opObjects(repaired), repaired, true)
	if len(want.applied) != 0 {
		t.Fatalf("once applied, the sweep's own model still finds finalizers missing: %v", want.applied)
	}
	if got, w := want.protected, first.protected+first.declared(); got != w {
		t.Fatalf("once applied, %d references are protected, want %d", got, w)
	}
	out := r.renderStable(t, "cronoperation.yaml", writeDocs(t, "cluster-repaired", repaired), "")
	checkOperation(t, out, want, repaired)
}

// TestOperationRenderScriptRendersTheSweep runs hack/render.sh on
// example/operation, as `make render EXAMPLE=example/operation` does: it must
// print the graph command's view of cluster.yaml as comment lines, one missing
// line for each target the sweep repairs and a stale line for each stale
// finalizer, then exactly the render testdata/operation-sweep.yaml pins.
func TestOperationRenderScriptRendersTheSweep(t *testing.T) {
	for _, name := range []string{"crossplane", "crossplane-core"} {
		harness.Tool(t, name) // Build outside the script's time limit.
	}
	cluster := readDocs(t, filepath.Join(opDir(t), "cluster.yaml"))
	want := opExpect(t, opObjects(cluster), cluster, true)
	stdout := runScript(t, "crossplane", opDir(t))
	comments, render := splitComments(stdout)
	golden(t, filepath.Join("testdata", "operation-sweep.yaml"), normaliseOperation(render))
	if len(comments) == 0 || comments[0] != "# provider-kubernetes #371 in example/operation/cluster.yaml, as function-dependencies graph finds it:" {
		t.Fatalf("hack/render.sh printed no #371 state of cluster.yaml before the render: %q", comments)
	}
	var missing, stale int
	for _, c := range comments[1:] {
		switch {
		case strings.HasPrefix(c, "#   missing: "):
			missing++
		case strings.HasPrefix(c, "#   stale: "):
			stale++
		default:
			t.Errorf("hack/render.sh's #371 state has line %q", c)
		}
	}
	if missing != len(want.repaired) || stale != len(want.stale) {
		t.Errorf("hack/render.sh's #371 state names %d targets lacking finalizers and %d stale finalizers, want %d and %d:\n%s",
			missing, stale, len(want.repaired), len(want.stale), strings.Join(comments, "\n"))
	}
}

// An opRenderer renders example/operation's Operations against the function,
// served once for the test.
type opRenderer struct {
	crossplane, core, functions string
	// cluster is the cluster state of cluster.yaml, which every render
	// passes as required resources.
	cluster     []doc
	clusterFile string
}

func newOpRenderer(t *testing.T) *opRenderer {
	t.Helper()
	dir := opDir(t)
	address := harness.Serve(t, harness.Function(t), "--debug")
	r := &opRenderer{
		crossplane:  harness.Tool(t, "crossplane"),
		core:        harness.Tool(t, "crossplane-core"),
		functions:   functionsFile(t, example{name: "operation", dir: dir}, map[string]string{fnDependencies: address}),
		clusterFile: filepath.Join(dir, "cluster.yaml"),
	}
	r.cluster = readDocs(t, r.clusterFile)
	return r
}

// watched reads a watched-resource file, and fails the test unless it holds
// one Object exactly as cluster.yaml has it: the watch and the sweep render
// one cluster.
func (r *opRenderer) watched(t *testing.T, file string) doc {
	t.Helper()
	docs := readDocs(t, filepath.Join(opDir(t), file))
	if len(docs) != 1 {
		t.Fatalf("%s holds %d documents, want the one watched Object", file, len(docs))
	}
	w := docs[0]
	for _, c := range r.cluster {
		if opIdentityOf(c) == opIdentityOf(w) {
			if !reflect.DeepEqual(c, w) {
				t.Fatalf("%s differs from %s in cluster.yaml", file, opIdentityOf(w))
			}
			return w
		}
	}
	t.Fatalf("%s holds %s, which cluster.yaml lacks", file, opIdentityOf(w))
	return nil
}

// An opOutput is an Operation render's output, normalised, and its parts.
type opOutput struct {
	raw       []byte
	operation doc
	applied   []doc
	results   []result
}

// renderStable renders an Operation file of example/operation with the
// required resources and, for a WatchOperation, the watched resource; twice,
// since a golden file can only pin a deterministic output.
func (r *opRenderer) renderStable(t *testing.T, operation, required, watched string) opOutput {
	t.Helper()
	out := r.render(t, operation, required, watched)
	if twice := r.render(t, operation, required, watched); !bytes.Equal(twice.raw, out.raw) {
		t.Errorf("two renders of the same input differ:\n%s", diff(string(out.raw), string(twice.raw)))
	}
	return out
}

func (r *opRenderer) render(t *testing.T, operation, required, watched string) opOutput {
	t.Helper()
	args := []string{"operation", "render", filepath.Join(opDir(t), operation), r.functions,
		"--required-resources=" + required, "--include-function-results", "--crossplane-binary=" + r.core}
	if watched != "" {
		args = append(args, "--watched-resource="+watched)
	}
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.crossplane, args...)
	// A configuration file of its own keeps the CLI from reading or writing
	// the user's.
	cmd.Env = append(os.Environ(), "CROSSPLANE_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("crossplane %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("crossplane rendered %s in %s", operation, time.Since(start).Round(time.Millisecond))
	out := opOutput{raw: normaliseOperation(stdout.Bytes())}
	docs := decode(t, out.raw)
	if len(docs) == 0 || harness.String(docs[0], "apiVersion") != opAPIVersion || harness.String(docs[0], "kind") != "Operation" {
		t.Fatalf("the render doesn't start with the Operation:\n%s", out.raw)
	}
	out.operation = docs[0]
	for _, d := range docs[1:] {
		if harness.String(d, "apiVersion") != resultAPIVersion {
			out.applied = append(out.applied, d)
		}
	}
	out.results = results(output{docs: docs})
	return out
}

// normaliseOperation makes an Operation render comparable between runs. Two
// things vary. The CLI means to replace every condition's lastTransitionTime
// with a fixed time, but its ReplaceConditionTimestamps edits a copy of the
// typed Operation and so leaves the Operation's own conditions at the time of
// the render: normaliseOperation writes the CLI's fixed time into them. And
// Crossplane core applies the desired resources in the order of a Go map,
// which the CLI prints: normaliseOperation sorts them. Each document is
// otherwise left as the CLI printed it.
func normaliseOperation(out []byte) []byte {
	docs := bytes.Split(bytes.TrimRight(bytes.TrimPrefix(out, []byte("---\n")), "\n"), []byte("\n---\n"))
	if len(docs) > 0 && bytes.HasPrefix(docs[0], []byte("apiVersion: "+opAPIVersion+"\nkind: Operation\n")) {
		docs[0] = conditionTime.ReplaceAll(docs[0], []byte(`${1}"`+opFixedConditionTime+`"`))
	}
	end := 1
	for end < len(docs) && !bytes.HasPrefix(docs[end], []byte("apiVersion: "+resultAPIVersion+"\n")) {
		end++
	}
	if end > 1 {
		slices.SortFunc(docs[1:end], bytes.Compare)
	}
	return append(append([]byte("---\n"), bytes.Join(docs, []byte("\n---\n"))...), '\n')
}

// conditionTime is a condition's lastTransitionTime, as the CLI prints the
// Operation's status.conditions.
var conditionTime = regexp.MustCompile(`(?m)^(\s+(?:- )?lastTransitionTime: ).*$`)

// An opPlan is what an Operation must do, worked out by opExpect.
type opPlan struct {
	dependents, references, protected int
	// repaired are the finalizers to declare, by target; skipped the
	// references left alone and stale the stale finalizers, each as the
	// function's output lists them.
	repaired map[string][]string
	skipped  []doc
	stale    []doc
	// nudged are the objects being deleted that teardown nudges wake, by
	// the labels and annotations they must carry.
	nudged map[opIdentity]opNudge
	// applied are the partial objects Crossplane must apply, one for each
	// repaired target and each nudged object.
	applied []doc
}

// An opNudge is what a teardown nudge sets on an object being deleted.
type opNudge struct{ labels, annotations map[string]string }

// What the function's teardown nudges set (internal/teardown).
const (
	opTargetLabel  = "dependencies.fn.crossplane.io/teardown-target"
	opReleasedKey  = "dependencies.fn.crossplane.io/teardown-released"
	opHolderPrefix = "teardown.dependencies.fn.crossplane.io/"
)

func (p opPlan) declared() int {
	n := 0
	for _, fs := range p.repaired {
		n += len(fs)
	}
	return n
}

// output is the step's output the plan must store in the Operation's
// status.pipeline, as JSON decodes it.
func (p opPlan) output(t *testing.T) doc {
	t.Helper()
	type repair struct {
		Target     string   `json:"target"`
		Finalizers []string `json:"finalizers"`
	}
	var repaired []repair
	for _, target := range slices.Sorted(maps.Keys(p.repaired)) {
		repaired = append(repaired, repair{Target: target, Finalizers: p.repaired[target]})
	}
	var nudged []string
	for id := range p.nudged {
		nudged = append(nudged, string(id))
	}
	slices.Sort(nudged)
	b, err := json.Marshal(struct {
		Dependents int      `json:"dependents"`
		References int      `json:"references"`
		Protected  int      `json:"protected"`
		Repaired   []repair `json:"repaired,omitempty"`
		Skipped    []doc    `json:"skipped,omitempty"`
		Stale      []doc    `json:"stale,omitempty"`
		Nudged     []string `json:"nudged,omitempty"`
	}{p.dependents, p.references, p.protected, repaired, p.skipped, p.stale, nudged})
	if err != nil {
		t.Fatal(err)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// An opIdentity names an object the way kubectl does, and the function's
// output with it: kind.group, then namespace/name.
type opIdentity string

func opIdentityOf(d doc) opIdentity {
	group := opGroupOf(harness.String(d, "apiVersion"))
	return opName(group, harness.String(d, "kind"), harness.String(d, "metadata", "namespace"), harness.String(d, "metadata", "name"))
}

func opName(group, kind, namespace, name string) opIdentity {
	if group != "" {
		kind += "." + group
	}
	if namespace != "" {
		name = namespace + "/" + name
	}
	return opIdentity(kind + " " + name)
}

// opGroupOf returns an apiVersion's group; "" for the core group.
func opGroupOf(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// opObjects returns the provider-kubernetes Objects among the cluster state:
// what a sweep handles.
func opObjects(cluster []doc) []doc {
	var objects []doc
	for _, d := range cluster {
		if opIsObject(d) {
			objects = append(objects, d)
		}
	}
	return objects
}

func opIsObject(d doc) bool {
	group := opGroupOf(harness.String(d, "apiVersion"))
	return harness.String(d, "kind") == "Object" && (group == opClusterGroup || group == opNamespacedGroup)
}

// An opReference is one of an Object's spec.references, as provider-kubernetes
// resolves it: patchesFrom when set, else dependsOn, with the CRD's defaults
// for apiVersion and kind, and no default for namespace.
type opReference struct {
	apiVersion string
	target     opIdentity
}

func opReferencesOf(t *testing.T, d doc) []opReference {
	t.Helper()
	group := opGroupOf(harness.String(d, "apiVersion"))
	var refs []opReference
	for i, r := range harness.List(d, "spec", "references") {
		rd, _ := r.(doc)
		target, _ := rd["patchesFrom"].(doc)
		if target == nil {
			target, _ = rd["dependsOn"].(doc)
		}
		name := harness.String(target, "name")
		if name == "" {
			t.Fatalf("%s: spec.references[%d] names no target: the Operation tests model readable references only", opIdentityOf(d), i)
		}
		apiVersion, kind := harness.String(target, "apiVersion"), harness.String(target, "kind")
		if apiVersion == "" {
			apiVersion = group + "/v1alpha1"
		}
		if kind == "" {
			kind = "Object"
		}
		targetGroup := opGroupOf(apiVersion)
		refs = append(refs, opReference{apiVersion: apiVersion, target: opName(targetGroup, kind, harness.String(target, "namespace"), name)})
	}
	return refs
}

// opExpect works out what an Operation that handles the Objects must do,
// given the cluster state Crossplane reads its required resources from. A
// sweep also reports stale finalizers; a watch, which reads one Object, can't
// tell them.
func opExpect(t *testing.T, handled, cluster []doc, sweep bool) opPlan {
	t.Helper()
	byIdentity := map[opIdentity]doc{}
	for _, d := range cluster {
		byIdentity[opIdentityOf(d)] = d
	}
	isHandled := map[opIdentity]bool{}
	for _, d := range handled {
		isHandled[opIdentityOf(d)] = true
	}
	live := func(d doc) bool { return harness.String(d, "metadata", "deletionTimestamp") == "" }
	managed := func(d doc) bool {
		return harness.String(d, "metadata", "uid") != "" && slices.Contains(finalizers(d), objectFinalizer)
	}

	p := opPlan{repaired: map[string][]string{}}
	// referrers holds, for each target read, the UIDs of the Objects that
	// reference it, and edges each Object's targets among the handled ones.
	referrers := map[opIdentity]map[string]bool{}
	edges := map[opIdentity][]opIdentity{}
	for _, d := range slices.SortedFunc(slices.Values(handled), func(a, b doc) int { return strings.Compare(string(opIdentityOf(a)), string(opIdentityOf(b))) }) {
		id, uid := opIdentityOf(d), harness.String(d, "metadata", "uid")
		refs := opReferencesOf(t, d)
		if len(refs) > 0 {
			p.dependents++
		}
		for _, ref := range refs {
			p.references++
			target, found := byIdentity[ref.target]
			skip := func(reason string) {
				p.skipped = append(p.skipped, doc{"dependent": string(id), "target": string(ref.target), "reason": reason})
			}
			if found {
				if referrers[ref.target] == nil {
					referrers[ref.target] = map[string]bool{}
				}
				referrers[ref.target][uid] = true
				if isHandled[ref.target] {
					edges[id] = append(edges[id], ref.target)
				} else if v := harness.String(target, "apiVersion"); v != ref.apiVersion {
					// Crossplane fetches the target by name at the reference's
					// version: the API server converts, the CLI's in-memory
					// client doesn't.
					t.Fatalf("%s references %s at %s, which cluster.yaml has at %s: the render wouldn't find it", id, ref.target, ref.apiVersion, v)
				}
			}
			finalizer := opReferencePrefix + uid
			switch {
			case !found:
				skip(opReasonNotFound)
			case !managed(d):
				skip(opReasonNotManaged)
			case !live(d):
				skip(opReasonReleasing)
			case slices.Contains(finalizers(target), finalizer):
				p.protected++
			case !live(target):
				skip(opReasonDeleting)
			case !slices.Contains(p.repaired[string(ref.target)], finalizer):
				p.repaired[string(ref.target)] = append(p.repaired[string(ref.target)], finalizer)
			}
		}
	}
	for id := range edges {
		if opReaches(edges, id, id, map[opIdentity]bool{}) {
			t.Fatalf("%s lies on a reference cycle: the Operation tests don't model cycles", id)
		}
	}
	slices.SortFunc(p.skipped, func(a, b doc) int {
		return strings.Compare(fmt.Sprint(a["dependent"], "\x00", a["target"]), fmt.Sprint(b["dependent"], "\x00", b["target"]))
	})

	for _, target := range slices.Sorted(maps.Keys(p.repaired)) {
		slices.Sort(p.repaired[target])
		d := byIdentity[opIdentity(target)]
		metadata := doc{
			"name":       harness.String(d, "metadata", "name"),
			"uid":        harness.String(d, "metadata", "uid"),
			"finalizers": toAny(p.repaired[target]),
		}
		if ns := harness.String(d, "metadata", "namespace"); ns != "" {
			metadata["namespace"] = ns
		}
		p.applied = append(p.applied, doc{"apiVersion": d["apiVersion"], "kind": d["kind"], "metadata": metadata})
	}

	// Every object the Operation reads: the Objects, and the targets found.
	read := maps.Clone(isHandled)
	for id := range referrers {
		read[id] = true
	}
	p.nudged = opNudges(read, byIdentity)
	for _, id := range slices.Sorted(maps.Keys(p.nudged)) {
		d, n := byIdentity[id], p.nudged[id]
		metadata := doc{"name": harness.String(d, "metadata", "name"), "uid": harness.String(d, "metadata", "uid")}
		if ns := harness.String(d, "metadata", "namespace"); ns != "" {
			metadata["namespace"] = ns
		}
		// A target's nudges apply only to the version read; a holder's
		// alone don't.
		exact := len(n.labels) > 0 || slices.ContainsFunc(slices.Collect(maps.Keys(n.annotations)), func(k string) bool { return !strings.HasPrefix(k, opHolderPrefix) })
		if rv := harness.String(d, "metadata", "resourceVersion"); rv != "" && exact {
			metadata["resourceVersion"] = rv
		}
		for field, m := range map[string]map[string]string{"labels": n.labels, "annotations": n.annotations} {
			if len(m) > 0 {
				values := doc{}
				for k, v := range m {
					values[k] = v
				}
				metadata[field] = values
			}
		}
		p.applied = append(p.applied, doc{"apiVersion": d["apiVersion"], "kind": d["kind"], "metadata": metadata})
	}

	if sweep {
		for _, id := range slices.Sorted(maps.Keys(read)) {
			var stale []string
			for _, f := range finalizers(byIdentity[id]) {
				if uid, ok := strings.CutPrefix(f, opReferencePrefix); ok && !referrers[id][uid] {
					stale = append(stale, f)
				}
			}
			slices.Sort(stale)
			for _, f := range stale {
				p.stale = append(p.stale, doc{"target": string(id), "finalizer": f})
			}
		}
	}
	return p
}

// opNudges works out the teardown nudges of the objects read, all being
// deleted: one that reference finalizers hold is labelled a target, once,
// and wakes its first holder by UID that is being deleted, with an
// annotation whose value is the first ten hex digits of the SHA-256 of the
// holders' sorted UIDs joined by commas, unless the holder carries that
// value already, and passing over a holder that reference finalizers hold
// in turn; a target that none holds any more and that the provider manages
// is annotated released, once. Nothing else is written to.
func opNudges(read map[opIdentity]bool, byIdentity map[opIdentity]doc) map[opIdentity]opNudge {
	out := map[opIdentity]opNudge{}
	nudge := func(id opIdentity) opNudge {
		n, ok := out[id]
		if !ok {
			n = opNudge{labels: map[string]string{}, annotations: map[string]string{}}
			out[id] = n
		}
		return n
	}
	deletingObjects := map[string]opIdentity{}
	for id := range read {
		if d := byIdentity[id]; opIsObject(d) && harness.String(d, "metadata", "deletionTimestamp") != "" {
			deletingObjects[harness.String(d, "metadata", "uid")] = id
		}
	}
	for _, id := range slices.Sorted(maps.Keys(read)) {
		d := byIdentity[id]
		if harness.String(d, "metadata", "deletionTimestamp") == "" {
			continue
		}
		var holders []string
		for _, f := range finalizers(d) {
			if uid, ok := strings.CutPrefix(f, opReferencePrefix); ok {
				holders = append(holders, uid)
			}
		}
		target := harness.String(d, "metadata", "labels", opTargetLabel) != ""
		if len(holders) == 0 {
			if target && slices.Contains(finalizers(d), objectFinalizer) && harness.String(d, "metadata", "annotations", opReleasedKey) == "" {
				nudge(id).annotations[opReleasedKey] = "true"
			}
			continue
		}
		if !target {
			nudge(id).labels[opTargetLabel] = "true"
		}
		slices.Sort(holders)
		sum := sha256.Sum256([]byte(strings.Join(holders, ",")))
		key, value := opHolderPrefix+harness.String(d, "metadata", "uid"), hex.EncodeToString(sum[:])[:10]
		for _, uid := range holders {
			if holder, ok := deletingObjects[uid]; ok && !slices.ContainsFunc(finalizers(byIdentity[holder]), func(f string) bool { return strings.HasPrefix(f, opReferencePrefix) }) {
				if harness.String(byIdentity[holder], "metadata", "annotations", key) != value {
					nudge(holder).annotations[key] = value
				}
				break
			}
		}
	}
	// An object that is a holder and a target at once gets its holder
	// nudges first, unpinned; its target nudges wait for the next
	// Operation.
	for id, n := range out {
		holder := false
		for k := range n.annotations {
			holder = holder || strings.HasPrefix(k, opHolderPrefix)
		}
		if !holder {
			continue
		}
		clear(n.labels)
		maps.DeleteFunc(n.annotations, func(k, _ string) bool { return !strings.HasPrefix(k, opHolderPrefix) })
		out[id] = n
	}
	return out
}

// opReaches tells whether from reaches to through the edges.
func opReaches(edges map[opIdentity][]opIdentity, from, to opIdentity, seen map[opIdentity]bool) bool {
	for _, next := range edges[from] {
		if next == to {
			return true
		}
		if !seen[next] {
			seen[next] = true
			if opReaches(edges, next, to, seen) {
				return true
			}
		}
	}
	return false
}

// checkSweepFixture fails the test unless the sweep's cluster state shows
// what the sweep test claims: the bug report's shape (a shared target that
// carries some of its dependents' finalizers and lacks others), each reason
// to leave a reference alone, a stale finalizer, and a namespaced Object
// whose target is a plain ConfigMap.
func checkSweepFixture(t *testing.T, p opPlan, cluster []doc) {
	t.Helper()
	shared := false
	for target, fs := range p.repaired {
		carried := 0
		for _, f := range finalizers(opFind(cluster, opIdentity(target))) {
			if strings.HasPrefix(f, opReferencePrefix) {
				carried++
			}
		}
		shared = shared || (len(fs) > 1 && carried > 1)
	}
	if !shared {
		t.Error("cluster.yaml has no target that carries several of its dependents' finalizers and lacks several others")
	}
	reasons := map[string]bool{}
	for _, s := range p.skipped {
		reasons[s["reason"].(string)] = true
	}
	for _, reason := range []string{opReasonNotFound, opReasonDeleting, opReasonReleasing, opReasonNotManaged} {
		if !reasons[reason] {
			t.Errorf("cluster.yaml has no reference the sweep skips as %s", reason)
		}
	}
	if len(p.stale) == 0 {
		t.Error("cluster.yaml has no stale reference finalizer")
	}
	configMap := false
	for _, a := range p.applied {
		configMap = configMap || (harness.String(a, "kind") == "ConfigMap" && harness.String(a, "metadata", "namespace") != "")
	}
	if !configMap {
		t.Error("cluster.yaml has no ConfigMap that lacks a namespaced Object's finalizer")
	}
}

func opFind(cluster []doc, id opIdentity) doc {
	for _, d := range cluster {
		if opIdentityOf(d) == id {
			return d
		}
	}
	return nil
}

// checkOperation checks a render against the plan: the Operation succeeded,
// stored exactly the plan's output and applied exactly its partial objects,
// each of which the API server accepts; and the step reported a warning for
// the stale finalizers, and nothing else.
func checkOperation(t *testing.T, out opOutput, p opPlan, cluster []doc) {
	t.Helper()
	if c := condition(out.operation, "Succeeded"); harness.String(c, "status") != "True" {
		t.Errorf("the Operation's Succeeded condition is %v, want True", c)
	}
	steps := harness.List(out.operation, "status", "pipeline")
	if len(steps) != 1 || harness.String(steps[0].(doc), "step") != opStep {
		t.Fatalf("the Operation's status.pipeline is %v, want step %s alone", steps, opStep)
	}
	if got, want := steps[0].(doc)["output"], p.output(t); !reflect.DeepEqual(got, want) {
		t.Errorf("the step's output is\n%s\nwant\n%s", opJSON(t, got), opJSON(t, want))
	}

	sortDocs := func(docs []doc) []doc {
		return slices.SortedFunc(slices.Values(docs), func(a, b doc) int { return strings.Compare(string(opIdentityOf(a)), string(opIdentityOf(b))) })
	}
	got, want := sortDocs(out.applied), sortDocs(p.applied)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the Operation applied\n%s\nwant\n%s", opJSON(t, got), opJSON(t, want))
	}
	var refs, wantRefs []string
	for _, r := range harness.List(out.operation, "status", "appliedResourceRefs") {
		rd, _ := r.(doc)
		refs = append(refs, string(opIdentityOf(doc{"apiVersion": rd["apiVersion"], "kind": rd["kind"], "metadata": doc{"name": rd["name"], "namespace": rd["namespace"]}})))
	}
	for _, a := range want {
		wantRefs = append(wantRefs, string(opIdentityOf(a)))
	}
	slices.Sort(refs)
	if !slices.Equal(refs, wantRefs) {
		t.Errorf("the Operation's appliedResourceRefs name %q, want %q", refs, wantRefs)
	}
	for _, a := range out.applied {
		checkAccepted(t, a, cluster)
	}

	var wantResults []string
	if len(p.stale) > 0 {
		wantResults = append(wantResults, "Warning naming every stale finalizer")
	}
	var gotResults []string
	for _, r := range out.results {
		stale := r.step == opStep && r.severity == "Warning" && strings.Contains(r.message, "naming no live Object that references its target")
		for _, s := range p.stale[:min(len(p.stale), 5)] {
			stale = stale && strings.Contains(r.message, fmt.Sprintf("%s carries %s", s["target"], s["finalizer"]))
		}
		if stale {
			gotResults = append(gotResults, "Warning naming every stale finalizer")
		} else {
			gotResults = append(gotResults, fmt.Sprintf("%s %s: %s", r.severity, r.reason, r.message))
		}
	}
	if !slices.Equal(gotResults, wantResults) {
		t.Errorf("the step reported %q, want %q", gotResults, wantResults)
	}
}

// checkAccepted checks that the API server takes a partial object as a
// change of finalizers alone: its target exists with its UID and isn't being
// deleted, and each finalizer is a reference finalizer the target lacks, of a
// live Object that provider-kubernetes manages and that references it.
func checkAccepted(t *testing.T, applied doc, cluster []doc) {
	t.Helper()
	id := opIdentityOf(applied)
	target := opFind(cluster, id)
	switch {
	case target == nil:
		t.Errorf("the Operation applied %s, which doesn't exist: server-side apply would create it", id)
		return
	case harness.String(applied, "metadata", "uid") != harness.String(target, "metadata", "uid"):
		t.Errorf("the Operation applied %s with UID %q, want its UID %q", id, harness.String(applied, "metadata", "uid"), harness.String(target, "metadata", "uid"))
	case harness.String(target, "metadata", "deletionTimestamp") != "" && len(finalizers(applied)) > 0:
		t.Errorf("the Operation applied finalizers to %s, which is being deleted: the API server refuses them", id)
	}
	for _, f := range finalizers(applied) {
		uid, ok := strings.CutPrefix(f, opReferencePrefix)
		if !ok || slices.Contains(finalizers(target), f) {
			t.Errorf("the Operation declares %s on %s, which is no reference finalizer it lacks", f, id)
			continue
		}
		var dependent doc
		for _, d := range opObjects(cluster) {
			if harness.String(d, "metadata", "uid") == uid {
				dependent = d
			}
		}
		switch {
		case dependent == nil:
			t.Errorf("the Operation declares %s on %s, for no Object", f, id)
		case harness.String(dependent, "metadata", "deletionTimestamp") != "" || !slices.Contains(finalizers(dependent), objectFinalizer):
			t.Errorf("the Operation declares %s on %s for %s, which is being deleted or not managed: nothing would release it", f, id, opIdentityOf(dependent))
		case !slices.ContainsFunc(opReferencesOf(t, dependent), func(r opReference) bool { return r.target == id }):
			t.Errorf("the Operation declares %s on %s for %s, which doesn't reference it", f, id, opIdentityOf(dependent))
		}
	}
}

// opApply returns the cluster state as server-side apply leaves it once the
// partial objects are applied: each target's finalizers, a set, gain the
// declared ones.
func opApply(t *testing.T, cluster, applied []doc) []doc {
	t.Helper()
	out := make([]doc, 0, len(cluster))
	for _, d := range cluster {
		d = harness.DeepCopy(t, d)
		for _, a := range applied {
			if opIdentityOf(a) != opIdentityOf(d) {
				continue
			}
			fs := finalizers(d)
			for _, f := range finalizers(a) {
				if !slices.Contains(fs, f) {
					fs = append(fs, f)
				}
			}
			d["metadata"].(doc)["finalizers"] = toAny(fs)
			for _, field := range []string{"labels", "annotations"} {
				if m, ok := a["metadata"].(doc)[field].(doc); ok {
					into, _ := d["metadata"].(doc)[field].(doc)
					if into == nil {
						into = doc{}
					}
					maps.Copy(into, m)
					d["metadata"].(doc)[field] = into
				}
			}
		}
		out = append(out, d)
	}
	return out
}

func opJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
