//go:build e2e

// Package schema validates every example input and every rendered golden
// output against the real schemas with `crossplane beta validate`, offline:
// provider-kubernetes v1.4.1's CRDs, the examples' XRDs, the function's own
// input CRD, function-patch-and-transform's input CRD, and Crossplane's CRDs
// (Compositions, XRDs, Functions, and the protection.crossplane.io Usages the
// function adds).
//
// crossplane beta validate downloads the packages it is given and the
// Crossplane image's CRDs; this test gives it only CRD and XRD files, and an
// already-filled cache entry for the Crossplane image, and runs it behind an
// unreachable proxy so that any download fails instead of passing by luck.
package schema

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// The modules whose schemas the resources are validated against. Crossplane
// is the version tools/crank pins, so the CLI and the Crossplane CRDs agree;
// function-patch-and-transform is the version tools/ pins for the render
// tests, whose input the examples' first pipeline step uses.
const (
	providerKubernetes = "github.com/crossplane-contrib/provider-kubernetes@v1.4.1"
	crossplane         = "github.com/crossplane/crossplane/v2@v2.2.0"
	patchAndTransform  = "github.com/crossplane-contrib/function-patch-and-transform@v0.10.7"

	// crossplaneImage is the image whose CRDs crossplane beta validate
	// always loads; its cache entry is filled from the crossplane module.
	crossplaneImage = "xpkg.crossplane.io/crossplane/crossplane:v2.2.0"
)

// inputGVK is how crossplane beta validate names the function's input in its report.
const inputGVK = "dependencies.fn.crossplane.io/v1beta1, Kind=Input"

// validator runs crossplane beta validate against one set of extensions.
type validator struct {
	crank string
	ext   string // A folder of CRDs and XRDs.
	extV1 string // The same, with the Crossplane v1 XRD of an XR defined for both generations.
	cache string // The validate cache, holding the Crossplane image's entry.
	tmp   string // Where resources are written for validation.

	xrds    []map[string]any // The examples' XRDs.
	xrKinds map[string]bool  // Their XR kinds, as "group/Kind".
}

// report is what one validation run printed.
type report struct {
	output    string
	err       error
	total     int
	missing   int
	succeeded int
	failed    int
	// unserved counts the resources validated of the groups whose schemas
	// no one can have here (unservedGroup): the missing schemas allowed.
	unserved int
}

// unservedGroup tells the API groups of the providers whose CRDs the Go
// module proxy doesn't serve, so that no test here can have their schemas:
// provider-helm's, and Upbound's AWS, GCP and Azure providers'. The examples
// shaped on public compositions use them; their resources are left
// unvalidated, and every other kind must have its schema.
func unservedGroup(group string) bool {
	return group == "helm.crossplane.io" || group == "upbound.io" || strings.HasSuffix(group, ".upbound.io")
}

// missingSchema is a report line for a kind without a schema.
var missingSchema = regexp.MustCompile(`^\[!\] could not find CRD/XRD for: (?:([^/,]+)/)?[^/,]+, Kind=`)

// problems are the report's error and warning lines: schema and CEL
// errors ([x]) and schemas missing or defaults not applicable ([!]), but
// for the schemas of unserved groups.
func (r report) problems() []string {
	var p []string
	for _, l := range strings.Split(r.output, "\n") {
		if m := missingSchema.FindStringSubmatch(l); m != nil && unservedGroup(m[1]) {
			continue
		}
		if strings.HasPrefix(l, "[x]") || strings.HasPrefix(l, "[!]") {
			p = append(p, l)
		}
	}
	return p
}

// count is how many resources of a kind were validated successfully.
func (r report) count(gvk string) int {
	return strings.Count(r.output, "[✓] "+gvk+", ")
}

var summary = regexp.MustCompile(`Total (\d+) resources: (\d+) missing schemas, (\d+) success cases, (\d+) failure cases`)

