//go:build e2e

// Package e2e renders every example under example/ with the real Crossplane
// CLIs and the real pipeline: patch-and-transform renders the Objects,
// function-dependencies declares the reference finalizers, auto-ready sets
// readiness. Every function runs as its own process, served on loopback, as
// `crossplane render` runs Development-runtime functions.
//
// The tests check what matters independently of the function's code, from the
// examples' observed resources and the rendered output: every live
// dependent's finalizer is on every composed resource it references, nothing
// is dropped or changed besides those finalizers, the XR carries the
// DeletionOrdered condition and the step reports its Summary. Golden files in
// testdata/ pin the whole output; run with -update to rewrite them.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane-contrib/function-dependencies/test/harness"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the renders' output")

// Function names, as the examples' functions.yaml and compositions name them.
const (
	fnDependencies      = "function-dependencies"
	fnPatchAndTransform = "function-patch-and-transform"
	fnAutoReady         = "function-auto-ready"
)

// What crossplane render reads and prints.
const (
	annotationRuntime  = "render.crossplane.io/runtime"
	annotationTarget   = "render.crossplane.io/runtime-development-target"
	annotationResource = "crossplane.io/composition-resource-name"
	resultAPIVersion   = "render.crossplane.io/v1beta1"
	severityNormal     = "Normal"
	renderTimeout      = 2 * time.Minute
)

// What provider-kubernetes and the function define.
const (
	clusterObjectGroup    = "kubernetes.crossplane.io"
	namespacedObjectGroup = "kubernetes.m.crossplane.io"
	objectKind            = "Object"
	defaultObjectVersion  = "v1alpha1" // With the Object's group, the CRD's default reference apiVersion.
	referenceFinalizer    = "kubernetes.crossplane.io/referred-by-object-"
	objectFinalizer       = "finalizer.managedresource.crossplane.io"
	conditionType         = "DeletionOrdered"
)

// A cli is one generation of the Crossplane CLI.
type cli struct {
	name  string
	tools []string
	// args returns the command line that renders, after the binary.
	args func(tools map[string]string, render []string) []string
}

var clis = []cli{
	{
		// crossplane v2.2.0's CLI, the last whose render runs the pipeline
		// in process.
		name:  "crank",
		tools: []string{"crank"},
		args: func(_ map[string]string, render []string) []string {
			return append([]string{"render"}, render...)
		},
	},
	{
		// The current CLI: its render hands the request to Crossplane core's
		// own XR reconciler, run from the core binary as `crossplane internal
		// render`.
		name:  "crossplane",
		tools: []string{"crossplane", "crossplane-core"},
		args: func(tools map[string]string, render []string) []string {
			return append(append([]string{"composition", "render"}, render...), "--crossplane-binary="+tools["crossplane-core"])
		},
	},
}

// An example is one folder under example/.
type example struct {
	name, dir string
	observed  []doc
	// step is the name of the pipeline step that runs function-dependencies.
	step string
}

type doc = map[string]any

// TestRender renders every example with both CLI generations, with and
// without function-dependencies, and once more as if Crossplane had applied
// the first render.
func TestRender(t *testing.T) {
	examples := loadExamples(t)

	// The functions are stateless: one process each serves every render.
	addresses := map[string]string{
		fnDependencies:      harness.Serve(t, harness.Function(t), "--debug"),
		fnPatchAndTransform: harness.Serve(t, harness.Tool(t, fnPatchAndTransform)),
		fnAutoReady:         harness.Serve(t, harness.Tool(t, fnAutoReady)),
	}

	for _, c := range clis {
		tools := map[string]string{}
		for _, name := range c.tools {
			tools[name] = harness.Tool(t, name)
		}
		for _, ex := range examples {
			t.Run(c.name+"/"+ex.name, func(t *testing.T) {
				r := &renderer{cli: c, tools: tools, example: ex, functions: functionsFile(t, ex, addresses)}
				testExample(t, r)
			})
		}
	}
}

