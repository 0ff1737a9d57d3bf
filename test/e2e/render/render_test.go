//go:build e2e

// Package render renders every example under example/ with the real Crossplane
// CLIs and the real pipeline: patch-and-transform renders the Objects,
// function-dependencies declares the reference finalizers, auto-ready sets
// readiness. Every function runs as its own process, served on loopback, as
// `crossplane render` runs Development-runtime functions.
//
// The tests check what matters independently of the function's code. From
// each example's input, observed resources and what the pipeline renders
// without the function, plan_test.go works out what the function must do: the
// edges (Objects' spec.references, the input's dependencies and, with infer,
// what the resources state of each other), the finalizers, the dependsOn
// references it writes, the resources it holds back until their dependencies
// are ready, the Usages it adds (for external references, for inferred edges,
// and as the input asks), its results and the XR's DeletionOrdered
// condition. The render must do exactly that: every live dependent's
// finalizer is on every composed resource it depends on, nothing is dropped,
// added or changed beyond the plan, and the step reports exactly the plan's
// results. Rendered once more over what the first render applied, a
// composite with nothing pending, held back or wrong gets no result from the
// step at all. Golden files in testdata/ pin the whole output of both renders
// (<example>.<cli>.yaml and <example>.<cli>.applied.yaml); run with -update
// to rewrite them. The v1 example renders with Crossplane v1's CLI only, an
// example with a v1 subfolder with it as well as with both v2 CLIs, every
// other with the v2 CLIs only.
package render

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the renders' output")

// Function names, as the examples' functions.yaml and compositions name them.
const (
	fnDependencies      = harness.FnDependencies
	fnPatchAndTransform = harness.FnPatchAndTransform
	fnAutoReady         = harness.FnAutoReady
)

// What crossplane render reads and prints.
const (
	annotationRuntime  = harness.AnnotationRuntime
	annotationTarget   = harness.AnnotationTarget
	annotationResource = harness.AnnotationResource
	resultAPIVersion   = harness.ResultAPIVersion
	severityNormal     = "Normal"
	severityWarning    = "Warning"
	renderTimeout      = harness.RenderTimeout
)

// What provider-kubernetes and the function define.
const (
	objectFinalizer = "finalizer.managedresource.crossplane.io"
	conditionType   = "DeletionOrdered"
)

// v1Example is the example of a Crossplane v1 XR with a claim, and only
// that. Another example renders on Crossplane v1 too when its folder has a
// v1Example subfolder: see loadExamples.
const v1Example = "v1"

// clis are the CLIs every example renders with: crank v2.2.0 and the current
// CLI render the Crossplane v2 examples, Crossplane v1.19.0's the v1 ones.
var clis = []harness.CLI{harness.Crank, harness.Crossplane, harness.CrankV1}

// An example is one folder under example/, as one Crossplane generation
// renders it.
type example struct {
	name, dir string
	// v1 is true for an example of Crossplane v1: example/v1, or the v1
	// generation of another example, whose XR, XRD and claim are in xrDir.
	v1 bool
	// xrDir holds the example's xr.yaml and xrd.yaml: dir, or for the v1
	// generation of another example its v1 subfolder.
	xrDir string
	// composition is the example's composition.yaml, with, for the v1
	// generation of another example, the fields of the subfolder's
	// input.yaml set in function-dependencies' input.
	composition doc
	// alone is true when hack/render.sh renders the example from dir as it
	// is: false for the v1 generation of another example.
	alone    bool
	observed []doc
	// required are what Crossplane would fetch for the function's
	// requirements (required.yaml, if the example has one).
	required []doc
	// step is the name of the pipeline step that runs function-dependencies,
	// and input its input.
	step  string
	input input
	// xr is the observed XR; xrNamespace its namespace, empty for a
	// cluster-scoped XR.
	xr          doc
	xrNamespace string
}

type doc = map[string]any

// TestRender renders every example with both CLI generations, with and
// without function-dependencies, and once more as if Crossplane had applied
// the first render.
func TestRender(t *testing.T) {
	examples := loadExamples(t)

	// The functions are stateless: one process each serves every render.
	addresses := serveFunctions(t)

	for _, c := range clis {
		cr := harness.NewRenderer(t, c)
		for _, ex := range examples {
			if c.V1 != ex.v1 {
				continue
			}
			t.Run(c.Name+"/"+ex.name, func(t *testing.T) {
				r := &renderer{Renderer: cr, example: ex, functions: functionsFile(t, ex, addresses)}
				testExample(t, r)
			})
		}
	}
}

