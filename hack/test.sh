#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it: every tier test/README.md lists, in its
# order. Every tool is built by the project itself (hack/tools.sh) the first time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# Each step's time, summed up at the end however the run ends: the first run's figures.
steps=()
step() {
  [ -n "${current:-}" ] && steps+=("$((SECONDS - started))s  $current")
  current=$*; started=$SECONDS
  printf '\n=== %s\n' "$*"
}
summary() {
  local status=${1:-$?}
  [ -n "${current:-}" ] && steps+=("$((SECONDS - started))s  $current")
  printf '\n=== time per step (total %ss, exit %s)\n' "$SECONDS" "$status"
  printf '%s\n' "${steps[@]}" | cut -c1-100
}
trap summary EXIT

step "gofmt"
unformatted=$(git ls-files '*.go' | xargs gofmt -l)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...
go vet -tags e2e ./test/...

step "generated input CRD is current"
(cd input && go generate -tags generate ./...)
if ! git diff --quiet -- package/input input/v1beta1; then
  echo "package/input or the deepcopy functions are stale: run make generate and commit"
  git --no-pager diff --stat -- package/input input/v1beta1
  exit 1
fi

# Before anything runs beside anything else: apt-get takes dpkg's lock, and the control-plane
# tier may install containerd and runc later. Both steps share one apt-get update.
apt_updated=
apt_install() {
  [ -n "$apt_updated" ] || apt-get update -qq
  apt_updated=1
  apt-get install -y -qq "$@" >/dev/null
}
if ! command -v dot >/dev/null; then
  step "installing Graphviz (Debian package), which draws the graph in the e2e tests"
  apt_install graphviz
fi
if ! command -v qemu-aarch64-static >/dev/null; then
  step "installing qemu-user-static (Debian package), which runs the arm64 package's binary in the e2e tests"
  apt_install qemu-user-static
fi

# The tiers that need no tool run beside the tools' builds, in the background: a cold build
# leaves a core idle while it downloads modules and while it links, one binary at a time. Their
# output is kept in a file and printed whole when they end, so that the two don't interleave.
toolfree() {
  set -euo pipefail
  steps=() current=
  trap summary EXIT
  step "unit tests"
  go test -count=1 ./...

  step "the teardown plot's tests (hack/teardownplot, its own module for gonum/plot)"
  (cd hack/teardownplot && go vet ./... && go test -count=1 ./...)

  step "unit tests under the race detector, and the function's binary built with it, a thousand calls at once"
  go test -race -count=1 .
  go test -race -count=1 ./test/unit/loop -fd.property.n=200 -fd.loop.n=200

  # Each target in turn: go test -fuzz takes one at a time. Set FUZZTIME for
  # longer runs; -fuzzminimizetime 0 because the function's sorts make the
  # coverage of one input vary a little from run to run (see test/unit/loop/fn_never_damages_test.go).
  step "fuzzing, ${FUZZTIME:-5s} per target"
  for target in ./input/v1beta1:FuzzDecode ./internal/object:FuzzParseReferences ./test/unit/loop:FuzzRunFunction ./test/unit/loop:FuzzRandomGraph; do
    go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime "${FUZZTIME:-5s}" -fuzzminimizetime 0 "${target%%:*}"
  done
}
# Each background tier runs in a session of its own (setsid), so that a run that ends early
# stops it, and everything it started, with one signal.
logs=$(mktemp -d)
background=()
finish() {
  local status=$?
  for pid in "${background[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  rm -rf "$logs"
  summary "$status"
}
trap finish EXIT
export -f toolfree step summary
setsid bash -c toolfree > "$logs/toolfree.log" 2>&1 &
toolfree_pid=$!
background+=("$toolfree_pid")
# await NAME PID LOG prints LOG once PID ends, and fails the run if it failed.
await() {
  local status=0
  wait "$2" || status=$?
  printf '\n=== %s (ran beside the others; its output follows)\n' "$1"
  cat "$3"
  # Its own table of times joins the run's.
  local line
  while IFS= read -r line; do steps+=("  beside: $line"); done < <(grep -E '^ *[0-9]+s  ' "$3")
  if [ "$status" -ne 0 ]; then
    echo "=== $1 failed (exit $status): see above"
    exit 1
  fi
}

# Every tool the tiers run, built before any tier that needs one starts, one at a time: two cold
# builds at once on two cores only slow each other down, and the e2e packages that run in
# parallel then find them built. hack/tools.sh is safe to call concurrently all the same
# (test/e2e/toolcache).
tools=(golangci-lint benchstat crank crossplane crossplane-core function-patch-and-transform
  function-auto-ready etcd kube-apiserver kube-controller-manager provider-kubernetes crank-v1
  crossplane-core-v1 provider-kubernetes-v0 kubelet kube-scheduler crane)
step "tools: ${tools[*]} (cold builds take 20-40 minutes on two cores, then seconds; the unit, race and fuzz tiers run beside them)"
for tool in "${tools[@]}"; do
  start=$SECONDS
  hack/tools.sh "$tool" > /dev/null
  echo "$tool: $((SECONDS - start))s"
done

step "the tiers that need no tool, when they are not done yet"
await "unit, teardown plot, race and fuzz tiers" "$toolfree_pid" "$logs/toolfree.log"

# The control-plane tier spends most of its time waiting (provider backoffs, teardowns, the garbage
# collector), and runs beside the static and end-to-end tiers, which take the CPU it leaves.
# The #371 study runs here at 20 dependents and two XRs without the function, the same
# mechanism at a size that leaves CI's 90 minutes room for the install scenario; its full
# size (30 dependents, three XRs without; make controlplane) is measured in docs/proofs.md.
FD_CONTROLPLANE_DEPENDENTS=${FD_CONTROLPLANE_DEPENDENTS:-20} \
  FD_CONTROLPLANE_RUNS_WITHOUT=${FD_CONTROLPLANE_RUNS_WITHOUT:-2} \
  setsid hack/controlplane-test.sh > "$logs/controlplane.log" 2>&1 &
controlplane_pid=$!
background+=("$controlplane_pid")

step "golangci-lint (the control-plane tier runs beside it and the end-to-end tests)"
"$(hack/tools.sh golangci-lint)" run ./...

step "end-to-end tests (real crossplane render, xpkg, schemas)"
# The Makefile's command, written there once: every package under test/e2e.
make e2e

step "control plane test (real provider-kubernetes and Crossplane), when it is not done yet"
await "control plane test" "$controlplane_pid" "$logs/controlplane.log"
