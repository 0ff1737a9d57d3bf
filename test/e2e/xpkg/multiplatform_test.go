//go:build e2e

package xpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/fnserve"
	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// The media types of a registry's manifests: an OCI image index or a Docker
// manifest list lists one image per platform; the images are OCI or Docker
// image manifests.
var (
	indexTypes = []string{"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"}
	imageTypes = []string{"application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"}
)

// The annotation crossplane xpkg push gives a package image's layers: "base"
// marks the one holding package.yaml, where Crossplane's package manager
// reads the package from.
const layerAnnotation = "io.crossplane.xpkg"

// qemu runs an arm64 binary on this machine: Debian's qemu-user-static,
// which hack/test.sh installs. It is called by name, not through binfmt_misc,
// which a machine may not have registered.
const qemu = "qemu-aarch64-static"

// index is the part of an image index, or manifest list, the test reads.
type index struct {
	MediaType string `json:"mediaType"`
	Manifests []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Platform  *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
			Variant      string `json:"variant"`
		} `json:"platform"`
	} `json:"manifests"`
}

// image is the part of an image manifest the test reads.
type image struct {
	MediaType string `json:"mediaType"`
	Config    struct {
		Digest string `json:"digest"`
	} `json:"config"`
	Layers []struct {
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	} `json:"layers"`
}