// serveFunctions serves the pipeline's functions, and returns their
// addresses by name.
func serveFunctions(t *testing.T) map[string]string {
	t.Helper()
	return harness.ServePipeline(t, fnPatchAndTransform, fnAutoReady)
}

func testExample(t *testing.T, r *renderer) {
	ex := r.example
	composition := ex.composition

	// Without function-dependencies: what patch-and-transform and auto-ready
	// make of the example. It shows the finalizers are missing, so that the
	// full pipeline proves the function is what adds them. It is also what
	// the function gets from the steps before it, from which the test works
	// out what the function must do.
	without := r.render(t, "without function-dependencies", withoutStep(t, composition, ex.step), filepath.Join(ex.dir, "observed.yaml"))
	baseline := composedByName(t, without)
	p := planOf(t, ex, baseline, ex.observed)
	if len(p.live) == 0 && len(p.inferred) == 0 {
		t.Fatal("the example has no dependencies between live composed Objects, nor inferred ones: the test would prove nothing")
	}
	if len(ex.input.Infer) > 0 && len(p.inferred) == 0 {
		t.Errorf("the example infers (%v), but the rules infer no edge between existing resources: the test would prove nothing of them", ex.input.Infer)
	}
	for _, e := range p.live {
		if slices.Contains(finalizers(baseline[e.target]), e.finalizer) {
			t.Errorf("without function-dependencies, %s already carries %s's finalizer %s", e.target, e.dependent, e.finalizer)
		}
	}
	// An example that infers is about the Usages of its inferred edges, which
	// need no finalizer.
	if len(p.missing) == 0 && ex.input.Protection != "Usages" && len(p.inferred) == 0 {
		t.Error("the example's observed resources lack no reference finalizer: they don't reproduce provider-kubernetes #371")
	}
	if !p.oracle.Changes() {
		t.Error("the example's observed resources need nothing of the function: the render would prove nothing")
	}
	if c := condition(xrOf(t, without), conditionType); c != nil {
		t.Errorf("without function-dependencies, the XR has condition %s: %v", conditionType, c)
	}
	for _, res := range stepResults(without, ex.step) {
		t.Errorf("without function-dependencies, step %q reported %v", ex.step, res)
	}

	// The full pipeline, as the example's composition has it.
	out := r.render(t, "the pipeline", composition, filepath.Join(ex.dir, "observed.yaml"))
	// A golden file can only pin a deterministic output: a second render
	// must print the same bytes.
	if twice := r.render(t, "the pipeline again", composition, filepath.Join(ex.dir, "observed.yaml")); !bytes.Equal(twice.raw, out.raw) {
		t.Errorf("two renders of the same input differ:\n%s", diff(string(out.raw), string(twice.raw)))
	}
	golden(t, filepath.Join("testdata", ex.name+"."+r.CLI.Name+".yaml"), out.raw)
	rendered := composedByName(t, out)
	checkFinalizers(t, rendered, p.declared)
	checkChanges(t, baseline, rendered, p)
	for name := range observedByName(ex.observed) {
		if _, ok := rendered[name]; !ok {
			t.Errorf("observed composed resource %s is missing from the render", name)
		}
	}
	checkResults(t, out, ex.step, p.results(ex.step))
	checkCondition(t, out, p)
	checkUsagesReady(t, out, baseline, rendered)

	// As if Crossplane had applied the render: the observed resources now
	// carry every declared finalizer, and the function must declare the same
	// set again, level-triggered, and report the references as protected,
	// but for those whose dependent doesn't exist yet.
	appliedObserved := applyFinalizers(t, ex.observed, rendered)
	applied := r.render(t, "the pipeline once its finalizers are applied", composition, writeDocs(t, "observed", appliedObserved))
	again := composedByName(t, applied)
	pa := planOf(t, ex, baseline, appliedObserved)
	if len(pa.missing) > 0 {
		t.Errorf("once applied, the observed targets still lack finalizers: %v", pa.missing)
	}
	checkFinalizers(t, again, pa.declared)
	for name, d := range rendered {
		if got, want := finalizers(again[name]), finalizers(d); !slices.Equal(got, want) {
			t.Errorf("once applied, %s declares finalizers %q, not %q as before", name, got, want)
		}
	}
	checkChanges(t, baseline, again, pa)
	golden(t, filepath.Join("testdata", ex.name+"."+r.CLI.Name+".applied.yaml"), applied.raw)
	checkResults(t, applied, ex.step, pa.results(ex.step))
	if c := checkCondition(t, applied, pa); len(pa.pending) == 0 && c["status"] != "True" {
		t.Errorf("once applied, with every dependent existing, %s is %v, want True", conditionType, c)
	}
	// A converged composite needs nobody's attention, whatever the plan's
	// results say: a result is an event on every reconcile.
	if wrong := pa.wrong(); len(wrong) > 0 {
		t.Logf("example %s, once applied, is not converged, so its step may report results: %s", ex.name, strings.Join(wrong, "; "))
	} else if got := stepResults(applied, ex.step); len(got) > 0 {
		t.Errorf("example %s, once applied, has nothing pending, held back or wrong, yet step %s reported results, want none:\n%s", ex.name, ex.step, resultLines(got))
	}
}

