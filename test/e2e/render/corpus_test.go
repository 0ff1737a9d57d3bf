//go:build e2e

// The corpus: compositions published in public repositories, kept verbatim
// under corpus/<entry>/ with their XRDs (corpus/sources.yaml says where each
// comes from, at which commit, under which license), each with
// an XR of ours that its XRD accepts. TestCorpus renders each through its own
// pipeline with function-dependencies appended, inferring everything it can,
// as a user who turns `infer` on for a composite that works today would.
//
// No composite may be worse for it: no result of any step is Fatal, on the
// first reconcile (nothing exists yet), once the providers have resolved
// every selector (the observed state, derived from what the composition
// renders without the function, as the API server returns it:
// observed-xr.yaml and observed.yaml), nor once the function's Usages and
// finalizers are applied. What the function makes of each, its Usages, its
// DeletionOrdered condition and its results, is pinned in golden.yaml; run
// with -update to rewrite these files.
package render

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // Git's object ids are SHA-1.
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// corpusInput is function-dependencies' input for every corpus entry: all
// that inference can do.
var corpusInput = doc{
	"apiVersion": "dependencies.fn.crossplane.io/v1beta1",
	"kind":       "Input",
	"infer":      []any{"ProviderConfigs", "Credentials", "ManagedReferences"},
}

// corpusStep is the name of the step the test appends.
const corpusStep = "function-dependencies"

// corpusDir holds the corpus: outside testdata/, whose YAML the schema tier
// validates, because these compositions compose kinds whose CRDs can't be
// had here, and two are classic compositions, which Crossplane v2's schema
// refuses.
const corpusDir = "corpus"

// minCorpus is how many published compositions the corpus must hold.
const minCorpus = 10

// TestCorpus renders every corpus entry three times, as its first
// reconcile, once its selectors are resolved and once what the function
// asked for is applied, and checks that no step reports a Fatal result; the
// Usages, condition and results are compared with the goldens.
func TestCorpus(t *testing.T) {
	entries := corpusEntries(t, corpusDir)
	if len(entries) < minCorpus {
		t.Fatalf("the corpus holds %d compositions, want at least %d", len(entries), minCorpus)
	}

	// The functions are stateless: one process each serves every render.
	// No corpus composition calls auto-ready: functions.yaml lists, and the
	// test serves, only what they call.
	addresses := harness.ServePipeline(t, fnPatchAndTransform)
	crank := harness.NewRenderer(t, harness.Crank)
	functions := corpusFunctions(t, filepath.Join(corpusDir, "functions.yaml"), addresses)

	for _, entry := range entries {
		t.Run(entry, func(t *testing.T) {
			dir := filepath.Join(corpusDir, entry)
			r := corpusRenderer{crank: crank, functions: functions, xrd: filepath.Join(dir, "xrd.yaml")}
			composition := pipelineOf(t, filepath.Join(dir, "composition.yaml"))
			xr := readDocs(t, filepath.Join(dir, "xr.yaml"))[0]
			with := withStep(t, composition)

			var renders []doc
			check := func(name string, xr doc, observed []doc) corpusOutput {
				got := r.render(t, name, xr, with, observed)
				if got.fatal != "" {
					t.Errorf("%s: with infer, the pipeline fails with a Fatal result, without it it doesn't: %s", name, got.fatal)
				}
				for _, res := range results(got.out) {
					if res.severity == "Fatal" {
						t.Errorf("%s: step %s reports a Fatal result: %s", name, res.step, res.message)
					}
				}
				renders = append(renders, summary(t, name, got))
				return got
			}

			// The first reconcile: nothing exists yet.
			check("first reconcile", xr, nil)
			// Once the providers have created everything and resolved
			// every selector, and the composition has fed back into the
			// XR's status what its later resources read from it.
			xr, observed := settle(t, r, xr, composition)
			// Pinned, so that what the providers are modelled to do can
			// be read, and rendered by hand: crossplane render
			// observed-xr.yaml with --observed-resources=observed.yaml.
			golden(t, filepath.Join(dir, "observed-xr.yaml"), marshalDocs(t, []doc{xr}))
			golden(t, filepath.Join(dir, "observed.yaml"), marshalDocs(t, observed))
			got := check("selectors resolved", xr, observed)
			// Once Crossplane has applied that: the Usages exist and the
			// finalizers are on their targets.
			if got.fatal == "" {
				check("applied", xr, applyFinalizers(t, observed, composedByName(t, got.out)))
			}

			golden(t, filepath.Join(dir, "golden.yaml"), marshalDocs(t, renders))
		})
	}
}

// permissive are the licenses under which a corpus entry may be kept
// verbatim in this repository.
var permissive = []string{"Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause"}

