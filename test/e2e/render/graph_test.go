//go:build e2e

package render

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// TestGraphCommand runs the built binary's graph subcommand as a user would
// on the #371 example, and draws its DOT with Graphviz.
func TestGraphCommand(t *testing.T) {
	root := harness.Root(t)
	observed := filepath.Join(root, "example", "cluster", "observed.yaml")
	stdout, stderr, code := runGraph(t, "--format=dot", observed)
	if code != 1 {
		t.Fatalf("graph on a stream with missing finalizers exited %d, want 1\n%s", code, stderr)
	}
	if got := strings.Count(stderr, "missing: "); got != 2 {
		t.Errorf("graph reported %d referenced resources lacking finalizers, want the example's 2:\n%s", got, stderr)
	}

	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatal("Graphviz's dot is not installed: hack/test.sh installs it")
	}
	draw := exec.Command(dot, "-Tsvg")
	draw.Stdin = strings.NewReader(stdout)
	svg, err := draw.Output()
	if err != nil {
		t.Fatalf("dot rejects the graph: %v", err)
	}
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("finalizer missing")) {
		t.Errorf("dot's drawing lacks the missing edges:\n%.500s", svg)
	}
}

// TestGraphCommandOnARender runs the graph subcommand on what the current
// crossplane CLI renders of the #371 example, as the README shows it. The
// render's Objects carry no UID, by which a reference finalizer names its
// Object: the command calls no finalizer stale and no edge pending, says once
// what it can't judge, and passes. The same output under the line make
// echoes without -s fails, naming the document and the line.
func TestGraphCommandOnARender(t *testing.T) {
	examples := loadExamples(t)
	i := slices.IndexFunc(examples, func(e example) bool { return e.name == "cluster" && !e.v1 })
	if i < 0 {
		t.Fatal("no example/cluster to render")
	}
	ex := examples[i]
	r := &renderer{Renderer: harness.NewRenderer(t, harness.Crossplane), example: ex, functions: functionsFile(t, ex, serveFunctions(t))}
	out := r.render(t, "the pipeline", ex.composition, filepath.Join(ex.dir, "observed.yaml"))

	rendered := filepath.Join(t.TempDir(), "render.yaml")
	if err := os.WriteFile(rendered, out.raw, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runGraph(t, "--format=dot", rendered)
	if code != 0 {
		t.Errorf("graph on a render exited %d, want 0\n%s", code, stderr)
	}
	for _, judged := range []string{"stale: ", "missing: "} {
		if strings.Contains(stderr, judged) {
			t.Errorf("graph on a render, whose Objects have no UID, reported %q:\n%s", judged, stderr)
		}
	}
	if got := strings.Count(stderr, "not judged: "); got != 1 {
		t.Errorf("graph on a render said %d times what it can't judge, want once:\n%s", got, stderr)
	}
	if strings.Contains(stdout, "finalizer pending") || !strings.Contains(stdout, "finalizer unjudged") {
		t.Errorf("graph on a render drew its Objects' edges pending, or none unjudged:\n%s", stdout)
	}

	echoed := filepath.Join(t.TempDir(), "out.yaml")
	if err := os.WriteFile(echoed, append([]byte("hack/render.sh \n"), out.raw...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runGraph(t, echoed)
	if want := `cannot parse document 1 of "` + echoed + `", line 1: it is the text "hack/render.sh", not a resource`; code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("graph on a render under make's echo exited %d with:\n%s\nwant an error naming the document and line: %s", code, stderr, want)
	}
}

// runGraph runs the built binary's graph subcommand, and returns what it printed
// and its exit code.
func runGraph(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(harness.Function(t), append([]string{"graph"}, args...)...)
	var out, diagnostics bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &diagnostics
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("cannot run graph: %v", err)
	}
	return out.String(), diagnostics.String(), cmd.ProcessState.ExitCode()
}
