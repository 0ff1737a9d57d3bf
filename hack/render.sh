#!/usr/bin/env bash
# Renders an example with the real pipeline, patch-and-transform →
# function-dependencies → auto-ready, and prints the result with the functions'
# results. Before it, a comment line says which reference finalizers the
# example's observed resources lack (the provider-kubernetes #371 state) that
# the render declares.
#
#   hack/render.sh [EXAMPLE-FOLDER]        # default: example/cluster; "namespaced", "explicit" and "external" work too
#
# A folder with a cronoperation.yaml instead of a composition, such as
# example/operation, is rendered as that CronOperation's sweep of the cluster
# state in its cluster.yaml, with `crossplane operation render` of the current
# CLI: function-dependencies is the only function, and the comment lines read
# cluster.yaml.
#
# It builds what is missing (the pinned tools through hack/tools.sh into
# .cache/bin, which takes minutes the first time; the function from the working
# tree), starts the three functions with --insecure on free loopback ports,
# points a temporary copy of the example's functions.yaml at them, and stops
# them when it exits, however it exits.
#
# It renders with the current CLI (crossplane/cli v2.5.0), whose render runs
# Crossplane core's own reconciler from a core binary and prints each
# result's reason. FD_RENDER_CLI=crank renders with crank (crossplane v2.2.0),
# the last CLI that renders in process, whose results name no reason. A
# Crossplane v1 example, one with a claim.yaml such as example/v1, is
# rendered with crank-v1 (Crossplane v1.19.0's CLI, the bug report's).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The folder as given, else relative to the repository, else an example's name.
example=${1:-$root/example/cluster}
for candidate in "$example" "$root/$example" "$root/example/$example"; do
  if [ -d "$candidate" ]; then
    example=$(cd "$candidate" && pwd)
    break
  fi
done
if [ ! -d "$example" ]; then
  echo "hack/render.sh: no example folder \"$example\"" >&2
  exit 2
fi
files=(xr.yaml composition.yaml functions.yaml observed.yaml xrd.yaml)
state=observed.yaml
if [ -f "$example/cronoperation.yaml" ]; then
  files=(cronoperation.yaml functions.yaml cluster.yaml)
  state=cluster.yaml
fi
for f in "${files[@]}"; do
  if [ ! -f "$example/$f" ]; then
    echo "hack/render.sh: $example has no $f" >&2
    exit 2
  fi
done

cli=${FD_RENDER_CLI:-crossplane}
if [ -z "${FD_RENDER_CLI:-}" ] && [ -f "$example/claim.yaml" ]; then
  cli=crank-v1
fi
case $cli in
  crank) tools=(crank function-patch-and-transform function-auto-ready) ;;
  crank-v1) tools=(crank-v1 function-patch-and-transform function-auto-ready) ;;
  crossplane) tools=(crossplane crossplane-core function-patch-and-transform function-auto-ready) ;;
  *) echo "hack/render.sh: FD_RENDER_CLI must be crank, crank-v1 or crossplane, not \"$cli\"" >&2; exit 2 ;;
