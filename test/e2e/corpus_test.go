//go:build e2e

// The corpus: compositions published in public repositories, kept verbatim
// under testdata/corpus/<entry>/composition.yaml (testdata/corpus/SOURCES.md
// says where each comes from, at which commit, under which license), each with
// an XR of ours that its XRD accepts. TestCorpus renders each through its own
// pipeline with function-dependencies appended, inferring everything it can,
// as a user who turns `infer` on for a composite that works today would.
//
// No composite may be worse for it: no result of any step is Fatal, on the
// first reconcile (nothing exists yet) nor once the providers have resolved
// every selector (the observed state, derived from what the composition
// renders without the function, as the API server returns it). What the
// function makes of each, its Usages, its DeletionOrdered condition and its
// results, is pinned in testdata/corpus/<entry>/golden.yaml; run with -update
// to rewrite them.
package e2e

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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/test/harness"
	"github.com/crossplane-contrib/function-dependencies/test/oracle"
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

// minCorpus is how many published compositions the corpus must hold.
const minCorpus = 10

// TestCorpus renders every corpus entry twice, as its first reconcile and
// once its selectors are resolved, and checks that no step reports a Fatal
// result; the Usages, condition and results are compared with the goldens.
func TestCorpus(t *testing.T) {
	root := filepath.Join("testdata", "corpus")
	entries := corpusEntries(t, root)
	if len(entries) < minCorpus {
		t.Fatalf("the corpus holds %d compositions, want at least %d", len(entries), minCorpus)
	}

	// The functions are stateless: one process each serves every render.
	// No corpus composition calls auto-ready: functions.yaml lists, and the
	// test serves, only what they call.
	addresses := map[string]string{
		fnDependencies:      harness.Serve(t, harness.Function(t), "--debug"),
		fnPatchAndTransform: harness.Serve(t, harness.Tool(t, fnPatchAndTransform)),
	}
	crank := harness.Tool(t, "crank")
	functions := corpusFunctions(t, filepath.Join(root, "functions.yaml"), addresses)

	for _, entry := range entries {
		t.Run(entry, func(t *testing.T) {
			dir := filepath.Join(root, entry)
			r := corpusRenderer{crank: crank, functions: functions, xrd: filepath.Join(dir, "xrd.yaml")}
			composition := pipelineOf(t, readDocs(t, filepath.Join(dir, "composition.yaml"))[0])
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
			got := check("selectors resolved", xr, observed)
			// Once Crossplane has applied that: the Usages exist and the
			// finalizers are on their targets.
			if got.fatal == "" {
				check("applied", xr, applyFinalizers(t, observed, composedByName(t, got.out)))
			}

			var buf bytes.Buffer
			for _, d := range renders {
				b, err := yaml.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				buf.WriteString("---\n")
				buf.Write(b)
			}
			golden(t, filepath.Join(dir, "golden.yaml"), buf.Bytes())
		})
	}
}

// permissive are the licenses under which a corpus entry may be kept
// verbatim in this repository.
var permissive = []string{"Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause"}

// A corpusSource is one entry of testdata/corpus/sources.yaml.
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
	root := filepath.Join("testdata", "corpus")
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
	crank, functions, xrd string
}

// corpusOutput is one render: its output, or the Fatal result that stopped
// it (crank prints no output then, only the error).
type corpusOutput struct {
	out   output
	fatal string
}

// fatalResult is how crank reports a step's Fatal result, on which it stops.
var fatalResult = regexp.MustCompile(`(?s)pipeline step "[^"]*" returned a fatal result: .*`)

