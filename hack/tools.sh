#!/usr/bin/env bash
# Builds the pinned tools the tests and `make render` run, each from its own module under tools/,
# into a git-ignored cache, only when missing or when its pin changed. Prints the binaries' paths.
#
#   hack/tools.sh crank crossplane crossplane-core ...
#
# FD_TOOLS_BIN overrides the cache folder (default: .cache/bin in the repository).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${FD_TOOLS_BIN:-$root/.cache/bin}
mkdir -p "$bin"

# Kubernetes binaries must report their version, or clients can't parse it.
k8s_version="-X k8s.io/component-base/version.gitVersion=v1.34.3 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
# Crossplane core must know its version, as a release's build stamps it, or its package manager
# refuses every package that declares the Crossplane versions it supports (spec.crossplane.version):
# an empty version is no semantic version. v2 reads crossplane-runtime's pkg/version (crossplane's
# nix/build.nix), v1.19 its own internal/version (its Earthfile). The version is the module's pin
# under tools/, read from its go.mod, so that a bump of the pin stamps the new version.
pinned() {
  local v
  v=$(awk -v m="$2" '$1 == "require" && $2 == m { print $3; exit } $1 == m { print $2; exit }' "$root/tools/$1/go.mod")
  [ -n "$v" ] || { echo "hack/tools.sh: tools/$1/go.mod requires no $2" >&2; return 1; }
  echo "$v"
}
crossplane_version="-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(pinned crossplane-core github.com/crossplane/crossplane/v2)"
crossplane_v1_version="-X github.com/crossplane/crossplane/internal/version.version=$(pinned crossplane-v1 github.com/crossplane/crossplane)"

# name -> "module folder under tools/ | package | extra -ldflags | environment of the build"
declare -A tools=(
  [crank]="crank|github.com/crossplane/crossplane/v2/cmd/crank|"
  [crossplane]="crossplane-cli|github.com/crossplane/cli/v2/cmd/crossplane|"
  [crossplane-core]="crossplane-core|github.com/crossplane/crossplane/v2/cmd/crossplane|$crossplane_version"
  [function-patch-and-transform]="function-patch-and-transform|github.com/crossplane-contrib/function-patch-and-transform|"
  [function-auto-ready]="function-auto-ready|github.com/crossplane/function-auto-ready|"
  [etcd]="etcd|go.etcd.io/etcd/server/v3|"
  [kube-apiserver]="kubernetes|k8s.io/kubernetes/cmd/kube-apiserver|$k8s_version"
  [kube-controller-manager]="kubernetes|k8s.io/kubernetes/cmd/kube-controller-manager|$k8s_version"
  # The node of test/controlplane's install scenario, from the same module as the API server.
  [kube-scheduler]="kubernetes|k8s.io/kubernetes/cmd/kube-scheduler|$k8s_version"
  [kubelet]="kubernetes|k8s.io/kubernetes/cmd/kubelet|$k8s_version"
  # Its `crane registry serve` is the OCI registry on loopback the install scenario pushes to.
  [crane]="crane|github.com/google/go-containerregistry/cmd/crane|"
  [golangci-lint]="golangci-lint|github.com/golangci/golangci-lint/v2/cmd/golangci-lint|"
  # Checks .github/workflows (the GitHub-side CI and release workflow) in the static tier.
  [actionlint]="actionlint|github.com/rhysd/actionlint/cmd/actionlint|"
  [benchstat]="benchstat|golang.org/x/perf/cmd/benchstat|"
  [provider-kubernetes]="provider-kubernetes|github.com/crossplane-contrib/provider-kubernetes/cmd/provider|"
  # The stack of the #371 bug report: Crossplane v1.19.0 (v1.19.1 and v1.19.2 are refused by the
  # module proxy) and provider-kubernetes v0.18.0, whose go.mod the checksum database here doesn't
  # have: the build skips the database for that one module, and go.sum still pins its hashes.
  [crank-v1]="crossplane-v1|github.com/crossplane/crossplane/cmd/crank||"
  [crossplane-core-v1]="crossplane-v1|github.com/crossplane/crossplane/cmd/crossplane|$crossplane_v1_version|"
  [provider-kubernetes-v0]="provider-kubernetes-v0|github.com/crossplane-contrib/provider-kubernetes/cmd/provider||GONOSUMDB=github.com/crossplane-contrib/provider-kubernetes"
)

# Safe to run concurrently (go test runs test packages in parallel, and each asks for its tools):
# one build per tool at a time under a lock file of its own, so a second caller waits and then
# takes the binary the first built; each build writes into a folder of its own and the binary
# is moved into place whole, so nobody ever sees half of one.
build() {
  local name=$1 spec=${tools[$1]:-}
  if [ -z "$spec" ]; then
    echo "hack/tools.sh: unknown tool \"$name\"; known: ${!tools[*]}" >&2
    return 2
  fi
  local dir pkg ldflags environment
  IFS='|' read -r dir pkg ldflags environment <<< "$spec"
  dir=$root/tools/$dir
  local pin
  pin=$( (cat "$dir/go.mod" "$dir/go.sum"; echo "$pkg $ldflags${environment:+ $environment}") | sha256sum | cut -c1-16)
  local lock
  exec {lock}> "$bin/$name.lock"
  flock "$lock"
  if ! [ -x "$bin/$name" ] || [ "$(cat "$bin/$name.pin" 2>/dev/null)" != "$pin" ]; then
    local start=$SECONDS tmp
    tmp=$(mktemp -d "$bin/.$name.XXXXXX")
    echo "building $name from $pkg (cold builds take minutes)" >&2
    # shellcheck disable=SC2086 # environment holds NAME=VALUE words, or nothing
    if ! (cd "$dir" && env CGO_ENABLED=0 $environment go build -trimpath -ldflags "$ldflags" -o "$tmp/$name" "$pkg"); then
      rm -rf "$tmp"
      return 1
    fi
    mv -f "$tmp/$name" "$bin/$name"
    rm -rf "$tmp"
    echo "$pin" > "$bin/$name.pin"
    echo "built $name in $((SECONDS - start))s" >&2
  fi
  exec {lock}>&-
  echo "$bin/$name"
}

for name in "$@"; do build "$name"; done
