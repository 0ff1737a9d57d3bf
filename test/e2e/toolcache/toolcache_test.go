//go:build e2e

// Package toolcache proves that hack/tools.sh may be called by several test
// packages at once on a machine that has built nothing yet, as go test does
// with ./test/... on a new user's first make test.
package toolcache

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// The smallest pinned tool: its relink takes seconds once the Go build cache
// has it, so the test is quick, and the race it guards against is the same
// for every tool.
const tool = "benchstat"

// callers is more than the three test packages that asked for one tool at
// once when the race was found.
const callers = 6

func TestConcurrentCallersOfOneToolShareOneBuild(t *testing.T) {
	harness.Tool(t, tool) // Warm the Go build cache, so that below each build is a relink.
	bin := t.TempDir()

	outs := callTools(t, bin)
	want := filepath.Join(bin, tool)
	builds := 0
	for i, o := range outs {
		if o.err != nil {
			t.Errorf("caller %d: hack/tools.sh %s: %v\n%s", i, tool, o.err, o.stderr)
		}
		if got := strings.TrimSpace(o.stdout); got != want {
			t.Errorf("caller %d printed %q, want %q", i, got, want)
		}
		builds += strings.Count(o.stderr, "building "+tool+" ")
	}
	if builds != 1 {
		t.Errorf("%d callers built %s %d times, want once: the others must wait and use that build", callers, tool, builds)
	}
	if f, err := elf.Open(want); err != nil {
		t.Errorf("%s is not a whole executable: %v", want, err)
	} else {
		_ = f.Close()
	}
	if got, want := listFolder(t, bin), []string{tool, tool + ".lock", tool + ".pin"}; !slices.Equal(got, want) {
		t.Errorf("the tool folder holds %q, want %q: no build may leave a temporary file", got, want)
	}

	// Once built, nobody builds again.
	for i, o := range callTools(t, bin) {
		if o.err != nil || strings.Contains(o.stderr, "building") {
			t.Errorf("caller %d of a built tool: %v\n%s", i, o.err, o.stderr)
		}
	}
}

type output struct {
	stdout, stderr string
	err            error
}

// callTools runs hack/tools.sh for the tool from several processes at once,
// all against the tool folder bin.
func callTools(t *testing.T, bin string) []output {
	t.Helper()
	script := filepath.Join(harness.Root(t), "hack", "tools.sh")
	outs := make([]output, callers)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			cmd := exec.Command("bash", script, tool)
			cmd.Env = append(os.Environ(), "FD_TOOLS_BIN="+bin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			outs[i] = output{stdout.String(), stderr.String(), err}
		})
	}
	wg.Wait()
	return outs
}

func listFolder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
