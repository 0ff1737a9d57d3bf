#!/usr/bin/env bash
# Runs the control-plane test (test/controlplane): the real etcd, kube-apiserver,
# kube-controller-manager, provider-kubernetes v1.2.1 and Crossplane core v2.4.0 on loopback,
# reproducing provider-kubernetes #371 without function-dependencies and asserting its fix with it,
# and again on the stack of #371's report (Crossplane v1.19.0, provider-kubernetes v0.18.0, through
# a claim), where the finalizers don't order the remote deletion (that test logs the order) and
# protection: Usages or Both must; and, with Crossplane's Usage webhook served on a free port, proving that the Usages the function
# composes refuse a referenced object's deletion and replay it once its dependent is gone. With
# Crossplane's --enable-operations, it also runs the function as an Operation step, without any
# Composition: the WatchOperation of example/operation/watch-objects.yaml must restore the
# finalizers the provider lost on Objects created directly, protect Objects created after it, keep
# the shared Object's managedFields bounded over ten reconcile waves, and order the deletion of
# everything at once; it also checks example/operation/install.yaml's ClusterRole and that the API
# server refuses a partial apply whose metadata.uid no object of its name has. And, as root,
# TestInstallFromRegistry installs the package the way users do: both platforms' packages pushed as
# one multi-platform package to a registry on loopback, pulled by Crossplane's default package
# runtime, and run by a kubelet through containerd; and shows Crossplane refusing a package whose
# spec.crossplane.version excludes it (see test/controlplane/doc.go).
#
#   hack/controlplane-test.sh [-run REGEX] [-timeout D]
#   hack/controlplane-test.sh -run TestUsageOfExternalObjectRefusesItsDeletionThenReplaysIt
#   hack/controlplane-test.sh -run TestOperation
#
# Builds the pinned tools, the function and the test's dependencies first (cold: about half an
# hour on two cores; see hack/tools.sh), so that the test's own timeout covers only the test. Then
# runs the tests side by side, each in a process and a network namespace of its own, four at a
# time (FD_CONTROLPLANE_LANES), the longest first, and prints each one's output whole when it ends
# and a table of their times last.
#
# provider-kubernetes v1.2.1 can't move its webhook server (:9443) and metrics (:8080), and a
# function built on function-sdk-go serves metrics on :8080 of every interface, so two stacks, or
# a test running beside this one, can't share those ports. Where the kernel allows it (root, or
# unprivileged user namespaces), each test therefore runs in a network namespace of its own, with
# only a loopback interface: everything is built before it enters, and nothing in it can reach the
# network.
#
# Environment:
#   FD_CONTROLPLANE_RUNS_WITHOUT  XRs without the function, one after another (default 3)
#   FD_CONTROLPLANE_RUNS_WITH     XRs with the function, one after another (default 2)
#   FD_CONTROLPLANE_DEPENDENTS    dependent Objects per XR (default 30)
#   FD_CONTROLPLANE_OPERATION_DEPENDENTS  dependent Objects per set of the Operation test
#                               (default 20)
#   FD_CONTROLPLANE_FUNCTION    a function-dependencies binary to test (default: built here from
#                               the working tree)
#   FD_CONTROLPLANE_LOGS        folder for the components' logs (default: a temporary folder),
#                               kept when the test fails or FD_CONTROLPLANE_KEEP_LOGS is set
#   FD_CONTROLPLANE_SHARED_NET  set to run on the machine's own loopback even where a network
#                               namespace is possible (then one test at a time)
#   FD_CONTROLPLANE_LANES       how many tests run at once (default 4)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# One at a time: each cold build takes most of the machine.
for tool in etcd kube-apiserver kube-controller-manager provider-kubernetes crossplane-core \
  crossplane-core-v1 provider-kubernetes-v0 function-patch-and-transform function-auto-ready \
  kubelet kube-scheduler crane crossplane; do
  "$root/hack/tools.sh" "$tool" > /dev/null
done