// validate writes docs to a file named after name and validates them. Every
// resource must have a schema: a kind the test has no CRD for fails.
func (v *validator) validate(t *testing.T, name string, docs []map[string]any) report {
	t.Helper()
	file := filepath.Join(v.tmp, strings.NewReplacer("/", "_", " ", "_").Replace(name)+".yaml")
	harness.WriteDocuments(t, file, docs)
	ext := v.ext
	if v1Generation(name) {
		ext = v.extV1
	}
	cmd := exec.Command(v.crank, "beta", "validate", ext, file,
		"--cache-dir="+v.cache, "--crossplane-image="+crossplaneImage, "--error-on-missing-schemas")
	// An unreachable proxy: if the CLI tried to download a package after
	// all, it fails at once, on any machine, instead of depending on the
	// network this test must not need.
	cmd.Env = append(os.Environ(), "HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1", "NO_PROXY=", "https_proxy=", "http_proxy=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	r := report{output: string(out), err: err}
	m := summary.FindStringSubmatch(r.output)
	if m == nil {
		t.Fatalf("crossplane beta validate printed no summary for %s: %v\n%s", name, err, out)
	}
	r.total, _ = strconv.Atoi(m[1])
	r.missing, _ = strconv.Atoi(m[2])
	r.succeeded, _ = strconv.Atoi(m[3])
	r.failed, _ = strconv.Atoi(m[4])
	for _, d := range docs {
		if unservedGroup(group(harness.String(d, "apiVersion"))) {
			r.unserved++
		}
	}
	return r
}

// unaccepted returns the report's problems that accept (nil accepts none)
// doesn't accept, and a problem if its counts don't add up: every resource
// had a schema, and each one that failed failed only with accepted errors.
func (r report) unaccepted(accept func(line string) bool) []string {
	var problems []string
	accepted := map[string]bool{} // The resources with accepted errors.
	for _, line := range r.problems() {
		if accept != nil && accept(line) {
			accepted[strings.SplitN(line, " : ", 2)[0]] = true
			continue
		}
		problems = append(problems, line)
	}
	if len(problems) == 0 && (r.missing != r.unserved || r.failed != len(accepted) || r.succeeded+r.failed+r.missing != r.total || (r.err != nil && len(accepted) == 0 && r.unserved == 0)) {
		problems = append(problems, fmt.Sprintf("%d resources: %d without schema (%d of unserved groups), %d failed, %d with accepted errors only: %v", r.total, r.missing, r.unserved, r.failed, len(accepted), r.err))
	}
	return problems
}

// mustPass validates docs and fails the test on any problem accept doesn't
// accept.
func (v *validator) mustPass(t *testing.T, name string, docs []map[string]any, accept func(line string) bool) report {
	t.Helper()
	r := v.validate(t, name, docs)
	if problems := r.unaccepted(accept); len(problems) > 0 {
		t.Fatalf("%s does not validate:\n%s\n\n%s", name, strings.Join(problems, "\n"), r.output)
	}
	// The CLI also validates each Composition step's input; it can only add
	// resources, never drop one.
	if r.total < len(docs) {
		t.Fatalf("%s: %d documents but only %d validated:\n%s", name, len(docs), r.total, r.output)
	}
	return r
}

func TestSchemas(t *testing.T) {
	root := harness.Root(t)
	v := setup(t, root)

	sources := harness.YAMLFiles(t, filepath.Join(root, "example"))
	if len(sources) == 0 {
		t.Fatal("example/ holds no YAML: there is nothing to validate")
	}
	// The golden files of the render tests: what crossplane render printed
	// for each example. Validated whenever they exist.
	goldens := harness.YAMLFiles(t, filepath.Join(root, "test", "e2e", "render", "testdata"))
	if len(goldens) == 0 {
		t.Log("test/e2e/render/testdata holds no YAML yet: no rendered output to validate")
	}

	start := time.Now()
	for i, file := range append(sources, goldens...) {
		rendered := i >= len(sources)
		rel, _ := filepath.Rel(root, file)
		t.Run(rel, func(t *testing.T) {
			docs := resources(t, file)
			if len(docs) == 0 {
				t.Skip("no API resources in this file")
			}
			var accept func(string) bool
			if rendered {
				accept = v.partialXRs(t, docs)
			}
			r := v.mustPass(t, rel, docs, accept)
			if want := inputSteps(docs); r.count(inputGVK) != want {
				t.Errorf("%d pipeline steps have function-dependencies input, but %d Inputs validated:\n%s", want, r.count(inputGVK), r.output)
			}

			for _, comp := range docs {
				if harness.String(comp, "kind") != "Composition" {
					continue
				}
				t.Run("templates of "+harness.String(comp, "metadata", "name"), func(t *testing.T) {
					if problems := v.templates(t, rel, comp); len(problems) > 0 {
						t.Errorf("the Composition's resource templates don't validate:\n%s", strings.Join(problems, "\n"))
					}
				})
			}
		})
	}
	t.Logf("validated %d example and %d golden files in %s", len(sources), len(goldens), time.Since(start).Round(time.Millisecond))

	// The same validation must reject what provider-kubernetes, Crossplane or
	// the function would reject; otherwise the checks above prove nothing.
	t.Run("rejects invalid resources", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			doc  string
			want string
		}{{
			name: "reference without the referenced object's name",
			doc:  brokenReference,
			want: "spec.references[0].dependsOn.name: Required value",
		}, {
			name: "misspelt field",
			doc:  misspeltField,
			want: `unknown field: "referencez"`,
		}, {
			name: "unknown mode in the function's input",
			doc:  bogusMode,
			want: `mode: Unsupported value: "Bogus"`,
		}, {
			name: "Usage that names no used resource",
			doc:  unnamedUsage,
			want: "spec.of: Invalid value: either a resource reference or a resource selector should be set.",
		}} {
			t.Run(tc.name, func(t *testing.T) {
				r := v.validate(t, "broken "+tc.name, harness.Documents(t, []byte(tc.doc)))
				if r.err == nil || r.failed == 0 {
					t.Fatalf("crossplane beta validate accepted an invalid resource:\n%s", r.output)
				}
				if !strings.Contains(r.output, tc.want) {
					t.Errorf("crossplane beta validate did not report %q:\n%s", tc.want, r.output)
				}
			})
		}
		// A rendered XR may lack its spec, but nothing else: a condition
		// without its status must still be rejected.
		t.Run("rendered XR with a condition without status", func(t *testing.T) {
			xr := v.renderedXR(t)
			r := v.validate(t, "broken rendered XR", []map[string]any{xr})
			problems := r.unaccepted(v.partialXRs(t, []map[string]any{xr}))
			if len(problems) != 1 || !strings.Contains(problems[0], "status.conditions[0].status: Required value") {
				t.Errorf("want exactly the condition's missing status reported, got %q\n%s", problems, r.output)
			}
		})
		// A template may omit a required field only where its patches write
		// it: a template whose reference no patch names must be rejected.
		t.Run("template with a reference no patch names", func(t *testing.T) {
			comps := harness.Documents(t, []byte(unpatchedTemplate))
			problems := v.templates(t, "broken template", comps[0])
			if len(problems) != 1 || !strings.Contains(problems[0], "spec.references[0].dependsOn.name: Required value") {
				t.Errorf("want exactly the missing dependsOn.name reported, got %q", problems)
			}
		})
	})
}

