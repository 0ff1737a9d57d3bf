//go:build e2e

package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// TestRenderScript runs hack/render.sh, the project's main job, on every
// example with each CLI that renders it. Its output must be the #371 state of the example's
// observed resources, as comment lines, then exactly the render TestRender
// pins in its golden file; and it must leave no process of its own running.
func TestRenderScript(t *testing.T) {
	examples := loadExamples(t)
	for _, c := range clis {
		for _, name := range c.Tools {
			harness.Tool(t, name) // Build outside the script's time limit.
		}
		for _, ex := range examples {
			// The script renders a folder as it is: not the Crossplane v1
			// generation of an example of both, whose composition only the
			// tests set the v1 input of.
			if c.V1 != ex.v1 || !ex.alone {
				continue
			}
			t.Run(c.Name+"/"+ex.name, func(t *testing.T) {
				stdout := runScript(t, c.Name, ex.dir)
				comments, render := splitComments(stdout)
				golden(t, filepath.Join("testdata", ex.name+"."+c.Name+".yaml"), harness.Normalise(render))
				checkGapComments(t, ex, comments)
			})
		}
	}
}

// runScript runs hack/render.sh in a process group of its own and checks
// that the group is empty once the script has exited: every function it
// started was stopped.
func runScript(t *testing.T, cli, dir string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(harness.Root(t), "hack", "render.sh"), dir)
	cmd.Env = append(os.Environ(), "FD_RENDER_CLI="+cli)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }) // Only if the check below failed.
	if err != nil {
		t.Fatalf("hack/render.sh %s: %v\n%s", dir, err, stderr.String())
	}
	t.Logf("hack/render.sh %s with %s took %s (including the function's build)", filepath.Base(dir), cli, time.Since(start).Round(time.Millisecond))
	// The script waits for what it killed, so nothing should be left even
	// momentarily; allow a little time for the kernel to reap.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of hack/render.sh's group %d are still running after it exited (kill: %v)", pgid, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stdout.Bytes()
}

// splitComments splits the script's output into its leading comment lines
// and the render that follows them.
func splitComments(out []byte) ([]string, []byte) {
	var comments []string
	for bytes.HasPrefix(out, []byte("#")) {
		line, rest, _ := bytes.Cut(out, []byte("\n"))
		comments = append(comments, string(line))
		out = rest
	}
	return comments, out
}

// checkGapComments checks that the comment lines name every observed
// referenced Object that lacks a live dependent's finalizer, with how many of
// its dependents' finalizers it lacks and which.
func checkGapComments(t *testing.T, ex example, comments []string) {
	t.Helper()
	if len(comments) == 0 || !strings.HasPrefix(comments[0], "# provider-kubernetes #371 in ") {
		t.Fatalf("hack/render.sh printed no #371 state before the render: %q", comments)
	}
	observed := observedByName(ex.observed)
	// The script reads the observed references only, as provider-kubernetes
	// does: not the input's dependencies, which the function has written
	// into the observed Objects already.
	g := edgesOf(t, observed, ex.observed, ex.required, ex.xr, nil)
	// A Usage the function emitted, observed, protects its edge as the
	// finalizer would: the graph command doesn't call that edge's finalizer missing.
	used := map[[2]string]bool{}
	for _, o := range observed {
		if harness.String(o, "metadata", "labels", "dependencies.fn.crossplane.io/usage") == "true" {
			used[[2]string{harness.String(o, "spec", "of", "resourceRef", "name"), harness.String(o, "spec", "by", "resourceRef", "name")}] = true
		}
	}
	name := func(n string) string { return harness.String(observed[n], "metadata", "name") }
	all, lacking := map[string][]string{}, map[string][]string{}
	var targets []string
	for _, e := range g.live {
		if _, seen := all[e.target]; !seen {
			targets = append(targets, e.target)
		}
		all[e.target] = append(all[e.target], e.dependent)
		if !slices.Contains(finalizers(observed[e.target]), e.finalizer) && !used[[2]string{name(e.target), name(e.dependent)}] {
			lacking[e.target] = append(lacking[e.target], e.dependent)
		}
	}
	// The graph command names resources by composition resource name, in
	// order, each list sorted.
	slices.Sort(targets)
	var want []string
	for _, target := range targets {
		slices.Sort(lacking[target])
		if len(lacking[target]) > 0 {
			want = append(want, fmt.Sprintf("#   missing: %s lacks the reference finalizers of %d of its %d live dependents: %s",
				target, len(lacking[target]), len(all[target]), strings.Join(lacking[target], ", ")))
		}
	}
	if got := comments[1:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hack/render.sh's #371 state:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
