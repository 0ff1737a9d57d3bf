//go:build e2e

// Package xpkg builds the function's Crossplane packages with hack/xpkg.sh,
// one for linux/amd64 and one for linux/arm64, offline and without Docker,
// and checks what Crossplane's package manager will read from each: the
// package.yaml layer (the Function's metadata and the input CRD) and the
// embedded runtime image it runs. It pushes both as one multi-platform
// package to a registry on loopback, reads the index back, and runs the
// arm64 binary a node would pull under emulation (qemu-user-static).
//
// An xpkg is an image tarball, so the package is read with the standard
// library only, and the registry with the pinned crane: the function's go.mod
// stays free of go-containerregistry.
package xpkg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// The keys Crossplane's xpkg build labels the image config with: a label
// io.crossplane.xpkg:<layer digest> marks the layer holding package.yaml
// ("base") and the one holding the examples ("upbound"); every other layer
// belongs to the embedded runtime image.
const (
	labelPrefix       = "io.crossplane.xpkg:"
	baseAnnotation    = "base"
	examplesAnnotaton = "upbound"
)

// manifest is one entry of an image tarball's manifest.json.
type manifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// config is the part of an OCI image config this test reads.
type config struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// platforms are the architectures hack/xpkg.sh builds a package for by
// default, linux/<arch> each, in the order it prints them.
var platforms = []string{"amd64", "arm64"}

// machines are the ELF machines of a binary for each platform.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func TestEveryCLIBuildsAPackagePerPlatformEmbeddingItsRuntimeImage(t *testing.T) {
	root := harness.Root(t)
	// Every CLI generation the suite pins can build the package; the script
	// defaults to crank, and the test proves the newer CLI accepts it too, so
	// that users on either get the same package. crank-v1 is Crossplane
	// v1.19.0's, whose meta.pkg.crossplane.io/v1 Function has no
	// capabilities field: its parser and linter accept package/crossplane.yaml,
	// capabilities and all, but the package it writes has none, so that
	// Crossplane v2 would assume composition alone and refuse the Operation
	// examples' pipelines (MissingCapabilities). Build it with a v2 CLI, as
	// make xpkg does.
	for cli, capabilities := range map[string][]any{
		"crank":      {"composition", "operation"},
		"crossplane": {"composition", "operation"},
		"crank-v1":   nil,
	} {
		t.Run(cli, func(t *testing.T) {
			harness.Tool(t, cli) // Build it first, so the timing below is the packages' alone.
			out := t.TempDir()
			pkgs := buildPackages(t, root, cli, out)
			for _, arch := range platforms {
				t.Run(arch, func(t *testing.T) {
					logSizes(t, out, arch)
					checkPackage(t, root, out, pkgs[arch], arch, capabilities)
				})
			}
		})
	}
}

// buildPackages runs hack/xpkg.sh into out with the given CLI and arguments,
// and returns the packages' paths by architecture. The script must print
// one path a line, function-dependencies-<arch>.xpkg for each platform in
// order, and nothing else.
func buildPackages(t *testing.T, root, cli, out string, args ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "hack", "xpkg.sh")}, args...)...)
	// The default platforms, whatever the caller's environment chooses.
	cmd.Env = append(os.Environ(), "FD_XPKG_DIR="+out, "FD_XPKG_CLI="+cli, "FD_XPKG_PLATFORMS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", strings.Join(append([]string{"hack/xpkg.sh"}, args...), " "), err, stderr.String())
	}
	t.Logf("%s took %s:\n%s", strings.Join(append([]string{"hack/xpkg.sh"}, args...), " "), time.Since(start).Round(time.Millisecond), stderr.String())
	var want []string
	pkgs := map[string]string{}
	for _, arch := range platforms {
		pkgs[arch] = filepath.Join(out, "function-dependencies-"+arch+".xpkg")
		want = append(want, pkgs[arch])
	}
	if got := strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n"); !slices.Equal(got, want) {
		t.Fatalf("hack/xpkg.sh printed %q, want one package per platform, one a line: %q", got, want)
	}
	return pkgs
}

// logSizes logs the sizes of a platform's package and runtime image tarball.
func logSizes(t *testing.T, out, arch string) {
	t.Helper()
	var sizes []string
	for _, name := range []string{"function-dependencies-" + arch + ".xpkg", "runtime-" + arch + ".tar", "function-" + arch} {
		if fi, err := os.Stat(filepath.Join(out, name)); err == nil {
			sizes = append(sizes, fmt.Sprintf("%s %.1f MB", name, float64(fi.Size())/1e6))
		}
	}
	t.Logf("linux/%s: %s", arch, strings.Join(sizes, ", "))
}

