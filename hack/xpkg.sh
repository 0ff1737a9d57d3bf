#!/usr/bin/env bash
# Builds the function's Crossplane package (xpkg) offline, without Docker:
#   1. the static linux/amd64 function binary,
#   2. the runtime image as an image tarball (tools/imagebuilder, go-containerregistry),
#   3. `crossplane xpkg build` with that tarball embedded as the runtime image, and
#      example/ as the package's examples when it holds any YAML.
# Prints the package's path.
#
#   hack/xpkg.sh
#
# FD_XPKG_DIR overrides the output folder (default: .cache/xpkg in the repository).
# FD_XPKG_VERSION is the version the binary reports (default: dev).
# FD_XPKG_CLI names the hack/tools.sh tool whose `xpkg build` is used (default: crank, the
# Crossplane CLI v2.2.0 the render tests also use; `crossplane`, CLI v2.5.0, works too).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${FD_XPKG_DIR:-$root/.cache/xpkg}
mkdir -p "$out"
out=$(cd "$out" && pwd)

cli=$("$root/hack/tools.sh" "${FD_XPKG_CLI:-crank}")

start=$SECONDS
# Static and for the nodes' platform: the image has no libc and no loader. Stripped of its symbol
# table and DWARF (-s -w), which a running function never reads: a smaller image to pull.
(cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath \
  -ldflags "-s -w -X main.version=${FD_XPKG_VERSION:-dev}" -o "$out/function" .)
# The image builder is its own module, so go-containerregistry stays out of the function's go.mod.
(cd "$root/tools/imagebuilder" && go build -trimpath -o "$out/imagebuilder" .)
"$out/imagebuilder" -binary "$out/function" -out "$out/runtime-amd64.tar" -tag function-dependencies:dev
echo "built the runtime image $out/runtime-amd64.tar in $((SECONDS - start))s" >&2

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

start=$SECONDS
pkg=$out/function-dependencies.xpkg
rm -f "$pkg"
"$cli" xpkg build \
  --package-root="$root/package" \
  --embed-runtime-image-tarball="$out/runtime-amd64.tar" \
  "${examples[@]}" \
  -o "$pkg" >&2
echo "built the package $pkg with $(basename "$cli") xpkg build in $((SECONDS - start))s" >&2
echo "$pkg"