// A corpusSource is one entry of corpus/sources.yaml.
type corpusSource struct {
	Name        string     `json:"name"`
	Repository  string     `json:"repository"`
	Commit      string     `json:"commit"`
	License     string     `json:"license"`
	Composition sourceFile `json:"composition"`
	XRD         sourceFile `json:"xrd"`
}

type sourceFile struct {
	Path string `json:"path"`
	Blob string `json:"blob"`
}

// TestCorpusIsVerbatim checks that every corpus entry has a source, under
// a permissive license, and that its composition and XRD are the published
// files byte for byte: their git object ids are those recorded, which git
// rev-parse COMMIT:PATH prints in the source repository.
func TestCorpusIsVerbatim(t *testing.T) {
	root := corpusDir
	var sources struct {
		Entries []corpusSource `json:"entries"`
	}
	if err := yaml.Unmarshal(harness.ReadFile(t, filepath.Join(root, "sources.yaml")), &sources); err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, s := range sources.Entries {
		named = append(named, s.Name)
		if !slices.Contains(permissive, s.License) {
			t.Errorf("%s: license %q is none of %v", s.Name, s.License, permissive)
		}
		if s.Repository == "" || len(s.Commit) != 40 {
			t.Errorf("%s: repository %q at commit %q: want both, the commit in full", s.Name, s.Repository, s.Commit)
		}
		for file, src := range map[string]sourceFile{"composition.yaml": s.Composition, "xrd.yaml": s.XRD} {
			if got := gitBlob(harness.ReadFile(t, filepath.Join(root, s.Name, file))); src.Path == "" || got != src.Blob {
				t.Errorf("%s/%s is git object %s, want %s, the object of %s at %s", s.Name, file, got, src.Blob, src.Path, s.Commit)
			}
		}
	}
	if entries := corpusEntries(t, root); !slices.Equal(slices.Sorted(slices.Values(named)), entries) {
		t.Errorf("sources.yaml names %v, the corpus holds %v", named, entries)
	}
}

// gitBlob is the id git gives a file's content.
func gitBlob(content []byte) string {
	h := sha1.New() //nolint:gosec // Git's object id, compared, not a security measure.
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// marshalDocs returns documents as a YAML stream, keys sorted.
func marshalDocs(t *testing.T, docs []doc) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes()
}

// corpusEntries are the folders of the corpus that hold a composition, in
// order.
func corpusEntries(t *testing.T, root string) []string {
	t.Helper()
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(root, d.Name(), "composition.yaml")); d.IsDir() && err == nil {
			entries = append(entries, d.Name())
		}
	}
	return entries
}

// corpusFunctions writes the corpus's functions.yaml with each function's
// Development target pointed at the served function its package names:
// published compositions call patch-and-transform by names of their own.
func corpusFunctions(t *testing.T, path string, addresses map[string]string) string {
	t.Helper()
	fns := readDocs(t, path)
	for _, fn := range fns {
		pkg := harness.String(fn, "spec", "package")
		repo := pkg[strings.LastIndex(pkg, "/")+1:]
		repo, _, _ = strings.Cut(repo, ":")
		address, ok := addresses[repo]
		if !ok {
			t.Fatalf("%s: function %s's package %s is none the test serves", path, harness.String(fn, "metadata", "name"), pkg)
		}
		harness.Set(fn, address, "metadata", "annotations", annotationTarget)
	}
	return writeDocs(t, "functions", fns)
}

// maxRounds is how many reconciles a corpus composition may take to render
// every resource it composes.
const maxRounds = 8

// settle reconciles the composition alone, without function-dependencies,
// until it renders nothing new: each round's composed resources observed as
// the providers leave them (observe), and the XR with the status the
// composition patched into it, which later resources of many compositions
// read (a cluster's name, a project, an OIDC issuer). It returns that XR and
// the observed resources.
func settle(t *testing.T, r corpusRenderer, xr doc, composition doc) (doc, []doc) {
	t.Helper()
	var observed []doc
	var changed string
	for round := 1; round <= maxRounds; round++ {
		got := r.render(t, fmt.Sprintf("without function-dependencies, round %d", round), xr, composition, observed)
		if got.fatal != "" {
			t.Fatalf("without function-dependencies, the composition fails: %s", got.fatal)
		}
		next := harness.DeepCopy(t, xr)
		if status, ok := xrOf(t, got.out)["status"].(doc); ok {
			next["status"] = status
		}
		nextObserved := observe(t, got.out)
		if reflect.DeepEqual(next, xr) && reflect.DeepEqual(nextObserved, observed) {
			return xr, observed
		}
		before, err := yaml.Marshal(doc{"xr": xr, "observed": observed})
		if err != nil {
			t.Fatal(err)
		}
		after, err := yaml.Marshal(doc{"xr": next, "observed": nextObserved})
		if err != nil {
			t.Fatal(err)
		}
		changed = diff(string(before), string(after))
		xr, observed = next, nextObserved
	}
	t.Fatalf("the composition still renders something new after %d rounds; the last round changed:\n%s", maxRounds, changed)
	return nil, nil
}