func testExample(t *testing.T, r *renderer) {
	ex := r.example
	composition := readDocs(t, filepath.Join(ex.dir, "composition.yaml"))[0]

	// Without function-dependencies: what patch-and-transform and auto-ready
	// make of the example. It shows the finalizers are missing, so that the
	// full pipeline proves the function is what adds them.
	without := r.render(t, "without function-dependencies", withoutStep(t, composition, ex.step), filepath.Join(ex.dir, "observed.yaml"))
	baseline := composedByName(t, without)
	edges := edgesOf(t, baseline, ex.observed)
	if len(edges) == 0 {
		t.Fatal("the example has no references between live composed Objects: the test would prove nothing")
	}
	for _, e := range edges {
		if slices.Contains(finalizers(baseline[e.target]), e.finalizer) {
			t.Errorf("without function-dependencies, %s already carries %s's finalizer %s", e.target, e.dependent, e.finalizer)
		}
	}
	missing := missingEdges(t, ex.observed, edges)
	if len(missing) == 0 {
		t.Error("the example's observed resources lack no reference finalizer: they don't reproduce provider-kubernetes #371")
	}
	if c := condition(xrOf(t, without), conditionType); c != nil {
		t.Errorf("without function-dependencies, the XR has condition %s: %v", conditionType, c)
	}
	for _, res := range results(without) {
		if res.step == ex.step {
			t.Errorf("without function-dependencies, step %q reported %v", ex.step, res)
		}
	}

	// The full pipeline, as the example's composition has it.
	out := r.render(t, "the pipeline", composition, filepath.Join(ex.dir, "observed.yaml"))
	// A golden file can only pin a deterministic output: a second render
	// must print the same bytes.
	if twice := r.render(t, "the pipeline again", composition, filepath.Join(ex.dir, "observed.yaml")); !bytes.Equal(twice.raw, out.raw) {
		t.Errorf("two renders of the same input differ:\n%s", diff(string(out.raw), string(twice.raw)))
	}
	golden(t, filepath.Join("testdata", ex.name+"."+r.cli.name+".yaml"), out.raw)
	rendered := composedByName(t, out)
	checkFinalizers(t, rendered, edges)
	checkOnlyFinalizersAdded(t, baseline, rendered)
	for name := range observedByName(ex.observed) {
		if _, ok := rendered[name]; !ok {
			t.Errorf("observed composed resource %s is missing from the render", name)
		}
	}
	checkNoWarnings(t, out, ex.step)
	checkSummary(t, out, ex.step, len(rendered), len(edges))
	c := checkCondition(t, out, "False", "FinalizersPending")
	for _, e := range missing {
		if want := e.dependent + " → " + e.target; len(missing) <= 10 && !strings.Contains(fmt.Sprint(c["message"]), want) {
			t.Errorf("%s condition message %q doesn't name the edge %s, whose finalizer the observed target lacks", conditionType, c["message"], want)
		}
	}

	// As if Crossplane had applied the render: the observed resources now
	// carry every declared finalizer, and the function must declare the same
	// set again, level-triggered, and report the references as protected.
	applied := r.render(t, "the pipeline once its finalizers are applied", composition, applyFinalizers(t, ex.observed, rendered))
	again := composedByName(t, applied)
	checkFinalizers(t, again, edges)
	for name, d := range rendered {
		if got, want := finalizers(again[name]), finalizers(d); !slices.Equal(got, want) {
			t.Errorf("once applied, %s declares finalizers %q, not %q as before", name, got, want)
		}
	}
	checkNoWarnings(t, applied, ex.step)
	checkSummary(t, applied, ex.step, len(again), len(edges))
	checkCondition(t, applied, "True", "Protected")
}

// A renderer renders one example with one CLI.
type renderer struct {
	cli       cli
	tools     map[string]string
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
	args := r.cli.args(r.tools, []string{
		filepath.Join(r.example.dir, "xr.yaml"), compositionFile, r.functions,
		"--observed-resources=" + observed,
		"--xrd=" + filepath.Join(r.example.dir, "xrd.yaml"),
		"--include-function-results",
	})
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.tools[r.cli.tools[0]], args...)
	// A configuration file of its own keeps the current CLI from reading or
	// writing the user's; crank ignores it.
	cmd.Env = append(os.Environ(), "CROSSPLANE_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", r.cli.name, strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("%s rendered %s, %s, in %s", r.cli.name, r.example.name, what, time.Since(start).Round(time.Millisecond))
	raw := normalise(stdout.Bytes())
	return output{raw: raw, docs: decode(t, raw)}
}