// checkPackage checks the package built for linux/arch.
func checkPackage(t *testing.T, root, out, pkg, arch string, capabilities []any) {
	t.Helper()
	files := readTar(t, pkg)

	var manifests []manifest
	if err := json.Unmarshal(need(t, files, "manifest.json"), &manifests); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifests) != 1 {
		t.Fatalf("manifest.json has %d images, want 1", len(manifests))
	}
	m := manifests[0]
	var cfg config
	if err := json.Unmarshal(need(t, files, m.Config), &cfg); err != nil {
		t.Fatalf("image config %s: %v", m.Config, err)
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		t.Errorf("image config lists %d layers, manifest.json %d", len(cfg.RootFS.DiffIDs), len(m.Layers))
	}

	// Sort the layers by their xpkg label. The label names a layer by its
	// digest, which is also the name of its file in the tarball.
	var base, examples []string
	var runtime []string
	for _, l := range m.Layers {
		blob := need(t, files, l)
		sum := sha256.Sum256(blob)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		if !strings.HasPrefix(path.Base(l), hex.EncodeToString(sum[:])) {
			t.Errorf("layer %s has digest %s: the tarball is corrupt", l, digest)
		}
		switch cfg.Config.Labels[labelPrefix+digest] {
		case baseAnnotation:
			base = append(base, l)
		case examplesAnnotaton:
			examples = append(examples, l)
		default:
			runtime = append(runtime, l)
		}
	}

	t.Run("package.yaml", func(t *testing.T) {
		if len(base) != 1 {
			t.Fatalf("%d layers are labelled %s%s, want 1 (labels: %v)", len(base), labelPrefix, baseAnnotation, cfg.Config.Labels)
		}
		layer := readLayer(t, need(t, files, base[0]))
		names := slices.Sorted(maps.Keys(layer))
		if !reflect.DeepEqual(names, []string{"package.yaml"}) {
			t.Fatalf("the base layer holds %v, want only package.yaml", names)
		}
		checkPackageYAML(t, root, layer["package.yaml"].data, capabilities)
	})

	t.Run("examples", func(t *testing.T) {
		// hack/xpkg.sh includes example/ only when it has YAML.
		want := 0
		if len(harness.YAMLFiles(t, filepath.Join(root, "example"))) > 0 {
			want = 1
		}
		if len(examples) != want {
			t.Fatalf("%d examples layers, want %d", len(examples), want)
		}
		if want == 0 {
			return
		}
		layer := readLayer(t, need(t, files, examples[0]))
		docs := harness.Documents(t, layer[".up/examples.yaml"].data)
		var kinds []string
		for _, d := range docs {
			kinds = append(kinds, harness.String(d, "kind"))
		}
		if !slices.Contains(kinds, "Composition") {
			t.Errorf("the examples layer holds kinds %v, want the example Compositions among them", kinds)
		}
	})

	t.Run("runtime", func(t *testing.T) {
		if len(runtime) == 0 {
			t.Fatal("the package embeds no runtime image layer")
		}
		// What crossplane xpkg push writes into a multi-platform package's
		// index for this package, and what a node pulls by.
		if cfg.OS != "linux" || cfg.Architecture != arch {
			t.Errorf("runtime platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, arch)
		}
		// Crossplane's package manager runs the image as the function's
		// Deployment: it must start the function, serve gRPC on 9443, and run
		// as a non-root user (the pod security restricted profile).
		if !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/function"}) {
			t.Errorf("Entrypoint %q, want [/function]", cfg.Config.Entrypoint)
		}
		if _, ok := cfg.Config.ExposedPorts["9443/tcp"]; !ok {
			t.Errorf("ExposedPorts %v, want 9443/tcp among them", cfg.Config.ExposedPorts)
		}
		if !nonRoot(cfg.Config.User) {
			t.Errorf("User %q, want a numeric non-root user", cfg.Config.User)
		}

		built, err := os.ReadFile(filepath.Join(out, "function-"+arch)) //nolint:gosec // The script's own output.
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, l := range runtime {
			for name, f := range readLayer(t, need(t, files, l)) {
				if path.Clean("/"+name) != "/function" {
					continue
				}
				found = true
				// The entrypoint must be the very binary the script built from
				// this working tree, not some other file at that path.
				if !bytes.Equal(f.data, built) {
					t.Errorf("/function in layer %s (%d bytes) is not the binary hack/xpkg.sh built (%d bytes)", l, len(f.data), len(built))
				}
				if f.mode&0o111 != 0o111 {
					t.Errorf("/function has mode %o, want it executable by every user", f.mode)
				}
				checkStatic(t, f.data, machines[arch])
			}
		}
		if !found {
			t.Errorf("no runtime layer holds /function")
		}
	})
}

