package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
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
			files:   []string{"example/cluster/observed.yaml"},
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
	if err := os.WriteFile(converged, applyAll(t, filepath.Join("example", "cluster", "observed.yaml")), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, diagnostics bytes.Buffer
			cmd := &GraphCmd{Format: tc.format, Files: tc.files, out: &out, diagnostics: &diagnostics}
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
	plan := finalizer.Declare(graph.New(composedResources(req, true, false).resources, graph.Options{}))
	if len(plan.Additions) == 0 {
		t.Fatal("the stream lacks no finalizer: nothing to apply")
	}
	var out []byte
	for _, d := range docs {
		metadata := structAt(d, "metadata")
		finalizers, _ := metadata["finalizers"].([]any)
		for _, f := range plan.Additions[annotation(d)] {
			finalizers = append(finalizers, f)
		}
		metadata["finalizers"] = finalizers
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out
}