// wrong says what of the plan needs attention once it is applied: a
// dependent that doesn't exist yet, a resource held back, a result that is
// no Normal one. None of it: the composite is converged and healthy.
func (p plan) wrong() []string {
	var wrong []string
	if len(p.pending) > 0 {
		wrong = append(wrong, fmt.Sprintf("pending edges %v", p.pending))
	}
	if len(p.heldBack) > 0 {
		wrong = append(wrong, fmt.Sprintf("held back %v", slices.Sorted(maps.Keys(p.heldBack))))
	}
	for _, r := range p.oracle.Results() {
		if r.Severity != oracle.Normal {
			wrong = append(wrong, r.Severity+" "+r.Reason)
		}
	}
	return wrong
}

// A renderer renders one example with one CLI.
type renderer struct {
	harness.Renderer
	example   example
	functions string
}

// output is a render's output, raw and parsed.
type output struct {
	raw  []byte
	docs []doc
}

// render runs the CLI on the example's XR and XRD with a composition and an
// observed-resources file, and fails the test unless it succeeds. what says
// which render this is, for the log.
func (r *renderer) render(t *testing.T, what string, composition any, observed string) output {
	t.Helper()
	var compositionFile string
	switch c := composition.(type) {
	case doc:
		compositionFile = writeDocs(t, "composition", []doc{c})
	case string:
		compositionFile = c
	default:
		t.Fatalf("composition of type %T", composition)
	}
	args := []string{
		filepath.Join(r.example.xrDir, "xr.yaml"), compositionFile, r.functions,
		"--observed-resources=" + observed,
		"--xrd=" + filepath.Join(r.example.xrDir, "xrd.yaml"),
		"--include-function-results",
	}
	if len(r.example.required) > 0 {
		args = append(args, "--required-resources="+filepath.Join(r.example.dir, "required.yaml"))
	}
	raw := r.Render(t, r.example.name+", "+what, args)
	return output{raw: raw, docs: decode(t, raw)}
}

// golden compares out with the golden file, or rewrites it with -update.
func golden(t *testing.T, path string, out []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path) //nolint:gosec // The tests' own files.
	if err != nil {
		t.Fatalf("cannot read golden file (run with -update to write it): %v", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("the render differs from %s (run with -update to rewrite it):\n%s", path, diff(string(want), string(out)))
	}
}

// diff names the first line that differs, with some context.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		if i < len(w) && i < len(g) && w[i] == g[i] {
			continue
		}
		from := max(0, i-3)
		return fmt.Sprintf("first difference at line %d\nwant:\n%s\ngot:\n%s", i+1,
			strings.Join(w[from:min(len(w), i+4)], "\n"), strings.Join(g[from:min(len(g), i+4)], "\n"))
	}
	return ""
}