// normalise makes a render's output comparable between runs and machines.
// Both CLIs already replace every condition's lastTransitionTime with a fixed
// time, and every name in the examples is set explicitly, so there is nothing
// left that varies: normalise only makes sure the output ends in one newline.
func normalise(out []byte) []byte {
	return append(bytes.TrimRight(out, "\n"), '\n')
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

// An edge is a reference from a live dependent Object to a composed resource,
// both named by composition resource name, and the finalizer provider-
// kubernetes puts on the target for the dependent.
type edge struct {
	dependent, target, finalizer string
}

// edgesOf resolves the references of every composed Object to composed
// resources, as provider-kubernetes resolves them: by API group (any
// version), kind, namespace and name, from patchesFrom when it is set, else
// dependsOn, with the CRD's default apiVersion and kind and no default
// namespace. Only live dependents count: observed, with a UID, not being
// deleted. The examples reference nothing outside their composition, so an
// unresolved reference fails the test.
func edgesOf(t *testing.T, composed map[string]doc, observed []doc) []edge {
	t.Helper()
	type key struct{ group, kind, namespace, name string }
	byKey := map[key]string{}
	for name, d := range composed {
		byKey[key{groupOf(d), harness.String(d, "kind"), harness.String(d, "metadata", "namespace"), harness.String(d, "metadata", "name")}] = name
	}
	live := observedByName(observed)
	var edges []edge
	for _, name := range sortedKeys(composed) {
		d := composed[name]
		group := groupOf(d)
		if harness.String(d, "kind") != objectKind || (group != clusterObjectGroup && group != namespacedObjectGroup) {
			continue
		}
		o, ok := live[name]
		if !ok || harness.String(o, "metadata", "uid") == "" || harness.String(o, "metadata", "deletionTimestamp") != "" {
			continue
		}
		for i, ref := range harness.List(d, "spec", "references") {
			r, _ := ref.(doc)
			target, _ := r["patchesFrom"].(doc)
			if target == nil {
				target, _ = r["dependsOn"].(doc)
			}
			apiVersion := harness.String(target, "apiVersion")
			if apiVersion == "" {
				apiVersion = group + "/" + defaultObjectVersion
			}
			kind := harness.String(target, "kind")
			if kind == "" {
				kind = objectKind
			}
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil {
				t.Fatalf("%s: spec.references[%d]: %v", name, i, err)
			}
			k := key{gv.Group, kind, harness.String(target, "namespace"), harness.String(target, "name")}
			to, ok := byKey[k]
			if !ok {
				t.Fatalf("%s: spec.references[%d] %+v is no composed resource", name, i, k)
			}
			edges = append(edges, edge{dependent: name, target: to, finalizer: referenceFinalizer + harness.String(o, "metadata", "uid")})
		}
	}
	return edges
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

// checkOnlyFinalizersAdded checks that the full pipeline renders every
// composed resource the pipeline without function-dependencies renders, and
// changes nothing in them but metadata.finalizers.
func checkOnlyFinalizersAdded(t *testing.T, baseline, rendered map[string]doc) {
	t.Helper()
	if got, want := sortedKeys(rendered), sortedKeys(baseline); !slices.Equal(got, want) {
		t.Errorf("composed resources %q, want those patch-and-transform renders: %q", got, want)
	}
	for name, b := range baseline {
		r, ok := rendered[name]
		if !ok {
			continue
		}
		// Keep only the finalizers earlier steps declared, in their order.
		r = harness.DeepCopy(t, r)
		kept := slices.DeleteFunc(finalizers(r), func(f string) bool { return !slices.Contains(finalizers(b), f) })
		if md, ok := r["metadata"].(doc); ok {
			delete(md, "finalizers")
			if len(kept) > 0 {
				md["finalizers"] = toAny(kept)
			}
		}
		if !reflect.DeepEqual(r, b) {
			t.Errorf("%s changed beyond metadata.finalizers:\nwithout function-dependencies: %v\nwith: %v", name, b, r)
		}
	}
}

func checkNoWarnings(t *testing.T, out output, step string) {
	t.Helper()
	for _, r := range results(out) {
		if r.step == step && r.severity != severityNormal {
			t.Errorf("step %s reported %+v", step, r)
		}
	}
}

// checkSummary checks the step's Summary result: every reference between
// composed resources counted, every finalizer declared, none pending.
func checkSummary(t *testing.T, out output, step string, resources, edges int) {
	t.Helper()
	want := fmt.Sprintf("%d composed resources, %d references between them and 0 to external objects; %d reference finalizers declared, 0 pending until their Object exists",
		resources, edges, edges)
	var summaries []result
	for _, r := range results(out) {
		// crank's results have no reason: the Summary is the step's only
		// Normal result.
		if r.step == step && r.severity == severityNormal && (r.reason == "" || r.reason == "Summary") {
			summaries = append(summaries, r)
		}
	}
	if len(summaries) != 1 {
		t.Fatalf("want one Summary result from step %s, got %+v among %+v", step, summaries, results(out))
	}
	if summaries[0].message != want {
		t.Errorf("Summary result %q, want %q", summaries[0].message, want)
	}
}

// checkCondition checks the XR's DeletionOrdered condition and returns it.
func checkCondition(t *testing.T, out output, status, reason string) doc {
	t.Helper()
	c := condition(xrOf(t, out), conditionType)
	if c == nil {
		t.Errorf("the XR has no %s condition", conditionType)
		return nil
	}
	if c["status"] != status || c["reason"] != reason {
		t.Errorf("%s condition %v, want status %s and reason %s", conditionType, c, status, reason)
	}
	return c
}

// missingEdges returns the edges whose finalizer the observed target lacks.
func missingEdges(t *testing.T, observed []doc, edges []edge) []edge {
	t.Helper()
	var missing []edge
	for _, e := range edges {
		if !slices.Contains(finalizers(observed[indexOf(t, observed, e.target)]), e.finalizer) {
			missing = append(missing, e)
		}
	}
	return missing
}

// applyFinalizers returns a file of the observed resources with the rendered
// finalizers added, as server-side apply would leave them.
func applyFinalizers(t *testing.T, observed []doc, rendered map[string]doc) string {
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
	return writeDocs(t, "observed", applied)
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
		ex := example{name: e.Name(), dir: dir, observed: readDocs(t, filepath.Join(dir, "observed.yaml"))}
		for _, s := range harness.List(readDocs(t, filepath.Join(dir, "composition.yaml"))[0], "spec", "pipeline") {
			if sd, _ := s.(doc); harness.String(sd, "functionRef", "name") == fnDependencies {
				ex.step = harness.String(sd, "step")
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
		examples = append(examples, ex)
	}
	if len(examples) < 2 {
		t.Fatalf("found %d examples under %s, want the cluster and the namespaced one", len(examples), root)
	}
	return examples
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

func indexOf(t *testing.T, observed []doc, name string) int {
	t.Helper()
	for i, o := range observed {
		if harness.String(o, "metadata", "annotations", annotationResource) == name {
			return i
		}
	}
	t.Fatalf("no observed composed resource %s", name)
	return -1
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

// stepPrefix starts the current CLI's result messages, which name the step
// this way instead of in a field of their own.
var stepPrefix = regexp.MustCompile(`^Pipeline step "([^"]*)": `)

// results reads the Result documents of both CLIs: crank prints step and
// severity (SEVERITY_NORMAL) fields and no reason; the current CLI prints the
// reason and severity (Normal) and names the step in the message.
func results(out output) []result {
	var rs []result
	for _, d := range out.docs {
		if harness.String(d, "apiVersion") != resultAPIVersion || harness.String(d, "kind") != "Result" {
			continue
		}
		r := result{step: harness.String(d, "step"), severity: strings.TrimPrefix(harness.String(d, "severity"), "SEVERITY_"), reason: harness.String(d, "reason"), message: harness.String(d, "message")}
		r.severity = strings.ToUpper(r.severity[:min(1, len(r.severity))]) + strings.ToLower(r.severity[min(1, len(r.severity)):])
		if m := stepPrefix.FindStringSubmatch(r.message); m != nil && r.step == "" {
			r.step, r.message = m[1], strings.TrimPrefix(r.message, m[0])
		}
		rs = append(rs, r)
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

func groupOf(d doc) string {
	gv, _ := schema.ParseGroupVersion(harness.String(d, "apiVersion"))
	return gv.Group
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
