//go:build e2e

// Package mistakes renders compositions as a platform engineer writes them
// after reading only the README, each with one mistake people make, through
// the real pipeline: the current Crossplane CLI, function-patch-and-transform,
// function-dependencies built from this tree, function-auto-ready.
//
// Each case is a folder under testdata/: composition.yaml and xr.yaml, with
// the mistake, and mistake.yaml, which says what the mistake is and how its
// author fixes it (replacements of text in composition.yaml). A case is
// rendered twice, each time over as many reconciles as it needs, the first
// on an empty cluster, every later one observing what the one before it
// applied, as the providers leave it (observe_test.go): with the mistake, the
// step must report exactly the Warning and Fatal results the case expects,
// each naming what it is about, and desired state must be as the case says;
// with the fix, the step must report no Warning and no Fatal at all.
package mistakes

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

type doc = map[string]any

// The step that runs function-dependencies, in every case's composition.
const step = "order-deletion"

// Severities of the results the cases expect.
const (
	warning = "Warning"
	fatal   = "Fatal"
)

// A finding is a Warning or Fatal result of the step: its severity, its
// reason, and what its message must name (the resource, the field, the
// value...). A Fatal result stops the pipeline, and the CLI prints its
// message only: its reason is "".
type finding struct {
	severity, reason string
	names            []string
}

// A usage is a Usage the step composes, of one composed resource by
// another, by composition resource name.
type usage struct{ of, by string }

// An outcome is what the last reconcile of one rendering of a case must
// show.
type outcome struct {
	// findings are exactly the step's Warning and Fatal results, in any
	// order: none when empty.
	findings []finding
	// references counts the entries of spec.references each named composed
	// resource has in desired state: what the composition wrote, plus any
	// dependsOn the function writes.
	references map[string]int
	// usages are exactly the Usages the step composes.
	usages []usage
	// present and absent are composed resources that desired state must
	// have, or lack (a resource held back).
	present, absent []string
}

// A mistake is what a case's mistake.yaml says.
type mistake struct {
	// Mistake says what the mistake is, and what it does on a cluster.
	Mistake string `json:"mistake"`
	// Fix undoes it: each old text occurs once in composition.yaml and is
	// replaced by new. Both may span lines: the lines after the first are
	// written without the indentation of the line old starts on, which the
	// fix adds, so that they read as YAML block scalars.
	Fix []struct {
		Old string `json:"old"`
		New string `json:"new"`
	} `json:"fix"`
}