esac
with=$cli
if [ "$state" = cluster.yaml ]; then
  if [ "${FD_RENDER_CLI:-crossplane}" != crossplane ]; then
    echo "hack/render.sh: $example is an Operation example, which only FD_RENDER_CLI=crossplane renders" >&2
    exit 2
  fi
  cli=operation
  tools=(crossplane crossplane-core)
  with="crossplane operation render"
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  local status=$?
  for pid in ${pids[@]+"${pids[@]}"}; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    # The functions' logs are the first place to look when a render fails.
    for log in "$tmp"/*.log; do
      [ -s "$log" ] || continue
      echo "--- $(basename "$log" .log) log:" >&2
      cat "$log" >&2
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Through a variable, so that a failed build stops the script.
built=$("$root/hack/tools.sh" "${tools[@]}")
mapfile -t paths <<<"$built"
declare -A tool
for i in "${!tools[@]}"; do tool[${tools[$i]}]=${paths[$i]}; done

# One build for both: the function and the helper that reads the observed state.
(cd "$root" && go build -o "$tmp/" .)

listening() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# serve NAME BINARY [ARGS...] starts a function on a free port and sets $port.
# A port that looked free can be taken before the function binds it, so a
# function that exits before it listens is tried again on another port.
serve() {
  local name=$1 binary=$2
  shift 2
  local attempt candidate pid
  for attempt in 1 2 3 4 5; do
    # Below Linux's ephemeral range, where outgoing connections take ports.
    candidate=$((20000 + RANDOM % 12000))
    listening "$candidate" && continue
    "$binary" --insecure --address="127.0.0.1:$candidate" "$@" >"$tmp/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 300); do
      if ! kill -0 "$pid" 2>/dev/null; then
        break
      fi
      if listening "$candidate"; then
        port=$candidate
        return
      fi
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    echo "hack/render.sh: $name did not listen on 127.0.0.1:$candidate (attempt $attempt)" >&2
  done
  echo "hack/render.sh: cannot start $name" >&2
  return 1
}

# The checked-in functions.yaml points at fixed ports, one per function:
# replace each with the port its function was started on.
cp "$example/functions.yaml" "$tmp/functions.yaml"
retarget() {
  local fixed=$1 name=$2
  if ! grep -q "runtime-development-target: localhost:$fixed\$" "$tmp/functions.yaml"; then
    echo "hack/render.sh: $example/functions.yaml has no target localhost:$fixed for $name" >&2
    return 1
  fi
  sed "s|runtime-development-target: localhost:$fixed\$|runtime-development-target: 127.0.0.1:$port|" \
    "$tmp/functions.yaml" >"$tmp/functions.yaml.new"
  mv "$tmp/functions.yaml.new" "$tmp/functions.yaml"
}
serve function-dependencies "$tmp/function-dependencies" --debug
retarget 9443 function-dependencies
if [ "$cli" != operation ]; then
  serve function-patch-and-transform "${tool[function-patch-and-transform]}"
  retarget 9444 function-patch-and-transform
  serve function-auto-ready "${tool[function-auto-ready]}"
  retarget 9445 function-auto-ready
fi

# The function's own graph command lists what the observed resources lack; it exits
# 1 when something is missing, which is the point of the example.
echo "# provider-kubernetes #371 in ${example#"$root"/}/$state, as function-dependencies graph finds it:"
{ "$tmp/function-dependencies" graph "$example/$state" 2>&1 >/dev/null || true; } |
  sed -n 's/^\(missing\|stale\|invalid reference\): /#   &/p'


args=("$example/xr.yaml" "$example/composition.yaml" "$tmp/functions.yaml"
  --observed-resources="$example/observed.yaml" --xrd="$example/xrd.yaml" --include-function-results)
# What Crossplane would fetch for the function's requirements, where the example says.
if [ -f "$example/required.yaml" ]; then
  args+=(--required-resources="$example/required.yaml")
fi
# In microseconds, from bash 5's clock; without it, the time isn't printed.
now() { local t=${EPOCHREALTIME:-}; echo "${t//[.,]/}"; }
start=$(now)
case $cli in
  crank) "${tool[crank]}" render "${args[@]}" ;;
  # v1.19's render has no --xrd: it applies no XRD defaults.
  crank-v1) "${tool[crank-v1]}" render "${args[@]:0:4}" --include-function-results ;;
  # A configuration file of its own keeps the CLI from reading or writing the
  # user's.
  crossplane) CROSSPLANE_CONFIG=$tmp/crossplane-config.yaml \
    "${tool[crossplane]}" composition render "${args[@]}" --crossplane-binary="${tool[crossplane-core]}" ;;
  operation) CROSSPLANE_CONFIG=$tmp/crossplane-config.yaml \
    "${tool[crossplane]}" operation render "$example/cronoperation.yaml" "$tmp/functions.yaml" \
    --required-resources="$example/cluster.yaml" --include-function-results --crossplane-binary="${tool[crossplane-core]}" ;;
esac
if [ -n "$start" ]; then
  echo "hack/render.sh: rendered $(basename "$example") with $with in $((($(now) - start) / 1000))ms" >&2
fi