// partialXRs accepts, for rendered output, an XR's missing required spec
// fields. crossplane render prints the desired XR, which holds only what
// Crossplane writes to it (metadata, spec.crossplane, status), not the user's
// spec: crank prints no spec at all unless --include-full-xr, the current CLI
// prints spec.crossplane.resourceRefs only. The user's spec is validated in
// the example's own XR; everything else in a rendered XR (types, unknown
// fields, status and its conditions) is still validated here.
//
// The same goes for the partial objects crossplane operation render prints
// after the Operation: apiVersion, kind and metadata only, which Crossplane
// applies with server-side apply, so that the API server validates them
// merged into the live object, whose spec the example's cluster state holds.
func (v *validator) partialXRs(t *testing.T, docs []map[string]any) func(string) bool {
	t.Helper()
	operation := false
	for _, d := range docs {
		operation = operation || (harness.String(d, "apiVersion") == "ops.crossplane.io/v1alpha1" && harness.String(d, "kind") == "Operation")
	}
	partial := map[string]string{}
	for _, d := range docs {
		key := fmt.Sprintf("%s, Kind=%s, %s", harness.String(d, "apiVersion"), harness.String(d, "kind"), harness.String(d, "metadata", "name"))
		switch {
		case v.xrKinds[group(harness.String(d, "apiVersion"))+"/"+harness.String(d, "kind")]:
			partial[key] = "the rendered XR"
		case operation && onlyIdentity(d):
			partial[key] = "the partial object the Operation applies,"
		}
	}
	return func(line string) bool {
		m := requiredLine.FindStringSubmatch(line)
		if m == nil || partial[m[1]+", "+m[2]] == "" {
			return false
		}
		if m[3] == "spec" || strings.HasPrefix(m[3], "spec.") {
			t.Logf("accepted in %s %s: %s: Required value", partial[m[1]+", "+m[2]], m[2], m[3])
			return true
		}
		return false
	}
}