// TestPushedPackageServesAmd64AndArm64Nodes pushes the two platforms'
// packages as one with hack/xpkg.sh --push (the pinned crossplane xpkg push)
// to a registry on loopback, reads back an index of exactly a linux/amd64
// and a linux/arm64 package, pulls each platform's binary from it as a node
// of that platform would, and runs the arm64 one under emulation: a static
// aarch64 executable that answers a RunFunction exactly as the amd64 one
// does.
func TestPushedPackageServesAmd64AndArm64Nodes(t *testing.T) {
	root := harness.Root(t)
	crane := harness.Tool(t, "crane")
	harness.Tool(t, "crossplane") // Built first, so the timing below is the packages' and the push's alone.
	address := harness.FreeAddress(t)
	// In memory: the pushed blobs go with the process.
	registry := harness.StartProcess(t, crane, nil, "registry", "serve", "--address", address)
	registry.WaitListening(t, address)
	repository := address + "/crossplane-contrib/function-dependencies"
	ref := repository + ":v0.1.0"
	out := t.TempDir()
	pkgs := buildPackages(t, root, "crossplane", out, "--push", ref)

	digests := map[string]string{}
	t.Run("IndexListsExactlyALinuxAmd64AndALinuxArm64Package", func(t *testing.T) {
		var idx index
		unmarshal(t, run(t, crane, "manifest", ref), &idx)
		if !slices.Contains(indexTypes, idx.MediaType) {
			t.Fatalf("%s is a %q, want an image index (%q)", ref, idx.MediaType, indexTypes)
		}
		var got []string
		for _, m := range idx.Manifests {
			if m.Platform == nil {
				t.Errorf("the index's manifest %s names no platform", m.Digest)
				continue
			}
			platform := m.Platform.OS + "/" + m.Platform.Architecture
			if m.Platform.Variant != "" {
				platform += "/" + m.Platform.Variant
			}
			got = append(got, platform)
			if !slices.Contains(imageTypes, m.MediaType) {
				t.Errorf("%s's manifest is a %q, want an image (%q)", platform, m.MediaType, imageTypes)
			}
			if arch, ok := strings.CutPrefix(platform, "linux/"); ok {
				digests[arch] = m.Digest
			}
		}
		slices.Sort(got)
		if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
			t.Fatalf("the index lists the platforms %q, want exactly %q", got, want)
		}
		for _, arch := range platforms {
			t.Run(arch, func(t *testing.T) {
				checkPushedPackage(t, crane, repository+"@"+digests[arch], pkgs[arch], arch)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// What a node of each platform runs: /function of the image it pulls by
	// its platform from the pushed tag.
	binaries := map[string]string{}
	for _, arch := range platforms {
		binaries[arch] = filepath.Join(out, "pulled-"+arch)
		pulled := pullFunction(t, crane, ref, "linux/"+arch)
		built, err := os.ReadFile(filepath.Join(out, "function-"+arch)) //nolint:gosec // The script's own output.
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pulled, built) {
			t.Fatalf("a linux/%s node pulls a /function of %d bytes from %s, not the %d-byte binary hack/xpkg.sh built for it", arch, len(pulled), ref, len(built))
		}
		if err := os.WriteFile(binaries[arch], pulled, 0o700); err != nil { //nolint:gosec // An executable, for this test alone.
			t.Fatal(err)
		}
	}

	t.Run("Arm64BinaryIsAStaticAarch64Executable", func(t *testing.T) {
		bin, err := os.ReadFile(binaries["arm64"])
		if err != nil {
			t.Fatal(err)
		}
		checkStatic(t, bin, machines["arm64"])
	})

	t.Run("Arm64BinaryAnswersRunFunctionUnderEmulationAsTheAmd64BinaryDoes", func(t *testing.T) {
		emulator, err := exec.LookPath(qemu)
		if err != nil {
			t.Skipf("%s is missing, so the arm64 binary can't run here: install Debian's qemu-user-static (hack/test.sh does)", qemu)
		}
		req := request(t)
		amd64 := runFunction(t, binaries["amd64"], "", req)
		start := time.Now()
		arm64 := runFunction(t, emulator, binaries["arm64"], req)
		t.Logf("the arm64 binary started and answered under %s in %s", qemu, time.Since(start).Round(time.Millisecond))
		checkAnswer(t, arm64)
		if diff := cmp.Diff(amd64, arm64, protocmp.Transform()); diff != "" {
			t.Errorf("the arm64 binary's answer differs from the amd64 binary's to the same request (-amd64 +arm64):\n%s", diff)
		}
	})
}

// checkPushedPackage checks that the image at ref is the package pkg, built
// for linux/arch, as Crossplane's package manager reads it from a
// registry: an image whose config says the platform, whose layers are pkg's
// and whose base layer, holding package.yaml, is annotated as such.
func checkPushedPackage(t *testing.T, crane, ref, pkg, arch string) {
	t.Helper()
	var img image
	unmarshal(t, run(t, crane, "manifest", ref), &img)
	if !slices.Contains(imageTypes, img.MediaType) {
		t.Fatalf("%s is a %q, want an image (%q)", ref, img.MediaType, imageTypes)
	}
	var cfg config
	unmarshal(t, run(t, crane, "config", ref), &cfg)
	if cfg.OS != "linux" || cfg.Architecture != arch {
		t.Errorf("the linux/%s package's config says %s/%s", arch, cfg.OS, cfg.Architecture)
	}
	var got, base []string
	for _, l := range img.Layers {
		got = append(got, l.Digest)
		if l.Annotations[layerAnnotation] == baseAnnotation {
			base = append(base, l.Digest)
		}
		if cfg.Config.Labels[labelPrefix+l.Digest] != l.Annotations[layerAnnotation] {
			t.Errorf("layer %s is annotated %q in the manifest and labelled %q in the config", l.Digest, l.Annotations[layerAnnotation], cfg.Config.Labels[labelPrefix+l.Digest])
		}
	}
	if len(base) != 1 {
		t.Errorf("%d layers are annotated %s=%s, want the one holding package.yaml", len(base), layerAnnotation, baseAnnotation)
	}
	// The same layers as the package file: the pushed image is the package
	// built for this platform, and not the other one.
	var manifests []manifest
	unmarshal(t, need(t, readTar(t, pkg), "manifest.json"), &manifests)
	if len(manifests) != 1 {
		t.Fatalf("%s holds %d images, want 1", pkg, len(manifests))
	}
	var want []string
	for _, l := range manifests[0].Layers {
		want = append(want, "sha256:"+strings.TrimSuffix(filepath.Base(l), ".tar.gz"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the pushed linux/%s package has the layers %q, want %s's %q", arch, got, filepath.Base(pkg), want)
	}
}

// pullFunction returns /function of the image a node of the platform pulls
// from ref: crane export picks the platform's image from the index and
// flattens its layers, as a container runtime unpacks them.
func pullFunction(t *testing.T, crane, ref, platform string) []byte {
	t.Helper()
	files, err := untar(bytes.NewReader(run(t, crane, "export", "--platform", platform, ref, "-")))
	if err != nil {
		t.Fatalf("crane export --platform %s %s: %v", platform, ref, err)
	}
	f, ok := files["function"]
	if !ok {
		t.Fatalf("the %s image of %s has no /function", platform, ref)
	}
	return f.data
}

// runFunction starts command, the function's binary, or with binary an
// emulator that runs binary, with the flags Crossplane's package runtime
// gives the function but without TLS and its metrics server, on a free
// loopback port; sends it the request over gRPC with the tests' client
// (fnserve.Dial), and returns the answer.
func runFunction(t *testing.T, command, binary string, req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	address := harness.FreeAddress(t)
	var args []string
	if binary != "" {
		args = append(args, binary)
	}
	args = append(args, "--insecure", "--address", address, "--metrics-address", "")
	p := harness.StartProcess(t, command, nil, args...)
	exited := func() error {
		select {
		case <-p.Exited():
			err := p.Err()
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited before it listened (%w):\n%s", filepath.Base(command), err, p.Output())
		default:
			return nil
		}
	}
	client, closeConn, err := fnserve.Dial(address, exited)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rsp, err := client.RunFunction(ctx, req)
	if err != nil {
		t.Fatalf("RunFunction through %s: %v\n%s", filepath.Base(command), err, p.Output())
	}
	return rsp
}

// request is a small composition as Crossplane sends it: a
// provider-kubernetes Object, app, references another, shared, which
// carries no finalizer of app's yet.
func request(t *testing.T) *fnv1.RunFunctionRequest {
	t.Helper()
	resource := func(m map[string]any) *fnv1.Resource {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return &fnv1.Resource{Resource: s}
	}
	object := func(name, uid string, refs ...any) map[string]any {
		metadata := map[string]any{"name": name}
		if uid != "" {
			// Observed, and managed by provider-kubernetes.
			metadata["uid"] = uid
			metadata["finalizers"] = []any{"finalizer.managedresource.crossplane.io"}
		}
		spec := map[string]any{"forProvider": map[string]any{"manifest": map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "default"},
		}}}
		if len(refs) > 0 {
			spec["references"] = refs
		}
		return map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": metadata, "spec": spec}
	}
	ref := map[string]any{"dependsOn": map[string]any{"name": "shared"}}
	return &fnv1.RunFunctionRequest{
		Meta: &fnv1.RequestMeta{Tag: "arch"},
		Observed: &fnv1.State{
			Composite: resource(map[string]any{"apiVersion": "example.org/v1", "kind": "XApp", "metadata": map[string]any{"name": "app"}}),
			Resources: map[string]*fnv1.Resource{
				"shared": resource(object("shared", "uid-shared")),
				"app":    resource(object("app", "uid-app", ref)),
			},
		},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
			"shared": resource(object("shared", "")),
			"app":    resource(object("app", "", ref)),
		}},
	}
}

// checkAnswer checks that the answer declares app's reference finalizer on
// shared, and nothing else there, and reports the ordering as in force.
func checkAnswer(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	var got []string
	md := rsp.GetDesired().GetResources()["shared"].GetResource().GetFields()["metadata"].GetStructValue()
	for _, v := range md.GetFields()["finalizers"].GetListValue().GetValues() {
		got = append(got, v.GetStringValue())
	}
	if want := []string{"kubernetes.crossplane.io/referred-by-object-uid-app"}; !slices.Equal(got, want) {
		t.Errorf("shared declares the finalizers %q, want app's reference finalizer %q", got, want)
	}
	if len(rsp.GetConditions()) != 1 || rsp.GetConditions()[0].GetType() != "DeletionOrdered" {
		t.Errorf("conditions %v, want DeletionOrdered", rsp.GetConditions())
	}
	if rsp.GetMeta().GetTag() != "arch" {
		t.Errorf("tag %q, want the request's", rsp.GetMeta().GetTag())
	}
}

// run runs a command and returns its standard output; it fails the test when
// the command fails.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func unmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %.300s", err, data)
	}
}