var cases = []struct {
	// name says what the case proves.
	name string
	// dir is the case's folder under testdata.
	dir string
	// reconciles is how many times the case is reconciled: 1 unless it is
	// about what a later reconcile does.
	reconciles int
	// mistake is the outcome with the mistake; fixed, with the fix, which
	// besides has no Warning and no Fatal at all.
	mistake, fixed outcome
}{
	// References an Object makes that can't be what its author meant.
	{
		name: "a typo in dependsOn.name is named, with the composed Object meant, and a reference outside stays quiet",
		dir:  "dependson-name-typo",
		mistake: outcome{findings: []finding{{warning, "SuspectReference",
			[]string{"shop-api", "spec.references[1].dependsOn", "shop-confg", "shop-config"}}}},
	},
	{
		name: "a typo in patchesFrom's name is named, with the composed Object meant",
		dir:  "patchesfrom-name-typo",
		mistake: outcome{findings: []finding{{warning, "SuspectReference",
			[]string{"app-secret", "spec.references[0].patchesFrom", "shop-db-credentails", "shop-db-credentials"}}}}, //nolint:misspell // The typo is the mistake the case makes.
	},
	{
		name: "a namespaced Object's reference to a namespaced Object without namespace is named",
		dir:  "namespace-left-out",
		mistake: outcome{findings: []finding{{warning, "SuspectReference",
			[]string{"shop-api", "spec.references[0].dependsOn", "shop-config", "namespace"}}}},
	},
	{
		name: "a reference with the wrong API group to a composed Object's name is named",
		dir:  "reference-group-wrong",
		mistake: outcome{findings: []finding{{warning, "SuspectReference",
			[]string{"shop-api", "spec.references[0].dependsOn", "kubernetes.crossplane.io", "shop-config"}}}},
	},
	{
		name: "a reference to the kind an Object manages instead of the Object is named",
		dir:  "reference-kind-wrong",
		mistake: outcome{findings: []finding{{warning, "SuspectReference",
			[]string{"shop-api", "spec.references[0].dependsOn", "ConfigMap", "shop-config"}}}},
	},

	// Cycles.
	{
		name: "a backwards dependency closing a cycle under onCycle Warning is warned about with its path, and written nowhere",
		dir:  "cycle-warning-backwards-dependency",
		mistake: outcome{
			findings:   []finding{{warning, "Cycle", []string{"config → deploy-api", "deploy-api → config"}}},
			references: map[string]int{"config": 0, "deploy-api": 1},
		},
		fixed: outcome{references: map[string]int{"config": 0, "deploy-api": 1}},
	},
	{
		name:    "a cycle of references under the default onCycle fails the step with its path",
		dir:     "cycle-fatal",
		mistake: outcome{findings: []finding{{fatal, "", []string{"cycle", "config → service", "service → config"}}}},
	},

	// The input's dependencies.
	{
		name: "a dependencies pattern written as a glob matches nothing, is named, and writes no dependsOn",
		dir:  "dependency-glob",
		mistake: outcome{
			findings:   []finding{{warning, "UnmatchedDependency", []string{"dependencies[0].resource", `"deploy-*"`}}},
			references: map[string]int{"deploy-api": 0, "deploy-worker": 0},
		},
		fixed: outcome{references: map[string]int{"deploy-api": 1, "deploy-worker": 1}},
	},
	{
		name: "a typo in a dependencies resource name is named, and writes no dependsOn",
		dir:  "dependency-name-typo",
		mistake: outcome{
			findings:   []finding{{warning, "UnmatchedDependency", []string{"dependencies[0].dependsOn[0]", `"confg"`}}},
			references: map[string]int{"deploy-api": 0, "deploy-worker": 0},
		},
		fixed: outcome{references: map[string]int{"deploy-api": 1, "deploy-worker": 1}},
	},

	// Objects that depend on Helm Releases.
	{
		name: "an Object depending on a Release gets no dependsOn, and under the default protection a warning to set protection Usages, which a Usage then keeps",
		dir:  "object-to-release", reconciles: 2,
		mistake: outcome{
			findings:   []finding{{warning, "UnprotectedDependencies", []string{"cluster-issuer → cert-manager", "protection: Usages"}}},
			references: map[string]int{"cluster-issuer": 0},
		},
		fixed: outcome{references: map[string]int{"cluster-issuer": 0}, usages: []usage{{of: "cert-manager", by: "cluster-issuer"}}},
	},
	{
		name: "a namespaced Object depending on a namespaced Release gets no dependsOn, and under the default protection a warning to set protection Usages, which a Usage then keeps",
		dir:  "object-to-release-namespaced", reconciles: 2,
		mistake: outcome{
			findings:   []finding{{warning, "UnprotectedDependencies", []string{"db-migrate → postgres", "protection: Usages"}}},
			references: map[string]int{"db-migrate": 0},
		},
		fixed: outcome{references: map[string]int{"db-migrate": 0}, usages: []usage{{of: "postgres", by: "db-migrate"}}},
	},

	// Creation order.
	{
		name: "a Release waiting for its composed ProviderConfig is created once the ProviderConfig exists, without readinessChecks",
		dir:  "release-behind-providerconfig", reconciles: 3,
		mistake: outcome{present: []string{"cert-manager"}, usages: []usage{{of: "helm-provider", by: "cert-manager"}}},
		fixed:   outcome{present: []string{"cert-manager"}, usages: []usage{{of: "helm-provider", by: "cert-manager"}}},
	},
	{
		name: "a namespaced Release waiting for its composed namespaced ProviderConfig is created once the ProviderConfig exists, without readinessChecks",
		dir:  "release-behind-providerconfig-namespaced", reconciles: 3,
		mistake: outcome{present: []string{"postgres"}, usages: []usage{{of: "helm-provider", by: "postgres"}}},
		fixed:   outcome{present: []string{"postgres"}, usages: []usage{{of: "helm-provider", by: "postgres"}}},
	},
	{
		name: "a resource held back long behind an Object that can never be ready is warned about, naming what it waits for",
		dir:  "never-ready-dependency", reconciles: 2,
		mistake: outcome{
			findings: []finding{{warning, "WaitingTooLong", []string{"autoscaler", "deploy-api"}}},
			absent:   []string{"autoscaler"},
		},
		fixed: outcome{present: []string{"autoscaler"}, references: map[string]int{"autoscaler": 1}},
	},

	// The input itself: every mistake fails the step, naming the field.
	{
		name:    "the removed usages field fails the step, naming it",
		dir:     "usages-all",
		mistake: outcome{findings: []finding{{fatal, "", []string{`unknown field "usages"`}}}},
		fixed:   outcome{references: map[string]int{"deploy-api": 1}},
	},
	{
		name:    "a misspelt input field fails the step, naming it",
		dir:     "misspelt-field",
		mistake: outcome{findings: []finding{{fatal, "", []string{`unknown field "dependecies"`}}}},
		fixed:   outcome{references: map[string]int{"deploy-api": 1}},
	},
	{
		name:    "a value onCycle doesn't have fails the step, naming the field, the value and those it has",
		dir:     "oncycle-warn",
		mistake: outcome{findings: []finding{{fatal, "", []string{"onCycle", `"Warn"`, `"Fatal"`, `"Warning"`}}}},
		fixed:   outcome{references: map[string]int{"deploy-api": 1}},
	},
	{
		name: "a kind of inference in the singular fails the step, naming the item and the kinds",
		dir:  "infer-singular", reconciles: 2,
		mistake: outcome{findings: []finding{{fatal, "", []string{"infer[0]", `"ProviderConfig"`, `"ProviderConfigs"`}}}},
		fixed:   outcome{usages: []usage{{of: "helm-provider", by: "cert-manager"}}},
	},
	{
		name:    "a dependsOn that is no list fails the step, naming the field",
		dir:     "dependson-not-a-list",
		mistake: outcome{findings: []finding{{fatal, "", []string{"dependencies[0].dependsOn"}}}},
		fixed:   outcome{references: map[string]int{"deploy-api": 1}},
	},
}