func (r corpusRenderer) render(t *testing.T, what string, xr, composition doc, observed []doc) corpusOutput {
	t.Helper()
	args := []string{"render", writeDocs(t, "xr", []doc{xr}), writeDocs(t, "composition", []doc{composition}), r.functions,
		"--xrd=" + r.xrd, "--include-function-results"}
	if len(observed) > 0 {
		args = append(args, "--observed-resources="+writeDocs(t, "observed", observed))
	}
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.crank, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("crank rendered %s in %s", what, time.Since(start).Round(time.Millisecond))
	if err != nil {
		if m := fatalResult.Find(stderr.Bytes()); m != nil {
			return corpusOutput{fatal: strings.TrimSpace(string(m))}
		}
		t.Fatalf("crank %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	raw := normalise(stdout.Bytes())
	return corpusOutput{out: output{raw: raw, docs: decode(t, raw)}}
}

// pipelineOf returns a Pipeline composition as it is, and a classic one
// (mode Resources, which Crossplane v2 no longer renders) converted as
// Crossplane v1.19's `crossplane beta convert pipeline-composition` converts
// it: its resources, patchSets and environment become the input of one
// patch-and-transform step, with the types the classic mode defaulted set.
// The converter's other rules (merge options, math transforms) are for
// fields no corpus entry has: the test refuses such a composition rather
// than convert it wrongly.
func pipelineOf(t *testing.T, c doc) doc {
	t.Helper()
	spec, _ := c["spec"].(doc)
	if mode, _ := spec["mode"].(string); mode == "Pipeline" {
		return c
	}
	c = harness.DeepCopy(t, c)
	spec = c["spec"].(doc)
	input := doc{"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources"}
	if env, ok := spec["environment"].(doc); ok {
		if patches, ok := env["patches"].([]any); ok {
			input["environment"] = doc{"patches": convertPatches(t, patches)}
			delete(env, "patches")
		}
		if len(env) == 0 {
			delete(spec, "environment")
		}
	}
	if sets, ok := spec["patchSets"].([]any); ok {
		for _, s := range sets {
			sd := s.(doc)
			sd["patches"] = convertPatches(t, harness.List(sd, "patches"))
		}
		input["patchSets"] = sets
		delete(spec, "patchSets")
	}
	resources := harness.List(c, "spec", "resources")
	for i, r := range resources {
		rd := r.(doc)
		if _, ok := rd["name"]; !ok {
			rd["name"] = fmt.Sprintf("resource-%d", i)
		}
		for _, cd := range harness.List(rd, "connectionDetails") {
			cdd := cd.(doc)
			if _, ok := cdd["type"]; !ok {
				switch {
				case cdd["value"] != nil:
					cdd["type"] = "FromValue"
				case cdd["fromFieldPath"] != nil:
					cdd["type"] = "FromFieldPath"
				case cdd["fromConnectionSecretKey"] != nil:
					cdd["type"] = "FromConnectionSecretKey"
				}
			}
			if _, ok := cdd["name"]; !ok && cdd["type"] == "FromConnectionSecretKey" {
				cdd["name"] = cdd["fromConnectionSecretKey"]
			}
		}
		if patches, ok := rd["patches"].([]any); ok {
			rd["patches"] = convertPatches(t, patches)
		}
	}
	input["resources"] = resources
	delete(spec, "resources")
	spec["mode"] = "Pipeline"
	spec["pipeline"] = []any{doc{
		"step":        "patch-and-transform",
		"functionRef": doc{"name": fnPatchAndTransform},
		"input":       input,
	}}
	return c
}

// convertPatches sets what a classic patch left to its defaults: the
// patch's type, FromCompositeFieldPath, and a string transform's type,
// from the field it sets.
func convertPatches(t *testing.T, patches []any) []any {
	t.Helper()
	for _, p := range patches {
		pd := p.(doc)
		if _, ok := pd["type"]; !ok {
			pd["type"] = "FromCompositeFieldPath"
		}
		if harness.Lookup(pd, "policy", "mergeOptions") != nil {
			t.Fatalf("patch %v has merge options, which the test doesn't convert", pd)
		}
		for _, tr := range harness.List(pd, "transforms") {
			td := tr.(doc)
			if td["math"] != nil {
				t.Fatalf("transform %v is a math transform, which the test doesn't convert", td)
			}
			s, ok := td["string"].(doc)
			if !ok {
				continue
			}
			if _, ok := td["type"]; !ok {
				td["type"] = "string"
			}
			if _, ok := s["type"]; !ok {
				for field, typ := range map[string]string{"fmt": "Format", "convert": "Convert", "regexp": "Regexp"} {
					if s[field] != nil {
						s["type"] = typ
					}
				}
			}
		}
	}
	return patches
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
