//go:build e2e

package render

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// TestGraphCommand runs the built binary's graph subcommand as a user would
// on the #371 example, and draws its DOT with Graphviz.
func TestGraphCommand(t *testing.T) {
	root := harness.Root(t)
	observed := filepath.Join(root, "example", "cluster", "observed.yaml")
	cmd := exec.Command(harness.Function(t), "graph", "--format=dot", observed)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("graph on a stream with missing finalizers: %v, want exit code 1\n%s", err, stderr.String())
	}
	if got := strings.Count(stderr.String(), "missing: "); got != 2 {
		t.Errorf("graph reported %d referenced resources lacking finalizers, want the example's 2:\n%s", got, stderr.String())
	}

	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatal("Graphviz's dot is not installed: hack/test.sh installs it")
	}
	draw := exec.Command(dot, "-Tsvg")
	draw.Stdin = &stdout
	svg, err := draw.Output()
	if err != nil {
		t.Fatalf("dot rejects the graph: %v", err)
	}
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("finalizer missing")) {
		t.Errorf("dot's drawing lacks the missing edges:\n%.500s", svg)
	}
}