// onlyIdentity is true for an object of apiVersion, kind and metadata alone.
func onlyIdentity(d map[string]any) bool {
	for k := range d {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			return false
		}
	}
	return true
}

// renderedXR returns an XR of the first example XRD's kind as crossplane
// render prints it, without spec, with a Ready condition that lacks its
// status.
func (v *validator) renderedXR(t *testing.T) map[string]any {
	t.Helper()
	if len(v.xrds) == 0 {
		t.Fatal("the examples have no XRD")
	}
	// An XRD whose XR may lack its spec: the XR below has none, so that
	// its condition is its one error.
	i := slices.IndexFunc(v.xrds, func(x map[string]any) bool {
		versions := harness.List(x, "spec", "versions")
		return len(versions) > 0 && !slices.Contains(harness.Strings(asMap(versions[0]), "schema", "openAPIV3Schema", "required"), "spec")
	})
	if i < 0 {
		t.Fatal("every example XRD requires its XR's spec")
	}
	xrd := v.xrds[i]
	versions := harness.List(xrd, "spec", "versions")
	if len(versions) == 0 {
		t.Fatalf("XRD %s has no versions", harness.String(xrd, "metadata", "name"))
	}
	return map[string]any{
		"apiVersion": harness.String(xrd, "spec", "group") + "/" + harness.String(asMap(versions[0]), "name"),
		"kind":       harness.String(xrd, "spec", "names", "kind"),
		"metadata":   map[string]any{"name": "broken-xr"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "reason": "Available", "lastTransitionTime": "2024-01-01T00:00:00Z",
		}}},
	}
}

// requiredLine is a report line for a missing required field:
// [x] schema validation error <group/version>, Kind=<kind>, <name> : <path>: Required value.
var requiredLine = regexp.MustCompile(`^\[x\] schema validation error (\S+, Kind=[^,]*), (.*?) : (.*?): Required value$`)

// templates validates the Objects a Composition's patch-and-transform step
// renders from, before patching. A template may lack a required field its
// patches fill in (the referenced Object's name is patched from the XR's
// name), and nothing else: every other error, and a missing field no patch
// writes, is returned as a problem.
func (v *validator) templates(t *testing.T, source string, comp map[string]any) []string {
	t.Helper()
	var bases []map[string]any
	patched := map[string][]string{}
	steps := harness.List(comp, "spec", "pipeline")
	for _, s := range steps {
		in, _ := harness.Lookup(asMap(s), "input").(map[string]any)
		if group(harness.String(in, "apiVersion")) != "pt.fn.crossplane.io" {
			continue
		}
		sets := map[string][]any{}
		ps, _ := in["patchSets"].([]any)
		for _, p := range ps {
			sets[harness.String(asMap(p), "name")] = harness.List(asMap(p), "patches")
		}
		rs, _ := in["resources"].([]any)
		for _, r := range rs {
			name := harness.String(asMap(r), "name")
			base, _ := harness.Lookup(asMap(r), "base").(map[string]any)
			if base == nil {
				continue
			}
			base = harness.DeepCopy(t, base)
			// The report names a resource by metadata.name, which the
			// schema doesn't constrain: use the template's name, unique in
			// its Composition, to tell whose errors are whose.
			meta, _ := base["metadata"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
				base["metadata"] = meta
			}
			meta["name"] = name
			bases = append(bases, base)
			patches := harness.List(asMap(r), "patches")
			patched[name] = toFieldPaths(patches, sets)
		}
	}
	if len(bases) == 0 {
		return nil
	}
	r := v.validate(t, source+" "+harness.String(comp, "metadata", "name")+" templates", bases)
	if r.total != len(bases) || r.missing != r.unserved {
		return []string{fmt.Sprintf("%d templates, %d validated, %d without schema:\n%s", len(bases), r.total, r.missing, r.output)}
	}
	var problems []string
	accepted := 0
	for _, line := range r.problems() {
		if !allowed(line, patched) {
			problems = append(problems, line)
			continue
		}
		accepted++
	}
	t.Logf("validated %d templates; accepted %d missing required fields that their patches write", len(bases), accepted)
	if len(problems) == 0 && r.err != nil && r.failed == 0 && r.unserved == 0 {
		problems = append(problems, fmt.Sprintf("crossplane beta validate failed: %v\n%s", r.err, r.output))
	}
	return problems
}

