package graphcmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composition"
)

func TestGraphCommand(t *testing.T) {
	// The example's observed resources reproduce #371: the shared namespace
	// and config Objects lack some dependents' finalizers. Once the rendered
	// finalizers are applied nothing is missing.
	converged := filepath.Join(t.TempDir(), "converged.yaml")
	cases := map[string]struct {
		reason          string
		files           []string
		format          string
		wantErr         error
		wantDiagnostics string
		wantOut         []string
	}{
		"Issue371": {
			reason:  "A stream with missing finalizers draws them and fails, naming each.",
			files:   []string{"../../example/cluster/observed.yaml"},
			format:  "mermaid",
			wantErr: errMissing,
			wantDiagnostics: "missing: configmap-app lacks the reference finalizers of 2 of its 3 live dependents: deployment-web, deployment-worker\n" +
				"missing: namespace lacks the reference finalizers of 5 of its 8 live dependents: configmap-features, deployment-web, deployment-worker, service-api, service-web\n",
			wantOut: []string{"flowchart LR", `==>|"finalizer missing"|`},
		},
		"Converged": {
			reason:  "A stream where every live dependent's finalizer is in place passes.",
			files:   []string{converged},
			format:  "dot",
			wantOut: []string{"digraph dependencies {", `[label="finalizer protected"]`},
		},
	}
	if err := os.WriteFile(converged, applyAll(t, filepath.Join("..", "..", "example", "cluster", "observed.yaml")), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, diagnostics bytes.Buffer
			cmd := &Command{Format: tc.format, Files: tc.files, out: &out, diagnostics: &diagnostics}
			err := cmd.Run()
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s\nRun(): error %v, want %v", tc.reason, err, tc.wantErr)
			}
			if got := diagnostics.String(); got != tc.wantDiagnostics {
				t.Errorf("%s\nRun() reported:\n%s\nwant:\n%s", tc.reason, got, tc.wantDiagnostics)
			}
			for _, s := range tc.wantOut {
				if !strings.Contains(out.String(), s) {
					t.Errorf("%s\nRun() output lacks %q:\n%s", tc.reason, s, out.String())
				}
			}
		})
	}
}