func TestMistakes(t *testing.T) {
	if len(cases) < 15 {
		t.Fatalf("%d cases, want at least 15", len(cases))
	}
	r := newRenderer(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("testdata", c.dir)
			composition := harness.ReadFile(t, filepath.Join(dir, "composition.yaml"))
			fixed, what := fix(t, dir, composition)
			reconciles := max(c.reconciles, 1)
			t.Run("with the mistake", func(t *testing.T) {
				t.Logf("the mistake: %s", what)
				c.mistake.check(t, r.reconcile(t, dir, composition, reconciles))
			})
			t.Run("without it", func(t *testing.T) {
				if len(c.fixed.findings) > 0 {
					t.Fatal("the case expects a Warning or Fatal result without its mistake")
				}
				c.fixed.check(t, r.reconcile(t, dir, fixed, reconciles))
			})
		})
	}
}

// fix returns the composition with the case's mistake fixed, as its
// mistake.yaml says, and what the mistake is.
func fix(t *testing.T, dir string, composition []byte) ([]byte, string) {
	t.Helper()
	var m mistake
	if err := yaml.UnmarshalStrict(harness.ReadFile(t, filepath.Join(dir, "mistake.yaml")), &m); err != nil {
		t.Fatalf("%s/mistake.yaml: %v", dir, err)
	}
	if strings.TrimSpace(m.Mistake) == "" || len(m.Fix) == 0 {
		t.Fatalf("%s/mistake.yaml says no mistake, or no fix", dir)
	}
	fixed := string(composition)
	for _, f := range m.Fix {
		var at []int
		var indent string
		first, _, _ := strings.Cut(f.Old, "\n")
		for i := strings.Index(fixed, first); i >= 0 && first != ""; i = next(fixed, first, i) {
			line := fixed[strings.LastIndexByte(fixed[:i], '\n')+1:]
			if in := line[:len(line)-len(strings.TrimLeft(line, " "))]; strings.HasPrefix(fixed[i:], reindent(f.Old, in)) {
				at, indent = append(at, i), in
			}
		}
		if len(at) != 1 {
			t.Fatalf("%s/mistake.yaml: %q occurs %d times in composition.yaml, want once", dir, f.Old, len(at))
		}
		fixed = fixed[:at[0]] + reindent(f.New, indent) + fixed[at[0]+len(reindent(f.Old, indent)):]
	}
	return []byte(fixed), m.Mistake
}

