#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it: every tier test/README.md lists. Every tool
# is built by the project itself (hack/tools.sh) the first time; then the control-plane tier runs
# in the background, and every other tier beside it.
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

# Every tool the tiers run, built before any tier that needs one starts, one at a time: two cold
# builds at once on two cores only slow each other down, and the e2e packages that run in
# parallel then find them built. hack/tools.sh is safe to call concurrently all the same
# (test/e2e/toolcache).
tools=(golangci-lint actionlint benchstat crank crossplane crossplane-core function-patch-and-transform
  function-auto-ready etcd kube-apiserver kube-controller-manager provider-kubernetes crank-v1
  crossplane-core-v1 provider-kubernetes-v0 kubelet kube-scheduler crane)
step "tools: ${tools[*]} (cold builds take about 20 minutes on two cores, then seconds)"
for tool in "${tools[@]}"; do
  start=$SECONDS
  hack/tools.sh "$tool" > /dev/null
  echo "$tool: $((SECONDS - start))s"
done

# The control-plane tier spends most of its time waiting (provider backoffs, teardowns, the
# garbage collector): two thirds of the CPU idle with its four stacks. Every other tier runs beside
# it and takes that CPU. Beside the tools' cold builds instead, which keep both cores busy, the
# tiers that need no tool only slowed them down: 1,685 s for the tools instead of 1,139, for 448 s
# of tiers (docs/evidence/cold-make-test.md). Its output is kept in a file and printed whole when
# it ends; it runs in a session of its own (setsid), so that a run that ends early stops it, and
# everything it started, with one signal.
#
# The #371 study runs here at 20 dependents and two XRs without the function, the same
# mechanism at a size that leaves CI's 90 minutes room for the install scenario; its full
# size (30 dependents, three XRs without; make controlplane) is measured in docs/proofs.md.
logs=$(mktemp -d)
controlplane_pid=
finish() {
  local status=$?
  [ -n "$controlplane_pid" ] && kill -- "-$controlplane_pid" 2>/dev/null
  rm -rf "$logs"
  summary "$status"
}
trap finish EXIT
FD_CONTROLPLANE_DEPENDENTS=${FD_CONTROLPLANE_DEPENDENTS:-20} \
  FD_CONTROLPLANE_RUNS_WITHOUT=${FD_CONTROLPLANE_RUNS_WITHOUT:-2} \
  setsid hack/controlplane-test.sh > "$logs/controlplane.log" 2>&1 &
controlplane_pid=$!

step "golangci-lint (the control-plane tier runs beside this and every tier after it)"
# golangci-lint takes a lock in the temporary folder and, by default, fails when
# another run holds it (make lint in another checkout): wait for it instead.
"$(hack/tools.sh golangci-lint)" run --allow-serial-runners ./...

step "actionlint (the GitHub workflows under .github/workflows)"
# It runs shellcheck on the workflows' run: scripts when shellcheck is on PATH, and skips that
# check otherwise: nothing here installs shellcheck.
"$(hack/tools.sh actionlint)" -no-color

step "unit tests"
go test -count=1 ./...

step "the teardown plot's tests (hack/teardownplot, its own module for gonum/plot)"
(cd hack/teardownplot && go vet ./... && go test -count=1 ./...)

step "unit tests under the race detector, and the function's binary built with it, a thousand calls at once"
go test -race -count=1 .
# The whole-call tables, which moved from the root package to internal/fn; its
# cancellation tests are left out: they cost most of a minute under -race and
# start no goroutine of the function's.
go test -race -count=1 -run 'TestFunctionDeclaresWhatIsMissingAndReportsOnlyWhatNeedsAttention|TestInvalidInputIsFatalAndLeavesDesiredStateUnchanged|TestBadResourcesAreNamedByFieldAndLoseNothingElse' ./internal/fn
go test -race -count=1 ./test/unit/loop -fd.property.n=200 -fd.loop.n=200

# Each target in turn: go test -fuzz takes one at a time. Set FUZZTIME for
# longer runs; -fuzzminimizetime 0 because the function's sorts make the
# coverage of one input vary a little from run to run (see test/unit/loop/fn_never_damages_test.go).
step "fuzzing, ${FUZZTIME:-5s} per target"
for target in ./input/v1beta1:FuzzDecode ./internal/object:FuzzParseReferences ./test/unit/loop:FuzzRunFunction ./test/unit/loop:FuzzRandomGraph; do
  go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime "${FUZZTIME:-5s}" -fuzzminimizetime 0 "${target%%:*}"
done

step "end-to-end tests (real crossplane render, xpkg, schemas)"
# The Makefile's command, written there once: every package under test/e2e.
make e2e

step "control plane test (real provider-kubernetes and Crossplane), when it is not done yet"
status=0
wait "$controlplane_pid" || status=$?
controlplane_pid=
printf '\n=== control plane test (ran beside the tiers above; its output follows)\n'
cat "$logs/controlplane.log"
# Its own table of times joins the run's.
while IFS= read -r line; do steps+=("  control plane: $line"); done < <(grep -E '^ *[0-9]+s  ' "$logs/controlplane.log")
if [ "$status" -ne 0 ]; then
  echo "=== the control plane test failed (exit $status): its errors are again at the end of its output above"
  exit 1
fi