// checkFinalizers checks that every edge's finalizer is on its target, and
// that each composed resource declares exactly the finalizers of the edges to
// it: never the Object's own finalizer, never one for an Object that doesn't
// reference it.
func checkFinalizers(t *testing.T, composed map[string]doc, edges []edge) {
	t.Helper()
	want := map[string][]string{}
	for _, e := range edges {
		if !slices.Contains(want[e.target], e.finalizer) {
			want[e.target] = append(want[e.target], e.finalizer)
		}
	}
	for _, name := range sortedKeys(composed) {
		got := slices.Sorted(slices.Values(finalizers(composed[name])))
		w := slices.Sorted(slices.Values(want[name]))
		if !slices.Equal(got, w) {
			t.Errorf("%s declares finalizers %q, want %q", name, got, w)
		}
		if slices.Contains(got, objectFinalizer) {
			t.Errorf("%s declares the Object's own finalizer %s", name, objectFinalizer)
		}
	}
}

// checkChanges checks that the full pipeline renders every composed resource
// the pipeline without function-dependencies renders, but those the plan holds
// back, and the Usages the plan adds; and that it changes nothing in them but
// metadata.finalizers and the dependsOn references the plan appends to
// spec.references.
func checkChanges(t *testing.T, baseline, rendered map[string]doc, p plan) {
	t.Helper()
	var kept, added []string
	for _, name := range sortedKeys(rendered) {
		if _, ok := baseline[name]; ok {
			kept = append(kept, name)
		} else {
			added = append(added, name)
		}
	}
	want := slices.DeleteFunc(sortedKeys(baseline), func(name string) bool { _, held := p.heldBack[name]; return held })
	if !slices.Equal(kept, want) {
		t.Errorf("composed resources %q of those patch-and-transform renders, want %q: all but the held-back %q", kept, want, slices.Sorted(maps.Keys(p.heldBack)))
	}
	checkUsages(t, rendered, added, p.usages)

	for name, b := range baseline {
		r, ok := rendered[name]
		if !ok {
			continue
		}
		r = harness.DeepCopy(t, r)
		// Keep only the finalizers earlier steps declared, in their order.
		earlier := slices.DeleteFunc(finalizers(r), func(f string) bool { return !slices.Contains(finalizers(b), f) })
		if md, ok := r["metadata"].(doc); ok {
			delete(md, "finalizers")
			if len(earlier) > 0 {
				md["finalizers"] = toAny(earlier)
			}
		}
		// The labels the plan adds, with their values.
		for key, value := range p.oracle.Labels[name] {
			if got := harness.String(r, "metadata", "labels", key); got != value {
				t.Errorf("%s: label %s is %q, want %q", name, key, got, value)
			}
			if labels, ok := harness.Lookup(r, "metadata", "labels").(doc); ok {
				delete(labels, key)
				if len(labels) == 0 && harness.Lookup(b, "metadata", "labels") == nil {
					delete(r["metadata"].(doc), "labels")
				}
			}
		}
		// The references the plan appends come last, in its order.
		if refs := p.references[name]; len(refs) > 0 {
			got := harness.List(r, "spec", "references")
			before := len(got) - len(refs)
			if before < 0 || !reflect.DeepEqual(got[before:], refs) {
				t.Errorf("%s: spec.references %v, want it to end with %v", name, got, refs)
				continue
			}
			spec, _ := r["spec"].(doc)
			spec["references"] = got[:before]
			if before == 0 {
				delete(spec, "references")
			}
		}
		if !reflect.DeepEqual(r, b) {
			t.Errorf("%s changed beyond metadata.finalizers and the planned references:\nwithout function-dependencies: %v\nwith: %v", name, b, r)
		}
	}
}

