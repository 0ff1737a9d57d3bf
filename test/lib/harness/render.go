//go:build e2e

package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The functions of the pipeline the e2e tiers render through, by the names
// compositions and functions.yaml give them.
const (
	FnDependencies      = "function-dependencies"
	FnPatchAndTransform = "function-patch-and-transform"
	FnAutoReady         = "function-auto-ready"
)

// What crossplane render reads and prints.
const (
	AnnotationRuntime  = "render.crossplane.io/runtime"
	AnnotationTarget   = "render.crossplane.io/runtime-development-target"
	AnnotationResource = "crossplane.io/composition-resource-name"
	ResultAPIVersion   = "render.crossplane.io/v1beta1"
	RenderTimeout      = 2 * time.Minute
)

// A CLI is one generation of the Crossplane CLI.
type CLI struct {
	Name string
	// Tools are what hack/tools.sh builds for it, the CLI itself first.
	Tools []string
	// Args returns the command line that renders, after the binary, from
	// the tools' paths and the render's arguments (XR, composition,
	// functions, flags).
	Args func(tools map[string]string, render []string) []string
	// V1 is true for Crossplane v1's CLI.
	V1 bool
}

var (
	// Crank is crossplane v2.2.0's CLI, the last whose render runs the
	// pipeline in process. It prints no result's reason.
	Crank = CLI{
		Name:  "crank",
		Tools: []string{"crank"},
		Args: func(_ map[string]string, render []string) []string {
			return append([]string{"render"}, render...)
		},
	}
	// Crossplane is the current CLI: its render hands the request to
	// Crossplane core's own XR reconciler, run from the core binary as
	// `crossplane internal render`. It prints each result's reason.
	Crossplane = CLI{
		Name:  "crossplane",
		Tools: []string{"crossplane", "crossplane-core"},
		Args: func(tools map[string]string, render []string) []string {
			return append(append([]string{"composition", "render"}, render...), "--crossplane-binary="+tools["crossplane-core"])
		},
	}
	// CrankV1 is Crossplane v1.19.0's, the bug report's: its render runs
	// the pipeline in process, as crank v2.2.0's does. It has no --xrd, so
	// it applies no XRD defaults.
	CrankV1 = CLI{
		Name:  "crank-v1",
		Tools: []string{"crank-v1"},
		Args: func(_ map[string]string, render []string) []string {
			return append([]string{"render"}, slices.DeleteFunc(render, func(a string) bool { return strings.HasPrefix(a, "--xrd=") })...)
		},
		V1: true,
	}
)

// A Renderer renders with one CLI, whose tools it has built.
type Renderer struct {
	CLI   CLI
	Tools map[string]string
}

// NewRenderer builds the CLI's tools, if the cache lacks them.
func NewRenderer(t testing.TB, cli CLI) Renderer {
	t.Helper()
	tools := map[string]string{}
	for _, name := range cli.Tools {
		tools[name] = Tool(t, name)
	}
	return Renderer{CLI: cli, Tools: tools}
}

// Run renders: the CLI with the render's arguments (XR, composition and
// functions files, then flags), with a configuration file of its own, which
// keeps the current CLI from reading or writing the user's (crank ignores
// it). It returns standard output normalised, standard error, and how the
// command failed, if it did; what says which render this is, for the log.
func (r Renderer) Run(t testing.TB, what string, render []string) (stdout []byte, stderr string, err error) {
	t.Helper()
	args := r.CLI.Args(r.Tools, render)
	ctx, cancel := context.WithTimeout(context.Background(), RenderTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Tools[r.CLI.Tools[0]], args...)
	cmd.Env = append(os.Environ(), "CROSSPLANE_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	t.Logf("%s rendered %s in %s", r.CLI.Name, what, time.Since(start).Round(time.Millisecond))
	return Normalise(out.Bytes()), errOut.String(), err
}

// Render renders as Run does, and fails the test unless the command
// succeeds.
func (r Renderer) Render(t testing.TB, what string, render []string) []byte {
	t.Helper()
	out, stderr, err := r.Run(t, what, render)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", r.CLI.Name, strings.Join(r.CLI.Args(r.Tools, render), " "), err, stderr)
	}
	return out
}