# TestInstallFromRegistry's node runs pods through containerd and runc: Debian's packages, installed
# here when missing (as root; the test is skipped without root). Installing starts no daemon: the
# test starts its own containerd, with every path its own, and stops it.
if [ "$(id -u)" = 0 ] && ! { command -v containerd && command -v runc && command -v ctr; } > /dev/null; then
  echo "hack/controlplane-test.sh: installing Debian's containerd and runc" >&2
  apt-get update -qq && apt-get install -y -qq containerd runc > /dev/null
fi
# The package it pushes is hack/xpkg.sh's (one per platform, linux/amd64 and linux/arm64): built
# once here, where the module proxy can be reached, so that the test's own builds find every
# module, and both platforms' builds, in the cache.
FD_XPKG_CLI=crossplane "$root/hack/xpkg.sh" > /dev/null

if [ -z "${FD_CONTROLPLANE_FUNCTION:-}" ]; then
  mkdir -p "$root/.cache/controlplane"
  (cd "$root" && go build -o .cache/controlplane/function-dependencies .)
  export FD_CONTROLPLANE_FUNCTION=$root/.cache/controlplane/function-dependencies
fi

cd "$root/test/controlplane"
# The CRDs the test applies come from these modules' sources.
go mod download github.com/crossplane-contrib/provider-kubernetes@v1.2.1 github.com/crossplane/crossplane/v2@v2.4.0
# TestReferenceFinalizersOnCrossplaneV1's: the checksum database here lacks provider-kubernetes
# v0.18.0's go.mod.
GONOSUMDB=github.com/crossplane-contrib/provider-kubernetes \
  go mod download github.com/crossplane-contrib/provider-kubernetes@v0.18.0 github.com/crossplane/crossplane@v1.19.0
# Compiles the test and everything it imports.
go vet -tags controlplane ./...

# The tests are compiled once, and run as lanes: each test in a process of its own, in a network
# namespace of its own, FD_CONTROLPLANE_LANES of them at a time, the longest first. Each test
# starts a stack of its own on fixed ports (provider-kubernetes v1.2.1 can't leave :9443 and
# :8080), and spends most of its time waiting on backoffs, teardowns and the garbage collector,
# not on the CPU: side by side in namespaces of their own, they share nothing but the machine.
#
# Flags: -run REGEX picks the tests (as go test's), -timeout D bounds each test (default 40m).
run_re=. timeout=40m
while [ $# -gt 0 ]; do
  case $1 in
    -run) run_re=$2; shift 2 ;;
    -run=*) run_re=${1#-run=}; shift ;;
    -timeout) timeout=$2; shift 2 ;;
    -timeout=*) timeout=${1#-timeout=}; shift ;;
    -v | -count=1) shift ;;
    *) echo "hack/controlplane-test.sh: unknown flag $1 (known: -run REGEX, -timeout D)" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -tags controlplane -o "$work/controlplane.test" .
mapfile -t listed < <("$work/controlplane.test" -test.list "$run_re" | grep '^Test')
if [ "${#listed[@]}" -eq 0 ]; then
  echo "hack/controlplane-test.sh: no test matches -run $run_re" >&2; exit 1
fi

# The longest first, from the last runs' figures (docs/evidence/cold-make-test.md), so that the lanes
# end close together. A test not named here runs after these.
longest_first=(TestReferenceFinalizers TestBothProtectionsHoldAgainstOutOfBandDeletesAndCrashes
  TestInferredOrderKeepsTheClusterUntilWhatRunsOnIt TestReferenceFinalizersOnCrossplaneV1 TestInstallFromRegistry
  TestCycleUnderWarningWritesNoDependsOnAndNeverDeadlocks TestTheClusterOutlivesTheCompositesThatRunOnIt
  TestOperationRestoresLostReferenceFinalizersAndOrdersDeletion TestUsageOfExternalObjectRefusesItsDeletionThenReplaysIt
  TestWaitForReadyNeverHoldsObjectsBehindAProviderConfig TestOneSweepRepairsEveryObjectWithinTheOperationTimeout)