// next returns where s has sub after the one at i, or -1.
func next(s, sub string, i int) int {
	if j := strings.Index(s[i+1:], sub); j >= 0 {
		return i + 1 + j
	}
	return -1
}

// reindent returns s with indent before each of its lines but the first.
func reindent(s, indent string) string {
	return strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+indent)
}

// A render is the last reconcile of a case: the step's results, and desired
// state, or the Fatal result that stopped the pipeline.
type render struct {
	results []harness.Result
	// composed are the composed resources of desired state, by composition
	// resource name.
	composed map[string]doc
}

// check checks the render against the outcome.
func (o outcome) check(t *testing.T, r render) {
	t.Helper()
	var got []harness.Result
	for _, res := range r.results {
		if res.Step == step && (res.Severity == warning || res.Severity == fatal) {
			got = append(got, res)
		}
	}
	matched := make([]bool, len(got))
	for _, f := range o.findings {
		what := strings.TrimSpace(f.severity + " " + f.reason)
		i := slices.IndexFunc(got, func(res harness.Result) bool {
			return res.Severity == f.severity && res.Reason == f.reason && !matched[slices.Index(got, res)]
		})
		if i < 0 {
			t.Errorf("the step reports no %s result; it reports:\n%s", what, lines(r.results))
			continue
		}
		matched[i] = true
		t.Logf("the step reports %s: %s", what, got[i].Message)
		for _, name := range f.names {
			if !strings.Contains(got[i].Message, name) {
				t.Errorf("the %s result doesn't name %q", what, name)
			}
		}
	}
	for i, res := range got {
		if !matched[i] {
			t.Errorf("the step reports %s, which the case doesn't expect: %s", strings.TrimSpace(res.Severity+" "+res.Reason), res.Message)
		}
	}
	if slices.ContainsFunc(got, func(res harness.Result) bool { return res.Severity == fatal }) {
		return // Nothing is applied.
	}
	for name, want := range o.references {
		d, ok := r.composed[name]
		if !ok {
			t.Errorf("%s is not in desired state", name)
			continue
		}
		if refs := harness.List(d, "spec", "references"); len(refs) != want {
			t.Errorf("%s has %d spec.references, want %d: %v", name, len(refs), want, refs)
		}
	}
	for _, name := range o.present {
		if _, ok := r.composed[name]; !ok {
			t.Errorf("%s is not in desired state; the step reports:\n%s", name, lines(r.results))
		}
	}
	for _, name := range o.absent {
		if _, ok := r.composed[name]; ok {
			t.Errorf("%s is in desired state, want it held back", name)
		}
	}
	checkUsages(t, r.composed, o.usages)
}

// checkUsages checks that the step composes exactly the Usages wanted, each
// of and by the resources named.
func checkUsages(t *testing.T, composed map[string]doc, want []usage) {
	t.Helper()
	var got []usage
	for _, name := range slices.Sorted(maps.Keys(composed)) {
		d := composed[name]
		if harness.String(d, "metadata", "labels", usageLabel) != "true" {
			continue
		}
		got = append(got, usage{of: resourceOf(composed, harness.Lookup(d, "spec", "of")), by: resourceOf(composed, harness.Lookup(d, "spec", "by"))})
	}
	slices.SortFunc(got, compareUsages)
	want = slices.SortedFunc(slices.Values(want), compareUsages)
	if !slices.Equal(got, want) {
		t.Errorf("the step composes Usages (of, by) %v, want %v", got, want)
	}
}