// applyAll returns the stream with every finalizer the function would
// declare on it applied, as Crossplane would apply them.
func applyAll(t *testing.T, path string) []byte {
	t.Helper()
	docs, err := readDocuments(path)
	if err != nil {
		t.Fatal(err)
	}
	req, err := liveState(docs)
	if err != nil {
		t.Fatal(err)
	}
	in, err := v1beta1.Decode(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := composition.Decide(in, req)
	if err != nil {
		t.Fatal(err)
	}
	plan := p.Protection
	if len(plan.Additions) == 0 {
		t.Fatal("the stream lacks no finalizer: nothing to apply")
	}
	var out []byte
	for _, d := range docs {
		metadata := structAt(d.object, "metadata")
		finalizers, _ := metadata["finalizers"].([]any)
		for _, f := range plan.Additions[annotation(d.object)] {
			finalizers = append(finalizers, f)
		}
		metadata["finalizers"] = finalizers
		b, err := yaml.Marshal(d.object)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out
}

// TestGraphCommandDecidesWithTheFunctionsInput proves that the graph command's
// verdict, and its exit status, are the function's for the same resources
// and the same input.
func TestGraphCommandDecidesWithTheFunctionsInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cyclic := write("cyclic.yaml", object("a", "uid-a", []string{"b"})+"---\n"+object("b", "uid-b", []string{"a"}))
	ignore := write("ignore.yaml", "apiVersion: dependencies.fn.crossplane.io/v1beta1\nkind: Input\nreferences: Ignore\n")
	warning := write("composition.yaml", `apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata: {name: cyclic}
spec:
  mode: Pipeline
  pipeline:
  - step: render
    functionRef: {name: function-patch-and-transform}
  - step: order-deletion
    functionRef: {name: function-dependencies}
    input: {apiVersion: dependencies.fn.crossplane.io/v1beta1, kind: Input, onCycle: Warning}
`)
	noStep := write("no-step.yaml", "apiVersion: apiextensions.crossplane.io/v1\nkind: Composition\nmetadata: {name: other}\nspec: {mode: Pipeline, pipeline: []}\n")
	badInput := write("bad.yaml", "apiVersion: dependencies.fn.crossplane.io/v1beta1\nkind: Input\nonCycle: Sometimes\n")
	infer := write("infer.yaml", "apiVersion: dependencies.fn.crossplane.io/v1beta1\nkind: Input\ninfer: [ProviderConfigs]\n")
	onPC := `apiVersion: kubernetes.crossplane.io/v1alpha1
kind: ProviderConfig
metadata: {name: remote, uid: uid-remote, annotations: {crossplane.io/composition-resource-name: config}}
---
apiVersion: kubernetes.crossplane.io/v1alpha2
kind: Object
metadata: {name: app, uid: uid-app, annotations: {crossplane.io/composition-resource-name: app}}
spec:
  providerConfigRef: {name: remote}
  forProvider:
    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: app, namespace: default}}
`
	unprotected := write("unprotected.yaml", onPC)
	// The Object makes the Secret its own ProviderConfig reads.
	inferredCycle := write("inferred-cycle.yaml", `apiVersion: kubernetes.crossplane.io/v1alpha1
kind: ProviderConfig
metadata: {name: remote, uid: uid-remote, annotations: {crossplane.io/composition-resource-name: config}}
spec:
  credentials: {source: Secret, secretRef: {name: kubeconfig, namespace: default, key: kubeconfig}}
---
apiVersion: kubernetes.crossplane.io/v1alpha2
kind: Object
metadata: {name: maker, uid: uid-maker, annotations: {crossplane.io/composition-resource-name: maker}}
spec:
  providerConfigRef: {name: remote}
  forProvider:
    manifest: {apiVersion: v1, kind: Secret, metadata: {name: kubeconfig, namespace: default}}
`)
	inferAll := write("infer-all.yaml", "apiVersion: dependencies.fn.crossplane.io/v1beta1\nkind: Input\ninfer: [ProviderConfigs, Credentials]\n")
	protected := write("protected.yaml", onPC+`---
apiVersion: protection.crossplane.io/v1beta1
kind: ClusterUsage
metadata:
  name: usage-3-app-config-0a1b2c3d
  uid: uid-usage
  labels: {dependencies.fn.crossplane.io/usage: "true"}
  annotations: {crossplane.io/composition-resource-name: usage-3-app-config}
spec:
  of: {apiVersion: kubernetes.crossplane.io/v1alpha1, kind: ProviderConfig, resourceRef: {name: remote}}
  by: {apiVersion: kubernetes.crossplane.io/v1alpha2, kind: Object, resourceRef: {name: app}}
  replayDeletion: true
`)

	cases := map[string]struct {
		reason          string
		input           string
		files           []string
		wantErr         error
		wantErrText     string
		wantDiagnostics string
	}{
		"ReferencesIgnoredMakeNoEdges": {
			reason: "With references: Ignore the function declares nothing for the example's references: nothing is missing, and the finalizers the provider added name no edge.",
			input:  ignore,
			files:  []string{"../../example/cluster/observed.yaml"},
			wantDiagnostics: "stale: configmap-app carries kubernetes.crossplane.io/referred-by-object-96c7d3ba-5ee2-4705-b600-ed691517bd70, which names no Object that references it\n" +
				"stale: namespace carries kubernetes.crossplane.io/referred-by-object-96c7d3ba-5ee2-4705-b600-ed691517bd70, which names no Object that references it\n" +
				"stale: namespace carries kubernetes.crossplane.io/referred-by-object-ce231360-41fe-44dd-9996-0a46e25181f0, which names no Object that references it\n" +
				"stale: namespace carries kubernetes.crossplane.io/referred-by-object-dae1b95b-7d42-4fba-b0af-f30bb8076b5b, which names no Object that references it\n",
		},
		"InferredEdgeWithoutItsUsage": {
			reason:          "With infer, an Object's ProviderConfig lacks the Object's Usage until one exists.",
			input:           infer,
			files:           []string{unprotected},
			wantErr:         errMissing,
			wantDiagnostics: "missing: config lacks the Usages of 1 of its 1 live dependents: app\n",
		},
		"TheFunctionsOwnUsageProtects": {
			reason: "One of the function's own Usages in the stream is what protects its edge, not a composed resource of the graph.",
			input:  infer,
			files:  []string{protected},
		},
		"CycleFailsAsTheStepFails": {
			reason:          "With the default onCycle: Fatal, a cycle fails the function's step, and so the graph command.",
			files:           []string{cyclic},
			wantErr:         errCycle,
			wantDiagnostics: "cycle: a → b → a\n",
		},
		"CycleWarningFromTheComposition": {
			reason:          "With the Composition's onCycle: Warning, the function declares no finalizer inside the cycle: nothing is missing.",
			input:           warning,
			files:           []string{cyclic},
			wantDiagnostics: "cycle: a → b → a\n",
		},
		"InferredEdgesThatWouldCloseACycleAreLeftOut": {
			reason: "Inferred edges that would close a cycle are named with the cycle and left out, as the function leaves them out: no cycle fails, nothing is missing.",
			input:  inferAll,
			files:  []string{inferredCycle},
			wantDiagnostics: "inferred edge left out: config → maker via spec.credentials.secretRef → spec.forProvider.manifest closes config → maker → config\n" +
				"inferred edge left out: maker → config via spec.providerConfigRef closes maker → config → maker\n",
		},
		"CompositionWithoutTheFunctionsStep": {
			reason:      "A Composition with no step whose input is the function's is an error naming the file.",
			input:       noStep,
			files:       []string{cyclic},
			wantErrText: `cannot read the input from "` + noStep + `": it must hold one Input of dependencies.fn.crossplane.io/v1beta1, alone or as a Composition's pipeline step input; found 0`,
		},
		"InvalidInputNamesTheField": {
			reason:      "An invalid input is the function's own error, with where it was found.",
			input:       badInput,
			files:       []string{cyclic},
			wantErrText: `invalid function input in document 1 (Input) of "` + badInput + `", line 1: onCycle: Unsupported value: "Sometimes": supported values: "Fatal", "Warning"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, diagnostics bytes.Buffer
			cmd := &Command{Format: "mermaid", Input: tc.input, Files: tc.files, out: &out, diagnostics: &diagnostics}
			err := cmd.Run()
			if tc.wantErrText != "" {
				if err == nil || err.Error() != tc.wantErrText {
					t.Errorf("%s\nRun(): error %v, want %s", tc.reason, err, tc.wantErrText)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s\nRun(): error %v, want %v", tc.reason, err, tc.wantErr)
			}
			if got := diagnostics.String(); got != tc.wantDiagnostics {
				t.Errorf("%s\nRun() reported:\n%s\nwant:\n%s", tc.reason, got, tc.wantDiagnostics)
			}
		})
	}
}

// TestGraphCommandJudgesOnlyWhatTheResourcesShow proves that the graph
// command judges no finalizer of an Object without a UID, as crossplane
// render outputs every Object, since a reference finalizer names its Object
// by UID: it draws such an edge unjudged, calls no finalizer on its target
// stale, and says once what it left unjudged. An Object with a UID, and a
// cycle, are judged as ever.
func TestGraphCommandJudgesOnlyWhatTheResourcesShow(t *testing.T) {
	// A finalizer from the render's observed state, whose Object has no UID
	// in its output.
	const earlier = "kubernetes.crossplane.io/referred-by-object-0d1e2f3a"
	dir := t.TempDir()
	write := func(name string, objects ...string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("---\n"+strings.Join(objects, "---\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	rendered := write("rendered.yaml",
		object("ns", "", nil, earlier),
		object("app", "", []string{"ns"}))
	mixed := write("mixed.yaml",
		object("ns", "uid-ns", nil, earlier),
		object("app", "", []string{"ns"}),
		object("config", "uid-config", nil, "kubernetes.crossplane.io/referred-by-object-gone"),
		object("live", "uid-live", []string{"ns", "config"}))
	cycle := write("cycle.yaml", object("a", "", []string{"b"}), object("b", "", []string{"a"}))
	warning := write("warning.yaml", "apiVersion: dependencies.fn.crossplane.io/v1beta1\nkind: Input\nonCycle: Warning\n")

	cases := map[string]struct {
		reason          string
		input           string
		files           []string
		wantErr         error
		wantDiagnostics string
		wantEdges       map[string]string
	}{
		"RenderOutputIsNotJudged": {
			reason: "Where no Object has a UID, no edge is pending nor any finalizer stale: the command says it can't tell, and passes.",
			files:  []string{rendered},
			wantDiagnostics: "not judged: whether reference finalizers are in place (1 reference, drawn unjudged) or stale (1 finalizer on resources they reference): " +
				"a reference finalizer names its Object by UID, and metadata.uid is missing on 1 Object, as in crossplane render's output; run graph on kubectl get -o yaml of a live cluster to judge them\n",
			wantEdges: map[string]string{"app -> ns": "finalizer unjudged"},
		},
		"ObjectsWithUIDsAreJudgedBesideOnesWithout": {
			reason:  "A live Object's missing finalizer fails the command, and the stale finalizer on a target only live Objects reference is named; the target an Object without a UID references is not judged stale.",
			files:   []string{mixed},
			wantErr: errMissing,
			wantDiagnostics: "not judged: whether reference finalizers are in place (1 reference, drawn unjudged) or stale (1 finalizer on resources they reference): " +
				"a reference finalizer names its Object by UID, and metadata.uid is missing on 1 Object, as in crossplane render's output; run graph on kubectl get -o yaml of a live cluster to judge them\n" +
				"missing: config lacks the reference finalizers of 1 of its 1 live dependents: live\n" +
				"missing: ns lacks the reference finalizers of 1 of its 1 live dependents: live\n" +
				"stale: config carries kubernetes.crossplane.io/referred-by-object-gone, which names no Object that references it\n",
			wantEdges: map[string]string{"app -> ns": "finalizer unjudged", "live -> config": "finalizer missing", "live -> ns": "finalizer missing"},
		},
		"ACycleIsJudgedWithoutUIDs": {
			reason:  "A cycle is one whatever the UIDs: it fails the step, and so the command.",
			files:   []string{cycle},
			wantErr: errCycle,
			wantDiagnostics: "not judged: whether reference finalizers are in place (2 references, drawn unjudged): " +
				"a reference finalizer names its Object by UID, and metadata.uid is missing on 2 Objects, as in crossplane render's output; run graph on kubectl get -o yaml of a live cluster to judge them\n" +
				"cycle: a → b → a\n",
			wantEdges: map[string]string{"a -> b": "finalizer unjudged", "b -> a": "finalizer unjudged"},
		},
		"ACycleBrokenIsJudgedWithoutUIDs": {
			reason:          "With onCycle: Warning, the cycle's edges get no finalizer whatever the UIDs: they are drawn missing, and nothing is left unjudged.",
			input:           warning,
			files:           []string{cycle},
			wantDiagnostics: "cycle: a → b → a\n",
			wantEdges:       map[string]string{"a -> b": "finalizer missing", "b -> a": "finalizer missing"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, diagnostics bytes.Buffer
			err := (&Command{Format: "dot", Input: tc.input, Files: tc.files, out: &out, diagnostics: &diagnostics}).Run()
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s\nRun(): error %v, want %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantDiagnostics, diagnostics.String()); diff != "" {
				t.Errorf("%s\nRun() reported: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantEdges, edgeLabels(out.String())); diff != "" {
				t.Errorf("%s\nRun() drew: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// dotEdge is an edge of the DOT the graph command draws, with its label.
var dotEdge = regexp.MustCompile(`(?m)^  "([^"]+)" -> "([^"]+)" \[label="([^"]+)"`)

// edgeLabels returns the label of each edge of a DOT drawing, by its ends.
func edgeLabels(dot string) map[string]string {
	labels := map[string]string{}
	for _, m := range dotEdge.FindAllStringSubmatch(dot, -1) {
		labels[m[1]+" -> "+m[2]] = m[3]
	}
	return labels
}

// object is a cluster-scoped Object named name, with its uid when it has
// one (a live Object, which provider-kubernetes manages), the Objects it
// references, whose finalizers it doesn't carry, and the finalizers it
// carries.
func object(name, uid string, references []string, finalizers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kubernetes.crossplane.io/v1alpha2\nkind: Object\nmetadata:\n  name: %s\n  annotations: {crossplane.io/composition-resource-name: %s}\n", name, name)
	if uid != "" {
		fmt.Fprintf(&b, "  uid: %s\n", uid)
		finalizers = append(finalizers, "finalizer.managedresource.crossplane.io")
	}
	if len(finalizers) > 0 {
		fmt.Fprintf(&b, "  finalizers: [%s]\n", strings.Join(finalizers, ", "))
	}
	fmt.Fprintf(&b, "spec:\n  forProvider:\n    manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: default}}\n", name)
	if len(references) > 0 {
		b.WriteString("  references:\n")
	}
	for _, r := range references {
		fmt.Fprintf(&b, "  - dependsOn: {apiVersion: kubernetes.crossplane.io/v1alpha2, kind: Object, name: %s}\n", r)
	}
	return b.String()
}

// TestGraphCommandNamesWhereAFileFailsToParse proves that a parse error names
// the file, the document (counted from 1, empty ones too, as YAML counts
// them) and the line its content starts on, and the line the decoder names
// within it.
func TestGraphCommandNamesWhereAFileFailsToParse(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		reason  string
		content string
		input   bool
		wantErr string
	}{
		"MakesEchoOfItsCommand": {
			reason:  "make render > out.yaml without -s puts the command make runs above the render's first separator.",
			content: "hack/render.sh \n# a comment of hack/render.sh\n---\n" + object("app", "", nil),
			wantErr: `cannot parse document 1 of "%s", line 1: it is the text "hack/render.sh", not a resource`,
		},
		"SyntaxErrorInALaterDocument": {
			reason:  "The decoder's line, counted in the document from its separator, is counted in the file; a document of comments is one.",
			content: "---\n# only a comment\n---\n" + object("app", "", nil) + "  bad: key: value\n",
			wantErr: `cannot parse document 2 of "%s", line 4: at line 12: mapping values are not allowed in this context`,
		},
		"EmptyDocumentsCount": {
			reason:  "Two separators in a row make an empty document, as in YAML.",
			content: "---\n---\n[\n",
			wantErr: `cannot parse document 2 of "%s", line 3: did not find expected node content`,
		},
		"SyntaxErrorOnTheFirstLine": {
			reason:  "A problem on the line a document starts on is named once.",
			content: "apiVersion: v1\n---\nkind: [\n",
			wantErr: `cannot parse document 2 of "%s", line 3: did not find expected node content`,
		},
		"WindowsLineEndings": {
			reason:  "Lines end with CR LF as well.",
			content: "apiVersion: v1\r\n---\r\n- a list\r\n",
			wantErr: `cannot parse document 2 of "%s", line 3: it is a list, not a resource`,
		},
		"SeparatorWithText": {
			reason:  "A separator followed by more than a comment is named at its line.",
			content: "apiVersion: v1\n---\nkind: ConfigMap\n--- kind: Secret\n",
			wantErr: `cannot parse document 2 of "%s", line 3: at line 4: invalid Yaml document separator: kind: Secret`,
		},
		"ANumber": {
			reason:  "A document that is a single value is named with it.",
			content: "---\n42\n",
			wantErr: `cannot parse document 1 of "%s", line 2: it is the value 42, not a resource`,
		},
		"InvalidInputInAComposition": {
			reason: "The function's input is named by its Composition and its place in the pipeline.",
			input:  true,
			content: "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: apiextensions.crossplane.io/v1\nkind: Composition\nmetadata: {name: app}\nspec:\n  pipeline:\n  - step: order\n" +
				"    input: {apiVersion: dependencies.fn.crossplane.io/v1beta1, kind: Input, onCycle: Sometimes}\n",
			wantErr: `invalid function input in document 2 (Composition app) of "%s", line 4, spec.pipeline[0].input: onCycle: Unsupported value: "Sometimes": supported values: "Fatal", "Warning"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := &Command{Format: "mermaid", Files: []string{path}, out: &bytes.Buffer{}, diagnostics: &bytes.Buffer{}}
			if tc.input {
				cmd.Input, cmd.Files = path, nil
			}
			err := cmd.Run()
			if err == nil {
				t.Fatalf("%s\nRun(): no error, want %s", tc.reason, tc.wantErr)
			}
			if diff := cmp.Diff(fmt.Sprintf(tc.wantErr, path), err.Error()); diff != "" {
				t.Errorf("%s\nRun(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPlaceNamesStandardInputAndTheResource proves that a document of
// standard input is said to be one, and that a document read is named by its
// kind and name.
func TestPlaceNamesStandardInputAndTheResource(t *testing.T) {
	cases := map[string]struct {
		at   place
		want string
	}{
		"File":          {at: place{file: "out.yaml", index: 3, line: 40}, want: `document 3 of "out.yaml", line 40`},
		"StandardInput": {at: place{file: "-", index: 1, line: 1}, want: "document 1 of standard input, line 1"},
		"Read": {
			at:   place{file: "out.yaml", index: 2, line: 7}.of(map[string]any{"kind": "Object", "metadata": map[string]any{"name": "app"}}),
			want: `document 2 (Object app) of "out.yaml", line 7`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.at.String()); diff != "" {
				t.Errorf("String(): -want, +got:\n%s", diff)
			}
		})
	}
}
