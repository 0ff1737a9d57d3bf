// Command imagebuilder builds function-dependencies' runtime image as an image
// tarball without a Docker daemon, so that `crossplane xpkg build
// --embed-runtime-image-tarball` can embed it on machines that have no Docker.
//
// The image holds one layer, the static function binary at /function, and the
// same runtime settings as the Dockerfile's distroless stage: ENTRYPOINT
// ["/function"], port 9443/tcp, the non-root user 65532:65532. Its config
// says the platform the binary was built for, linux/amd64 or linux/arm64
// (-arch), which is what `crossplane xpkg push` writes into a multi-platform
// package's index for each package, and what a node pulls by.
//
//	imagebuilder -arch arm64 -binary .cache/xpkg/function-arm64 -out .cache/xpkg/runtime-arm64.tar
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The settings a Crossplane function runtime needs. Crossplane's package
// manager runs the function's Deployment with this image and dials its gRPC
// server on 9443; 65532 is the "nonroot" user of the distroless images the
// Dockerfile uses, so both build paths run the function as the same user.
const (
	entrypoint = "/function"
	port       = "9443/tcp"
	user       = "65532:65532"
)

// machines are the architectures an image can be built for, by their
// GOARCH and OCI name (the two agree for these), and the ELF machine of a
// binary built for each: the nodes Crossplane's functions run on.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

func main() {
	arch := flag.String("arch", "amd64", "the image's architecture, amd64 or arm64: its config says linux/<arch>, and the binary must be built for it")
	binary := flag.String("binary", "", "the function binary: static, linux/<arch> (CGO_ENABLED=0 GOOS=linux GOARCH=<arch> go build)")
	out := flag.String("out", "", "the image tarball to write")
	tag := flag.String("tag", "function-dependencies:dev", "the tag recorded in the tarball's manifest.json")
	flag.Parse()
	if _, ok := machines[*arch]; !ok || *binary == "" || *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := build(*arch, *binary, *out, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuilder:", err)
		os.Exit(1)
	}
}

func build(arch, binary, out, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("invalid tag %q: %w", tag, err)
	}
	bin, err := os.ReadFile(binary) //nolint:gosec // The path is the caller's own build output.
	if err != nil {
		return err
	}
	// The image has no libc, no loader and runs on arch's nodes: a
	// dynamically linked or foreign binary would build fine here and only
	// fail in the cluster with a confusing "no such file or directory" or
	// "exec format error".
	if err := checkStatic(bin, arch); err != nil {
		return fmt.Errorf("%s: %w", binary, err)
	}
	layerTar, err := layer(bin)
	if err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   l,
		History: v1.History{CreatedBy: "imagebuilder: COPY function " + entrypoint, Created: v1.Time{Time: time.Unix(0, 0).UTC()}},
	})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	// A fixed creation time keeps the image, and so the package digest,
	// the same for the same binary.
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{entrypoint}
	cf.Config.ExposedPorts = map[string]struct{}{port: {}}
	cf.Config.User = user
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

// layer returns a tar holding the binary at /function, owned by root and
// executable by everyone, so the non-root user can run but not replace it.
func layer(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     entrypoint[1:],
		Mode:     0o755,
		Size:     int64(len(bin)),
		ModTime:  time.Unix(0, 0),
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic fails unless bin is an ELF executable for arch without a
// program interpreter or shared libraries, that is, one that needs no
// dynamic loader.
func checkStatic(bin []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close() //nolint:errcheck // Only read from memory.
	if want := machines[arch]; f.Machine != want {
		return fmt.Errorf("built for %s, want %s (GOARCH=%s)", f.Machine, want, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked, want static (CGO_ENABLED=0)")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("cannot read the dynamic section: %w", err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %q, want static (CGO_ENABLED=0)", libs)
	}
	return nil
}