func compareUsages(a, b usage) int { return strings.Compare(a.of+"\x00"+a.by, b.of+"\x00"+b.by) }

// usageLabel marks the Usages function-dependencies composes.
const usageLabel = "dependencies.fn.crossplane.io/usage"

// resourceOf returns the composition resource name of the composed resource
// a Usage's of or by names by resourceRef, or what it names if none is.
func resourceOf(composed map[string]doc, side any) string {
	s, _ := side.(doc)
	kind, name := harness.String(s, "kind"), harness.String(s, "resourceRef", "name")
	for resource, d := range composed {
		if harness.String(d, "kind") == kind && harness.String(d, "metadata", "name") == name {
			return resource
		}
	}
	return kind + " " + name
}

func lines(rs []harness.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", r.Step, r.Severity, r.Reason, r.Message)
	}
	return b.String()
}

// A renderer renders the cases with the current CLI, which prints every
// result's reason, through the served functions.
type renderer struct {
	harness.Renderer
	functions string
}

func newRenderer(t *testing.T) renderer {
	t.Helper()
	addresses := harness.ServePipeline(t, harness.FnPatchAndTransform, harness.FnAutoReady)
	var fns []doc
	for _, name := range []string{harness.FnPatchAndTransform, harness.FnDependencies, harness.FnAutoReady} {
		fns = append(fns, doc{
			"apiVersion": "pkg.crossplane.io/v1",
			"kind":       "Function",
			"metadata": doc{"name": name, "annotations": doc{
				harness.AnnotationRuntime: "Development",
				harness.AnnotationTarget:  addresses[name],
			}},
			"spec": doc{"package": "xpkg.crossplane.io/crossplane-contrib/" + name},
		})
	}
	functions := filepath.Join(t.TempDir(), "functions.yaml")
	harness.WriteDocuments(t, functions, fns)
	return renderer{Renderer: harness.NewRenderer(t, harness.Crossplane), functions: functions}
}

// reconcile renders a case's composition as many times as it is
// reconciled, the first with nothing observed, each later one over what the
// one before applied, and returns the last render, or the first that a Fatal
// result stops.
func (r renderer) reconcile(t *testing.T, dir string, composition []byte, reconciles int) render {
	t.Helper()
	tmp := t.TempDir()
	compositionFile := filepath.Join(tmp, "composition.yaml")
	if err := os.WriteFile(compositionFile, composition, 0o600); err != nil {
		t.Fatal(err)
	}
	var observed []doc
	for i := 1; ; i++ {
		args := []string{filepath.Join(dir, "xr.yaml"), compositionFile, r.functions, "--include-function-results"}
		if len(observed) > 0 {
			file := filepath.Join(tmp, fmt.Sprintf("observed-%d.yaml", i))
			harness.WriteDocuments(t, file, observed)
			args = append(args, "--observed-resources="+file)
		}
		stdout, stderr, err := r.Run(t, fmt.Sprintf("%s, reconcile %d", filepath.Base(dir), i), args)
		if err != nil {
			if res, ok := harness.FatalResult(stderr); ok {
				return render{results: []harness.Result{res}}
			}
			t.Fatalf("%s: %v\n%s", r.CLI.Name, err, stderr)
		}
		docs := harness.Documents(t, stdout)
		out := render{results: harness.Results(docs), composed: map[string]doc{}}
		for _, d := range docs[1:] {
			if harness.String(d, "apiVersion") != harness.ResultAPIVersion {
				out.composed[harness.String(d, "metadata", "annotations", harness.AnnotationResource)] = d
			}
		}
		if i >= reconciles {
			return out
		}
		observed = applied(t, docs[0], out.composed)
	}
}