// Normalise makes a render's output comparable between runs and machines.
// Both CLIs already replace every condition's lastTransitionTime with a fixed
// time, and every name in the examples is set explicitly. One thing varies:
// Crossplane core, which the current CLI runs, records a "Composed resource
// ... is not yet ready" (or valid) event for each such composed resource in
// the order of a Go map, and the CLI prints them as results. Normalise sorts
// each run of them, and makes sure the output ends in one newline.
func Normalise(out []byte) []byte {
	docs := bytes.Split(bytes.TrimSpace(out), []byte("\n---\n"))
	for i := 0; i < len(docs); {
		j := i
		for j < len(docs) && coreComposeEvent.Match(docs[j]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		slices.SortFunc(docs[i:j], bytes.Compare)
		i = j
	}
	return append(bytes.Join(docs, []byte("\n---\n")), '\n')
}

// coreComposeEvent is a result of Crossplane core's own about one composed
// resource, as the current CLI prints it.
var coreComposeEvent = regexp.MustCompile(`^apiVersion: ` + regexp.QuoteMeta(ResultAPIVersion) + `\nkind: Result\nmessage: Composed resource "[^"\n]*" is not yet (ready|valid)\nreason: ComposeResources\nseverity: Normal$`)

// A Result is a function's result as either CLI prints it, its severity
// capitalised as a word (Normal, Warning, Fatal).
type Result struct {
	Step, Severity, Reason, Message string
}

// stepPrefix starts the current CLI's result messages, which name the step
// this way instead of in a field of their own.
var stepPrefix = regexp.MustCompile(`^Pipeline step "([^"]*)": `)

// Results reads the Result documents of both CLIs from a render's
// documents: crank prints step and severity (SEVERITY_NORMAL) fields and no
// reason; the current CLI prints the reason and severity (Normal) and names
// the step in the message.
func Results(docs []map[string]any) []Result {
	var rs []Result
	for _, d := range docs {
		if String(d, "apiVersion") != ResultAPIVersion || String(d, "kind") != "Result" {
			continue
		}
		r := Result{Step: String(d, "step"), Severity: strings.TrimPrefix(String(d, "severity"), "SEVERITY_"), Reason: String(d, "reason"), Message: String(d, "message")}
		r.Severity = strings.ToUpper(r.Severity[:min(1, len(r.Severity))]) + strings.ToLower(r.Severity[min(1, len(r.Severity)):])
		if m := stepPrefix.FindStringSubmatch(r.Message); m != nil && r.Step == "" {
			r.Step, r.Message = m[1], strings.TrimPrefix(r.Message, m[0])
		}
		rs = append(rs, r)
	}
	return rs
}

// fatalResult is how both CLIs report, on standard error, the Fatal result
// that stopped a render.
var fatalResult = regexp.MustCompile(`(?s)pipeline step "([^"]*)" returned a fatal result: (.*)`)

// FatalResult returns the Fatal result that stopped a render, read from the
// CLI's standard error, if one did. Neither CLI prints its reason.
func FatalResult(stderr string) (Result, bool) {
	m := fatalResult.FindStringSubmatch(stderr)
	if m == nil {
		return Result{}, false
	}
	return Result{Step: m[1], Severity: "Fatal", Message: strings.TrimSpace(m[2])}, true
}

// ServePipeline serves function-dependencies (built from the working tree,
// with --debug) and the named pinned functions, each its own process on
// loopback, and returns their addresses by name. The functions are
// stateless: one process each serves every render of a test.
func ServePipeline(t testing.TB, tools ...string) map[string]string {
	t.Helper()
	addresses := map[string]string{FnDependencies: Serve(t, Function(t), "--debug")}
	for _, name := range tools {
		addresses[name] = Serve(t, Tool(t, name))
	}
	return addresses
}