// checkUsages checks that the composed resources the function adds are
// exactly the Usages of the plan, each with a name Kubernetes accepts. A Usage
// the function already added on an earlier reconcile must keep its name.
func checkUsages(t *testing.T, rendered map[string]doc, added []string, want []doc) {
	t.Helper()
	if len(added) != len(want) {
		t.Errorf("the function adds composed resources %q, want %d Usages: %v", added, len(want), want)
	}
	matched := make([]bool, len(want))
	for _, name := range added {
		u := rendered[name]
		got := doc{"apiVersion": u["apiVersion"], "kind": u["kind"], "spec": u["spec"], "metadata": doc{}}
		if ns := harness.String(u, "metadata", "namespace"); ns != "" {
			got["metadata"] = doc{"namespace": ns}
		}
		i := slices.IndexFunc(want, func(w doc) bool { return reflect.DeepEqual(w, got) })
		if i < 0 || matched[i] {
			t.Errorf("the function adds composed resource %s, which is none of the planned Usages:\n%v\nwant one of %v", name, got, want)
			continue
		}
		matched[i] = true
		if n := harness.String(u, "metadata", "name"); len(n) > maxUsageName || !dnsLabel.MatchString(n) {
			t.Errorf("Usage %s is named %q: want a DNS label of at most %d characters", name, n, maxUsageName)
		}
	}
}

// checkUsagesReady checks that the composed resources the function adds are
// ready, as the function says: neither the XR's Ready condition nor Crossplane
// core's results (which the current CLI prints, one for every composed
// resource that isn't ready) name one as unready.
func checkUsagesReady(t *testing.T, out output, baseline, rendered map[string]doc) {
	t.Helper()
	ready := condition(xrOf(t, out), "Ready")
	for _, name := range sortedKeys(rendered) {
		if _, ok := baseline[name]; ok {
			continue
		}
		if msg, _ := ready["message"].(string); strings.Contains(msg, name) {
			t.Errorf("the XR's Ready condition names the Usage %s: %q", name, msg)
		}
		for _, r := range results(out) {
			if r.message == fmt.Sprintf("Composed resource %q is not yet ready", name) {
				t.Errorf("Crossplane reports the Usage %s as not ready", name)
			}
		}
	}
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// checkResults checks the function step's results: exactly the plan's, in
// order. crank prints no reasons, so their reasons are compared only where
// the CLI prints them.
func checkResults(t *testing.T, out output, step string, want []result) {
	t.Helper()
	got := stepResults(out, step)
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		w := want[i]
		if got[i].reason == "" {
			w.reason = ""
		}
		same = got[i] == w
	}
	if !same {
		t.Errorf("step %s reported:\n%s\nwant:\n%s", step, resultLines(got), resultLines(want))
	}
}

// stepResults are the results of one pipeline step, in order.
func stepResults(out output, step string) []result {
	var rs []result
	for _, r := range results(out) {
		if r.step == step {
			rs = append(rs, r)
		}
	}
	return rs
}

func resultLines(rs []result) string {
	lines := make([]string, len(rs))
	for i, r := range rs {
		lines[i] = fmt.Sprintf("  %s %s: %s", r.severity, r.reason, r.message)
	}
	return strings.Join(lines, "\n")
}

// checkCondition checks the XR's DeletionOrdered condition against the
// plan's and returns it.
func checkCondition(t *testing.T, out output, p plan) doc {
	t.Helper()
	c := condition(xrOf(t, out), conditionType)
	if c == nil {
		t.Errorf("the XR has no %s condition", conditionType)
		return nil
	}
	status, reason, message := p.condition()
	if c["status"] != status || c["reason"] != reason || c["message"] != message {
		t.Errorf("%s condition %v, want status %s, reason %s and message %q", conditionType, c, status, reason, message)
	}
	return c
}

// applyFinalizers returns the observed resources with the rendered finalizers
// added, as server-side apply would leave them, and the rendered Usages
// created.
func applyFinalizers(t *testing.T, observed []doc, rendered map[string]doc) []doc {
	t.Helper()
	applied := make([]doc, 0, len(observed))
	for _, o := range observed {
		o = harness.DeepCopy(t, o)
		md, _ := o["metadata"].(doc)
		have := finalizers(o)
		for _, f := range finalizers(rendered[harness.String(o, "metadata", "annotations", annotationResource)]) {
			if !slices.Contains(have, f) {
				have = append(have, f)
			}
		}
		md["finalizers"] = toAny(have)
		applied = append(applied, o)
	}
	// And the Usages the function added exist, as Crossplane creates them.
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		u := rendered[name]
		if harness.String(u, "metadata", "labels", oracle.UsageLabel) != "true" || slices.ContainsFunc(observed, func(o doc) bool {
			return harness.String(o, "metadata", "annotations", annotationResource) == name
		}) {
			continue
		}
		u = harness.DeepCopy(t, u)
		u["metadata"].(doc)["uid"] = "uid-" + name
		applied = append(applied, u)
	}
	return applied
}

