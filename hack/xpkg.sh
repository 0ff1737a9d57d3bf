#!/usr/bin/env bash
# Builds the function's Crossplane package (xpkg) offline, without Docker, once per platform the
# nodes may run, linux/amd64 and linux/arm64; for each:
#   1. the static function binary for the platform (function-<arch>),
#   2. its runtime image as an image tarball (tools/imagebuilder, go-containerregistry), whose
#      config says linux/<arch> (runtime-<arch>.tar),
#   3. `crossplane xpkg build` with that tarball embedded as the runtime image, and example/ as
#      the package's examples when it holds any YAML (function-dependencies-<arch>.xpkg).
# Prints the packages' paths, one a line, in FD_XPKG_PLATFORMS' order.
#
#   hack/xpkg.sh
#   hack/xpkg.sh --push REGISTRY/REPOSITORY:TAG
#
# --push then pushes them as one multi-platform package: `crossplane xpkg push
# --package-files=<amd64>,<arm64> REGISTRY/REPOSITORY:TAG` with the pinned crossplane CLI (v2.5.0)
# writes each package by its digest and, at the tag, an OCI image index listing one package per
# platform, from which each node pulls its own. Credentials are the CLI's: the Docker config's.
#
# FD_XPKG_DIR overrides the output folder (default: .cache/xpkg in the repository).
# FD_XPKG_VERSION is the version the binaries report (default: dev).
# FD_XPKG_PLATFORMS chooses the architectures, linux/<arch> each (default: "amd64 arm64").
# FD_XPKG_CLI names the hack/tools.sh tool whose `xpkg build` is used (default: crank, the
# Crossplane CLI v2.2.0 the render tests also use; `crossplane`, CLI v2.5.0, works too).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
  echo "usage: hack/xpkg.sh [--push REGISTRY/REPOSITORY:TAG]" >&2
  exit 2
}
push=
while [ $# -gt 0 ]; do
  case $1 in
    --push)
      if [ $# -lt 2 ] || [ -z "$2" ]; then usage; fi
      push=$2; shift 2 ;;
    --push=?*) push=${1#--push=}; shift ;;
    *) usage ;;
  esac
done

read -r -a platforms <<< "${FD_XPKG_PLATFORMS:-amd64 arm64}"
[ ${#platforms[@]} -gt 0 ] || { echo "hack/xpkg.sh: FD_XPKG_PLATFORMS names no architecture" >&2; exit 2; }
for arch in "${platforms[@]}"; do
  case $arch in
    amd64 | arm64) ;;
    *) echo "hack/xpkg.sh: unknown architecture \"$arch\" in FD_XPKG_PLATFORMS; known: amd64 arm64" >&2; exit 2 ;;
  esac
done

out=${FD_XPKG_DIR:-$root/.cache/xpkg}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The single-platform layout's package, from before the script built one per platform: gone, so
# that nobody pushes it thinking it current.
rm -f "$out/function-dependencies.xpkg" "$out/function"

cli=$("$root/hack/tools.sh" "${FD_XPKG_CLI:-crank}")
if [ -n "$push" ]; then
  # Before the builds, so that a push fails early on a missing tool, not minutes in.
  pusher=$("$root/hack/tools.sh" crossplane)
fi

# The image builder is its own module, so go-containerregistry stays out of the function's go.mod.
(cd "$root/tools/imagebuilder" && go build -trimpath -o "$out/imagebuilder" .)

# Examples are optional in a package: include example/ only when it has YAML, because an
# examples root without any gives the package an empty examples layer.
examples=()
if [ -n "$(find "$root/example" -type f \( -name '*.yaml' -o -name '*.yml' \) -print -quit 2>/dev/null)" ]; then
  examples=(--examples-root="$root/example")
else
  # The CLI defaults to ./examples; point it at a folder that can't exist so that a stray
  # examples/ in the working directory is never packaged.
  examples=(--examples-root="$out/no-examples")
fi

pkgs=()
for arch in "${platforms[@]}"; do
  start=$SECONDS
  # Static and for the nodes' platform: the image has no libc and no loader. Stripped of its
  # symbol table and DWARF (-s -w), which a running function never reads: a smaller image to pull.
  (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
    -ldflags "-s -w -X main.version=${FD_XPKG_VERSION:-dev}" -o "$out/function-$arch" .)
  "$out/imagebuilder" -arch "$arch" -binary "$out/function-$arch" -out "$out/runtime-$arch.tar" -tag function-dependencies:dev
  echo "built the linux/$arch runtime image $out/runtime-$arch.tar in $((SECONDS - start))s" >&2

  start=$SECONDS
  pkg=$out/function-dependencies-$arch.xpkg
  rm -f "$pkg"
  "$cli" xpkg build \
    --package-root="$root/package" \
    --embed-runtime-image-tarball="$out/runtime-$arch.tar" \
    "${examples[@]}" \
    -o "$pkg" >&2
  echo "built the linux/$arch package $pkg with $(basename "$cli") xpkg build in $((SECONDS - start))s" >&2
  pkgs+=("$pkg")
done

if [ -n "$push" ]; then
  start=$SECONDS
  files=$(IFS=,; echo "${pkgs[*]}")
  "$pusher" xpkg push --package-files="$files" "$push" >&2
  echo "pushed the packages for ${platforms[*]/#/linux/} as one, $push, in $((SECONDS - start))s" >&2
fi
printf '%s\n' "${pkgs[@]}"