// allowed reports whether line is a missing required field that the named
// template's patches write, or that holds a field they write.
func allowed(line string, patched map[string][]string) bool {
	m := requiredLine.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	name, missing := m[2], m[3]
	for _, p := range patched[name] {
		if p == missing || strings.HasPrefix(p, missing+".") || strings.HasPrefix(p, missing+"[") {
			return true
		}
	}
	return false
}

// toFieldPaths returns the paths of the composed resource that patches write,
// with patch sets expanded. patch-and-transform defaults a patch's type to
// FromCompositeFieldPath and its toFieldPath to its fromFieldPath.
func toFieldPaths(patches []any, sets map[string][]any) []string {
	var paths []string
	for _, p := range patches {
		pm := asMap(p)
		switch harness.String(pm, "type") {
		case "PatchSet":
			paths = append(paths, toFieldPaths(sets[harness.String(pm, "patchSetName")], nil)...)
		case "", "FromCompositeFieldPath", "FromEnvironmentFieldPath":
			to := harness.String(pm, "toFieldPath")
			if to == "" {
				to = harness.String(pm, "fromFieldPath")
			}
			paths = append(paths, to)
		case "CombineFromComposite", "CombineFromEnvironment":
			paths = append(paths, harness.String(pm, "toFieldPath"))
		}
	}
	return paths
}

// inputSteps counts the Composition pipeline steps that give
// function-dependencies an input, and the Inputs of their own.
func inputSteps(docs []map[string]any) int {
	n := 0
	for _, d := range docs {
		if harness.String(d, "kind") == "Input" && group(harness.String(d, "apiVersion")) == "dependencies.fn.crossplane.io" {
			n++ // An Input of its own, such as an example's v1/input.yaml.
			continue
		}
		if harness.String(d, "kind") != "Composition" {
			continue
		}
		steps := harness.List(d, "spec", "pipeline")
		for _, s := range steps {
			if group(harness.String(asMap(s), "input", "apiVersion")) == "dependencies.fn.crossplane.io" {
				n++
			}
		}
	}
	return n
}