// withoutStep returns the composition without the named pipeline step.
func withoutStep(t *testing.T, composition doc, step string) doc {
	t.Helper()
	c := harness.DeepCopy(t, composition)
	spec, _ := c["spec"].(doc)
	var pipeline []any
	for _, s := range harness.List(c, "spec", "pipeline") {
		if sd, _ := s.(doc); harness.String(sd, "step") != step {
			pipeline = append(pipeline, s)
		}
	}
	spec["pipeline"] = pipeline
	return c
}

// loadExamples reads every folder under example/ that has a composition.
// A folder with a v1 subfolder is an example of both Crossplane generations:
// the folder's XR and XRD are Crossplane v2's, the subfolder's xr.yaml,
// xrd.yaml and claim.yaml Crossplane v1's, and both render the folder's
// composition, functions and observed resources, Crossplane v1 with the
// fields of the subfolder's input.yaml (usageAPI, say) set in
// function-dependencies' input.
func loadExamples(t *testing.T) []example {
	t.Helper()
	root := filepath.Join(harness.Root(t), "example")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var examples []example
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "composition.yaml")); err != nil {
			continue
		}
		composition := readDocs(t, filepath.Join(dir, "composition.yaml"))[0]
		examples = append(examples, readExample(t, e.Name(), dir, dir, composition, e.Name() == v1Example))
		v1 := filepath.Join(dir, v1Example)
		if _, err := os.Stat(filepath.Join(v1, "xr.yaml")); err != nil || e.Name() == v1Example {
			continue
		}
		if _, err := os.Stat(filepath.Join(v1, "claim.yaml")); err != nil {
			t.Fatalf("example %s: its Crossplane v1 generation has no claim.yaml: %v", e.Name(), err)
		}
		ex := readExample(t, e.Name(), dir, v1, setInput(t, e.Name(), composition, readDocs(t, filepath.Join(v1, "input.yaml"))[0]), true)
		ex.alone = false
		examples = append(examples, ex)
	}
	if len(examples) < 3 {
		t.Fatalf("found %d examples under %s, want the cluster, the namespaced and the explicit one", len(examples), root)
	}
	return examples
}

// readExample reads one generation of an example: its composition, the
// XR and XRD in xrDir, and the rest in dir.
func readExample(t *testing.T, name, dir, xrDir string, composition doc, v1 bool) example {
	t.Helper()
	ex := example{name: name, dir: dir, v1: v1, xrDir: xrDir, composition: composition, alone: true, observed: readDocs(t, filepath.Join(dir, "observed.yaml"))}
	ex.xr = readDocs(t, filepath.Join(xrDir, "xr.yaml"))[0]
	if _, err := os.Stat(filepath.Join(dir, "required.yaml")); err == nil {
		ex.required = readDocs(t, filepath.Join(dir, "required.yaml"))
	}
	ex.xrNamespace = harness.String(ex.xr, "metadata", "namespace")
	for _, s := range harness.List(composition, "spec", "pipeline") {
		if sd, _ := s.(doc); harness.String(sd, "functionRef", "name") == fnDependencies {
			ex.step = harness.String(sd, "step")
			ex.input = readInput(t, ex.name, sd["input"])
		}
	}
	if ex.step == "" {
		t.Fatalf("example %s: no pipeline step runs %s", ex.name, fnDependencies)
	}
	for _, o := range ex.observed {
		if harness.String(o, "metadata", "annotations", annotationResource) == "" {
			t.Fatalf("example %s: observed %s %s has no %s annotation", ex.name, harness.String(o, "kind"), harness.String(o, "metadata", "name"), annotationResource)
		}
	}
	return ex
}