queue=()
for t in "${longest_first[@]}"; do
  [[ " ${listed[*]} " == *" $t "* ]] && queue+=("$t")
done
for t in "${listed[@]}"; do
  [[ " ${queue[*]} " == *" $t "* ]] || queue+=("$t")
done

# In a network namespace of its own where the kernel allows it (root needs no user namespace;
# anyone else does), with only a loopback interface: everything is built before it enters, and
# nothing in it can reach the network. Elsewhere, one test at a time on the machine's loopback.
isolate=()
lanes=${FD_CONTROLPLANE_LANES:-4}
if [ -z "${FD_CONTROLPLANE_SHARED_NET:-}" ] && command -v unshare > /dev/null && command -v ip > /dev/null; then
  for ns in "--net" "--net --map-root-user"; do
    # shellcheck disable=SC2086 # ns holds flags
    if unshare $ns true 2> /dev/null; then
      # shellcheck disable=SC2206
      isolate=(unshare $ns sh -c 'ip link set lo up && exec "$@"' sh)
      break
    fi
  done
fi
if [ "${#isolate[@]}" -eq 0 ]; then
  echo "hack/controlplane-test.sh: running on the machine's loopback, one test at a time; ports 9443 and 8080 must be free" >&2
  lanes=1
else
  echo "hack/controlplane-test.sh: ${#queue[@]} tests, $lanes at a time, each in a network namespace of its own (${isolate[*]:0:2})" >&2
fi

# A test's output is printed whole when it ends, so that the lanes' lines don't interleave.
# A test of many minutes logs its error far above its end, where a CI log's tail doesn't reach:
# on failure, every error is said again last. The tests start each error's message with "ERROR: "
# for this.
declare -A began=() took=() result=()
running=()
start_test() {
  local t=$1
  began[$t]=$SECONDS
  echo "=== hack/controlplane-test.sh: $t started ($(date -u +%H:%M:%S))"
  "${isolate[@]}" "$work/controlplane.test" -test.run "^$t\$" -test.v -test.count=1 -test.timeout "$timeout" \
    > "$work/$t.log" 2>&1 &
  running+=("$!:$t")
}
finish_test() {
  local t=$1 status=$2
  took[$t]=$((SECONDS - ${began[$t]}))
  if [ "$status" -ne 0 ]; then
    result[$t]=FAIL
  elif grep -q "^--- SKIP: $t " "$work/$t.log"; then
    result[$t]=skip
  else
    result[$t]=ok
  fi
  echo "=== hack/controlplane-test.sh: $t ${result[$t]} in ${took[$t]}s"
  cat "$work/$t.log"
}
next=0
while [ "$next" -lt "${#queue[@]}" ] || [ "${#running[@]}" -gt 0 ]; do
  while [ "$next" -lt "${#queue[@]}" ] && [ "${#running[@]}" -lt "$lanes" ]; do
    start_test "${queue[$next]}"
    next=$((next + 1))
  done
  status=0
  wait -n -p done_pid || status=$?
  still=()
  for entry in "${running[@]}"; do
    if [ "${entry%%:*}" = "$done_pid" ]; then
      finish_test "${entry#*:}" "$status"
    else
      still+=("$entry")
    fi
  done
  running=("${still[@]}")
done

echo "=== hack/controlplane-test.sh: time per test (total ${SECONDS}s, $lanes at a time)"
failed=()
for t in "${queue[@]}"; do
  printf '%6ss  %-4s  %s\n' "${took[$t]}" "${result[$t]}" "$t"
  [ "${result[$t]}" = FAIL ] && failed+=("$t")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "=== hack/controlplane-test.sh: the errors of the run, again"
  for t in "${failed[@]}"; do
    echo "--- $t"
    grep -E -A2 '^ +[a-z0-9_]+_test\.go:[0-9]+: ERROR|^panic: |^FAIL' "$work/$t.log" | cut -c1-2000 || echo "(none logged: see its output above)"
  done
  exit 1
fi