// setup gathers the extensions, fills the validate cache's entry for the
// Crossplane image, and returns a validator.
func setup(t *testing.T, root string) *validator {
	t.Helper()
	start := time.Now()
	v := &validator{crank: harness.Tool(t, "crank"), tmp: t.TempDir(), xrKinds: map[string]bool{}}
	v.ext = filepath.Join(v.tmp, "extensions")
	v.extV1 = filepath.Join(v.tmp, "extensions-v1")
	v.cache = filepath.Join(v.tmp, "cache")

	own := map[string][]byte{}
	for _, f := range harness.YAMLFiles(t, filepath.Join(root, "package", "input")) {
		own[filepath.Base(f)] = harness.ReadFile(t, f)
	}
	if len(own) == 0 {
		t.Fatal("package/input holds no CRD")
	}
	for name, files := range map[string]map[string][]byte{
		"provider-kubernetes":          moduleFiles(t, providerKubernetes, "package/crds"),
		"function-patch-and-transform": moduleFiles(t, patchAndTransform, "package/input"),
		"crossplane":                   moduleFiles(t, crossplane, "cluster/crds"),
		"function-dependencies":        own,
	} {
		copyFiles(t, v.ext, name, files)
		copyFiles(t, v.extV1, name, files)
	}

	// The examples' XRDs define their XRs' schemas. An example of both
	// Crossplane generations defines its XR twice, the v1 XRD in its v1
	// folder: what is of the v1 generation (that folder, crank-v1's
	// renders) is validated against it, the rest against the other.
	byKind, byKindV1 := map[string]map[string]any{}, map[string]map[string]any{}
	var kinds []string
	for _, f := range harness.YAMLFiles(t, filepath.Join(root, "example")) {
		for _, d := range harness.ReadDocuments(t, f) {
			if harness.String(d, "kind") != "CompositeResourceDefinition" {
				continue
			}
			kind := harness.String(d, "spec", "group") + "/" + harness.String(d, "spec", "names", "kind")
			if !v.xrKinds[kind] {
				kinds = append(kinds, kind)
			}
			v.xrKinds[kind] = true
			if v1Generation(f) || byKindV1[kind] == nil {
				byKindV1[kind] = d
			}
			if !v1Generation(f) || byKind[kind] == nil {
				byKind[kind] = d
			}
		}
	}
	var xrdsV1 []map[string]any
	for _, kind := range kinds {
		v.xrds = append(v.xrds, byKind[kind])
		xrdsV1 = append(xrdsV1, byKindV1[kind])
	}
	harness.WriteDocuments(t, filepath.Join(v.ext, "xrds.yaml"), v.xrds)
	harness.WriteDocuments(t, filepath.Join(v.extV1, "xrds.yaml"), xrdsV1)

	// crossplane beta validate always loads the Crossplane image's CRDs, and
	// downloads them unless its cache holds them (image "name:tag" cached as
	// the folder "name@tag"). They are passed as extension files above, so
	// the entry can stay empty.
	if err := os.MkdirAll(filepath.Join(v.cache, strings.ReplaceAll(crossplaneImage, ":", "@")), 0o750); err != nil {
		t.Fatal(err)
	}
	t.Logf("gathered the schemas in %s", time.Since(start).Round(time.Millisecond))
	return v
}

// v1Generation tells whether a file is of an example's Crossplane v1
// generation: in a folder named v1, or rendered by crank-v1.
func v1Generation(path string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "v1") || strings.Contains(filepath.Base(path), ".crank-v1.")
}