// setInput returns the composition with the fields set in the input of its
// function-dependencies step, each to its value in fields.
func setInput(t *testing.T, example string, composition, fields doc) doc {
	t.Helper()
	c := harness.DeepCopy(t, composition)
	for _, s := range harness.List(c, "spec", "pipeline") {
		if sd, _ := s.(doc); harness.String(sd, "functionRef", "name") == fnDependencies {
			in, ok := sd["input"].(doc)
			if !ok {
				t.Fatalf("example %s: step %s has no input to set %v in", example, harness.String(sd, "step"), fields)
			}
			maps.Copy(in, fields)
			return c
		}
	}
	t.Fatalf("example %s: no pipeline step runs %s", example, fnDependencies)
	return nil
}

// functionsFile writes the example's functions with their Development
// targets pointed at the served functions.
func functionsFile(t *testing.T, ex example, addresses map[string]string) string {
	t.Helper()
	fns := readDocs(t, filepath.Join(ex.dir, "functions.yaml"))
	for _, fn := range fns {
		name := harness.String(fn, "metadata", "name")
		address, ok := addresses[name]
		if !ok {
			t.Fatalf("example %s: functions.yaml names function %q, which the test doesn't serve", ex.name, name)
		}
		annotations, _ := harness.Lookup(fn, "metadata", "annotations").(doc)
		if annotations[annotationRuntime] != "Development" {
			t.Fatalf("example %s: function %s has no %s: Development annotation", ex.name, name, annotationRuntime)
		}
		annotations[annotationTarget] = address
	}
	return writeDocs(t, "functions", fns)
}

// writeDocs writes documents to a file named after name in a temporary
// folder of the test, and returns the file's path.
func writeDocs(t *testing.T, name string, docs []doc) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	harness.WriteDocuments(t, path, docs)
	return path
}

func readDocs(t *testing.T, path string) []doc {
	t.Helper()
	return decode(t, harness.ReadFile(t, path))
}

// decode returns the non-empty documents of a YAML stream with every number
// a float64, as JSON decodes them (harness.Documents decodes integers as
// int64): the tests compare documents with reflect.DeepEqual against copies
// that harness.DeepCopy made through JSON, so both must hold the same types.
func decode(t *testing.T, data []byte) []doc {
	t.Helper()
	docs := harness.Documents(t, data)
	for i, d := range docs {
		docs[i] = harness.DeepCopy(t, d)
	}
	return docs
}

// composedByName returns the rendered composed resources by composition
// resource name.
func composedByName(t *testing.T, out output) map[string]doc {
	t.Helper()
	composed := map[string]doc{}
	for _, d := range out.docs[1:] {
		if harness.String(d, "apiVersion") == resultAPIVersion {
			continue
		}
		name := harness.String(d, "metadata", "annotations", annotationResource)
		if name == "" {
			t.Fatalf("rendered %s %s has no %s annotation", harness.String(d, "kind"), harness.String(d, "metadata", "name"), annotationResource)
		}
		if _, dup := composed[name]; dup {
			t.Fatalf("composed resource %s rendered twice", name)
		}
		composed[name] = d
	}
	return composed
}

func observedByName(observed []doc) map[string]doc {
	byName := map[string]doc{}
	for _, o := range observed {
		byName[harness.String(o, "metadata", "annotations", annotationResource)] = o
	}
	return byName
}

// xrOf returns the rendered XR: both CLIs print it first.
func xrOf(t *testing.T, out output) doc {
	t.Helper()
	if len(out.docs) == 0 || harness.String(out.docs[0], "metadata", "annotations", annotationResource) != "" {
		t.Fatal("the render doesn't start with the XR")
	}
	return out.docs[0]
}

// A result is a function's result as either CLI prints it.
type result struct {
	step, severity, reason, message string
}

// results reads the Result documents of both CLIs (harness.Results).
func results(out output) []result {
	var rs []result
	for _, r := range harness.Results(out.docs) {
		rs = append(rs, result{step: r.Step, severity: r.Severity, reason: r.Reason, message: r.Message})
	}
	return rs
}

func condition(d doc, conditionType string) doc {
	for _, c := range harness.List(d, "status", "conditions") {
		if cd, _ := c.(doc); harness.String(cd, "type") == conditionType {
			return cd
		}
	}
	return nil
}

func finalizers(d doc) []string {
	var fs []string
	for _, f := range harness.List(d, "metadata", "finalizers") {
		if s, ok := f.(string); ok {
			fs = append(fs, s)
		}
	}
	return fs
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sortedKeys(m map[string]doc) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