// checkPackageYAML checks the package's metadata and objects: one Function
// meta with the composition capability, and exactly the function's input CRD.
func checkPackageYAML(t *testing.T, root string, content []byte, capabilities []any) {
	t.Helper()
	docs := harness.Documents(t, content)
	if len(docs) == 0 {
		t.Fatal("package.yaml is empty")
	}
	meta := docs[0]
	if got := harness.String(meta, "apiVersion") + " " + harness.String(meta, "kind"); got != "meta.pkg.crossplane.io/v1 Function" {
		t.Errorf("package.yaml's first document is %s, want meta.pkg.crossplane.io/v1 Function", got)
	}
	if got := harness.String(meta, "metadata", "name"); got != "function-dependencies" {
		t.Errorf("package name %q, want function-dependencies", got)
	}
	annotations, _ := harness.Lookup(meta, "metadata", "annotations").(map[string]any)
	for _, k := range []string{"maintainer", "source", "license", "description", "readme"} {
		if v, _ := annotations["meta.crossplane.io/"+k].(string); strings.TrimSpace(v) == "" {
			t.Errorf("package metadata lacks the meta.crossplane.io/%s annotation", k)
		}
	}
	if got := annotations["meta.crossplane.io/source"]; got != "github.com/crossplane-contrib/function-dependencies" {
		t.Errorf("meta.crossplane.io/source %q, want github.com/crossplane-contrib/function-dependencies", got)
	}
	if got := harness.List(meta, "spec", "capabilities"); !reflect.DeepEqual(got, capabilities) {
		t.Errorf("spec.capabilities %v, want %v", got, capabilities)
	}
	// The Crossplane versions the package declares, which Crossplane's
	// package manager checks before it runs the function: every CLI, v1's
	// too, keeps them.
	source := harness.ReadDocuments(t, filepath.Join(root, "package", "crossplane.yaml"))
	if len(source) != 1 {
		t.Fatalf("package/crossplane.yaml holds %d documents, want 1", len(source))
	}
	constraint := harness.String(source[0], "spec", "crossplane", "version")
	if constraint == "" {
		t.Error("package/crossplane.yaml declares no spec.crossplane.version")
	}
	if got := harness.String(meta, "spec", "crossplane", "version"); got != constraint {
		t.Errorf("spec.crossplane.version %q, want package/crossplane.yaml's %q", got, constraint)
	}

	// The input CRD in the package must be the generated one in package/input,
	// schema and all: Crossplane and editors validate pipeline inputs with it.
	want := harness.ReadDocuments(t, filepath.Join(root, "package", "input", "dependencies.fn.crossplane.io_inputs.yaml"))
	if len(want) != 1 {
		t.Fatalf("package/input holds %d documents, want 1", len(want))
	}
	var crds []map[string]any
	for _, d := range docs[1:] {
		if harness.String(d, "kind") != "CustomResourceDefinition" {
			t.Errorf("package.yaml holds a %s %s; a function package holds only CRDs", harness.String(d, "apiVersion"), harness.String(d, "kind"))
			continue
		}
		crds = append(crds, d)
	}
	if len(crds) != 1 || harness.String(crds[0], "metadata", "name") != "inputs.dependencies.fn.crossplane.io" {
		var names []string
		for _, c := range crds {
			names = append(names, harness.String(c, "metadata", "name"))
		}
		t.Fatalf("package.yaml holds CRDs %v, want only inputs.dependencies.fn.crossplane.io", names)
	}
	if got, want := harness.Lookup(crds[0], "spec"), harness.Lookup(want[0], "spec"); !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.MarshalIndent(got, "", "  ")
		wantJSON, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("the packaged input CRD's spec differs from package/input's:\ngot:  %s\nwant: %s", gotJSON, wantJSON)
	}
}

// checkStatic checks that bin is a static ELF executable for the machine:
// no program interpreter and no shared library, as the image has neither a
// loader nor a libc.
func checkStatic(t *testing.T, bin []byte, machine elf.Machine) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/function is not an ELF file: %v", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC || f.Machine != machine {
		t.Errorf("/function is a %s %s for %s, want a 64-bit executable for %s", f.Class, f.Type, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/function has a program interpreter (PT_INTERP): dynamically linked, want static")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Errorf("/function's dynamic section: %v", err)
	}
	if len(libs) > 0 {
		t.Errorf("/function needs shared libraries (DT_NEEDED) %q, want none", libs)
	}
}

// nonRoot reports whether user is "uid" or "uid:gid" with a numeric uid other
// than 0. A user name can't be checked without the image's /etc/passwd, which
// this image doesn't have, so a name counts as root.
func nonRoot(user string) bool {
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	return err == nil && n > 0
}

// readTar returns every regular file of a tar by name.
func readTar(t *testing.T, name string) map[string][]byte {
	t.Helper()
	f, err := os.Open(name) //nolint:gosec // The test's own build output.
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, err := untar(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := make(map[string][]byte, len(files))
	for n, f := range files {
		out[n] = f.data
	}
	return out
}

// readLayer returns the regular files of a gzip-compressed layer by name.
func readLayer(t *testing.T, blob []byte) map[string]file {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		t.Fatalf("layer is not gzip-compressed: %v", err)
	}
	files, err := untar(zr)
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	return files
}

// file is a regular file of a tar.
type file struct {
	data []byte
	mode int64
}

// untar returns every regular file of a tar by name.
func untar(r io.Reader) (map[string]file, error) {
	files := map[string]file{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[hdr.Name] = file{data: b, mode: hdr.Mode}
	}
}

func need(t *testing.T, files map[string][]byte, name string) []byte {
	t.Helper()
	b, ok := files[name]
	if !ok {
		t.Fatalf("the package has no file %s", name)
	}
	return b
}