// moduleFiles returns the YAML files in dir of a module version, by name,
// from the module cache (downloading it from the module proxy if missing).
func moduleFiles(t *testing.T, module, dir string) map[string][]byte {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", module)
	// Outside the function's module, so the download can't touch its go.sum.
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var info struct{ Path, Version, Dir, Zip, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("go mod download -json %s: %v %v\n%s%s", module, runErr, err, out, stderr.String())
	}
	files := map[string][]byte{}
	switch {
	case info.Dir != "":
		for _, f := range harness.YAMLFiles(t, filepath.Join(info.Dir, filepath.FromSlash(dir))) {
			files[filepath.Base(f)] = harness.ReadFile(t, f)
		}
	case info.Zip != "":
		// The module's go.mod can ask for a newer Go than this one
		// (provider-kubernetes v1.4.1 says go 1.27.1): go mod download then
		// fetches and verifies the zip but won't extract it. The CRDs are
		// data, so read them from the zip.
		zr, err := zip.OpenReader(info.Zip)
		if err != nil {
			t.Fatalf("%s: %v", info.Zip, err)
		}
		defer zr.Close()
		prefix := info.Path + "@" + info.Version + "/" + dir + "/"
		for _, f := range zr.File {
			if !strings.HasPrefix(f.Name, prefix) || !harness.IsYAML(f.Name) || strings.Contains(strings.TrimPrefix(f.Name, prefix), "/") {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[path.Base(f.Name)] = b
		}
	default:
		t.Fatalf("go mod download -json %s: %s %v\n%s", module, info.Error, runErr, stderr.String())
	}
	if len(files) == 0 {
		t.Fatalf("%s has no YAML in %s", module, dir)
	}
	return files
}

// resources returns the documents of a file that are API resources. The
// render.crossplane.io documents crossplane render prints (Results, Context)
// are its own report, not resources of any API, so they have no schema.
func resources(t *testing.T, file string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, d := range harness.ReadDocuments(t, file) {
		if g := group(harness.String(d, "apiVersion")); g == "render.crossplane.io" || builtIn[g] {
			continue
		}
		docs = append(docs, d)
	}
	return docs
}

// builtIn are the API groups of Kubernetes' own kinds, which have no CRD for
// crossplane beta validate to check them against: the control-plane test
// has the real API server check every example object of these groups
// instead (TestExamplesBuiltInObjectsAreAccepted).
var builtIn = map[string]bool{"": true, "apps": true, "rbac.authorization.k8s.io": true}

func copyFiles(t *testing.T, dir, prefix string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, prefix+"_"+name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// group returns the API group of an apiVersion; "" for the core group.
func group(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// brokenReference references an Object without naming it, which
// provider-kubernetes can't resolve.
const brokenReference = `
apiVersion: kubernetes.crossplane.io/v1alpha2
kind: Object
metadata:
  name: broken-reference
spec:
  references:
  - dependsOn:
      apiVersion: kubernetes.crossplane.io/v1alpha2
      kind: Object
  forProvider:
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app-config
        namespace: app
`

// misspeltField has a typo the API server would prune without a word, and
// with it the reference.
const misspeltField = `
apiVersion: kubernetes.m.crossplane.io/v1alpha1
kind: Object
metadata:
  name: misspelt-field
  namespace: app
spec:
  referencez:
  - dependsOn:
      apiVersion: kubernetes.m.crossplane.io/v1alpha1
      kind: Object
      name: app-namespace
  forProvider:
    manifest:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: app-config
`

// bogusMode gives function-dependencies a mode it doesn't have, inside a
// Composition, as users write it.
const bogusMode = `
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: bogus-mode
spec:
  compositeTypeRef:
    apiVersion: platform.example.org/v1alpha1
    kind: AppStack
  mode: Pipeline
  pipeline:
  - step: order-deletion
    functionRef:
      name: function-dependencies
    input:
      apiVersion: dependencies.fn.crossplane.io/v1beta1
      kind: Input
      mode: Bogus
`

// unnamedUsage is a Usage, as function-dependencies adds for an external
// dependency, whose used resource has neither a reference nor a selector:
// Crossplane's protection.crossplane.io CRD rejects it with a CEL rule.
const unnamedUsage = `
apiVersion: protection.crossplane.io/v1beta1
kind: Usage
metadata:
  name: unnamed-usage
  namespace: team-checkout
spec:
  of:
    apiVersion: v1
    kind: Secret
  by:
    apiVersion: kubernetes.m.crossplane.io/v1alpha1
    kind: Object
    resourceRef:
      name: checkout-database-url
  reason: database-url depends on Secret team-checkout/checkout-db-app (function-dependencies)
  replayDeletion: true
`

// unpatchedTemplate has a template whose reference names no Object, and no
// patch that would name one.
const unpatchedTemplate = `
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: unpatched-template
spec:
  compositeTypeRef:
    apiVersion: platform.example.org/v1alpha1
    kind: AppStack
  mode: Pipeline
  pipeline:
  - step: render-objects
    functionRef:
      name: function-patch-and-transform
    input:
      apiVersion: pt.fn.crossplane.io/v1beta1
      kind: Resources
      resources:
      - name: app-config
        base:
          apiVersion: kubernetes.crossplane.io/v1alpha2
          kind: Object
          spec:
            references:
            - dependsOn:
                apiVersion: kubernetes.crossplane.io/v1alpha2
                kind: Object
            forProvider:
              manifest:
                apiVersion: v1
                kind: ConfigMap
        patches:
        - type: FromCompositeFieldPath
          fromFieldPath: metadata.name
          toFieldPath: spec.forProvider.manifest.metadata.name
`