// A corpusRenderer renders one corpus entry's XR with crank.
type corpusRenderer struct {
	crank          harness.Renderer
	functions, xrd string
}

// corpusOutput is one render: its output, or the Fatal result that stopped
// it (crank prints no output then, only the error).
type corpusOutput struct {
	out   output
	fatal string
}

func (r corpusRenderer) render(t *testing.T, what string, xr, composition doc, observed []doc) corpusOutput {
	t.Helper()
	args := []string{writeDocs(t, "xr", []doc{xr}), writeDocs(t, "composition", []doc{composition}), r.functions,
		"--xrd=" + r.xrd, "--include-function-results"}
	if len(observed) > 0 {
		args = append(args, "--observed-resources="+writeDocs(t, "observed", observed))
	}
	stdout, stderr, err := r.crank.Run(t, what, args)
	if err != nil {
		if res, ok := harness.FatalResult(stderr); ok {
			return corpusOutput{fatal: fmt.Sprintf("pipeline step %q returned a fatal result: %s", res.Step, res.Message)}
		}
		t.Fatalf("crank %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return corpusOutput{out: output{raw: stdout, docs: decode(t, stdout)}}
}

// pipelineOf returns a Pipeline composition as it is, and a classic one
// (mode Resources, which Crossplane v2 no longer renders) as Crossplane's own
// converter makes it, `crossplane beta convert pipeline-composition` of
// Crossplane v1.19.0's CLI (crank v2.2.0 has no such command): its resources,
// patchSets and environment become the input of one patch-and-transform
// step, which calls function-patch-and-transform by that name.
func pipelineOf(t *testing.T, path string) doc {
	t.Helper()
	c := readDocs(t, path)[0]
	if mode, _ := harness.Lookup(c, "spec", "mode").(string); mode == "Pipeline" {
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	out := filepath.Join(t.TempDir(), "pipeline-composition.yaml")
	cmd := exec.CommandContext(ctx, harness.Tool(t, "crank-v1"), "beta", "convert", "pipeline-composition", path, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crossplane beta convert pipeline-composition %s: %v\n%s", path, err, b)
	}
	c = readDocs(t, out)[0]
	if mode, _ := harness.Lookup(c, "spec", "mode").(string); mode != "Pipeline" {
		t.Fatalf("crossplane beta convert pipeline-composition made %s a composition of mode %q", path, mode)
	}
	return c
}

// withStep returns the composition with function-dependencies appended to
// its pipeline: before auto-ready where the composition has it, so that the
// Usages it adds are judged ready with the rest.
func withStep(t *testing.T, composition doc) doc {
	t.Helper()
	c := harness.DeepCopy(t, composition)
	pipeline := harness.List(c, "spec", "pipeline")
	at := slices.IndexFunc(pipeline, func(s any) bool {
		return strings.HasSuffix(harness.String(s.(doc), "functionRef", "name"), fnAutoReady)
	})
	if at < 0 {
		at = len(pipeline)
	}
	step := doc{"step": corpusStep, "functionRef": doc{"name": fnDependencies}, "input": harness.DeepCopy(t, corpusInput)}
	c["spec"].(doc)["pipeline"] = slices.Insert(pipeline, at, any(step))
	return c
}

// summary is what a golden file pins of one render: the Usages the
// function adds, the XR's DeletionOrdered condition and the step's results,
// or the Fatal result that stopped the render.
func summary(t *testing.T, name string, r corpusOutput) doc {
	t.Helper()
	s := doc{"render": name}
	if r.fatal != "" {
		s["fatal"] = r.fatal
		return s
	}
	var usages []any
	for _, d := range r.out.docs[1:] {
		if harness.String(d, "metadata", "labels", oracle.UsageLabel) == "true" {
			usages = append(usages, doc{
				"kind": d["kind"], "name": harness.String(d, "metadata", "name"),
				"resource": harness.String(d, "metadata", "annotations", annotationResource), "spec": d["spec"],
			})
		}
	}
	if len(usages) > 0 {
		s["usages"] = usages
	}
	if c := condition(xrOf(t, r.out), conditionType); c != nil {
		s["condition"] = doc{"status": c["status"], "reason": c["reason"], "message": c["message"]}
	}
	var rs []any
	for _, res := range stepResults(r.out, corpusStep) {
		rs = append(rs, doc{"severity": res.severity, "message": res.message})
	}
	if len(rs) > 0 {
		s["results"] = rs
	}
	return s
}
