#!/usr/bin/env bash
# Benchmarks the function against the floor (a pass-through function), against echo and against its
# neighbours in the pipeline, as `make bench` runs it, prints the tables of docs/performance.md,
# then checks the targets and fails if one is missed. See bench_test.go and bench_e2e_test.go.
#
#   1. in process: RunFunction and the floor at N = 10 to 10,000 composed resources, and RunFunction
#      in its phases: reading the request, deciding (the graph work), writing the response
#      (BenchmarkInProcess, BenchmarkGraph);
#   2. over gRPC, at N = 1,000, 5,000 and 10,000: this function, the floor, echo (returns desired state
#      as it came, converting nothing: the least any function costs on the wire), function-auto-ready
#      and function-patch-and-transform, each served as its own process on loopback (BenchmarkServed,
#      e2e tag). Each run calls every function in turn, ROUNDS times, and reports the ratios of the
#      same run's medians;
#   3. hostile request shapes, in process, at N = 1,000 and 10,000 (and fan-in at 20,000 and 50,000): the
#      shapes that push the rules to their worst case, one call per run, and each shape at each N run once
#      more alone under /usr/bin/time for its peak RSS (BenchmarkHostile, bench_hostile_test.go).
#
# Targets, on benchstat's medians: ours/floor at most 0.15 in process and its p50 at most 0.92 over
# gRPC, at N = 1,000 and 10,000; in process, time at 10,000 at most 12 times the time at 1,000; ours/echo
# p50 over gRPC at most 1.05 at N = 1,000 and 5,000; for every hostile shape, time at 10,000 at most 12
# times the time at 1,000. A figure not measured fails its target. Every table is printed before the
# script exits 1 for a target missed.
#
# benchstat (built from tools/benchstat) takes the median of COUNT runs of each benchmark. On a busy
# machine the absolute figures wander; the ratios of functions measured in the same run hold better.
#
#   COUNT=6          runs of each benchmark (benchstat needs 6 for a confidence interval)
#   ROUNDS_1000=5    calls of each function per run over gRPC, at N=1,000
#   ROUNDS_5000=3    the same at N=5,000
#   ROUNDS_10000=2   the same at N=10,000, where one call takes seconds
#   HOSTILE_COUNT=3  runs of each hostile shape at each N (one call each: at 10,000 one takes minutes)
#   FD_BENCH_HOSTILE_ONLY=1 the hostile tier alone
#   FD_BENCH_REUSE=1 print the tables from the last run's output, without running
#   FD_BENCH_OUT     where the output goes (default .cache/bench)
#
# To compare a change with what it changes, build the function of the other commit (go build -o
# /tmp/baseline . in a worktree of it) and run BenchmarkServed alone with FD_BENCH_BASELINE=/tmp/baseline:
# it then calls the two builds in turn, and reports ours/baseline from the same calls.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${FD_BENCH_OUT:-$root/.cache/bench}
mkdir -p "$out"
benchstat=$(hack/tools.sh benchstat)
count=${COUNT:-6}
hostile_only=${FD_BENCH_HOSTILE_ONLY:-}
status=0

if [ -z "${FD_BENCH_REUSE:-}$hostile_only" ]; then
  echo "=== in process (COUNT=$count)" >&2
  { go test -run '^$' -bench '^BenchmarkInProcess$' -benchmem -count "$count" -timeout 2h . && go test -run '^$' -bench '^BenchmarkGraph$' -benchmem -count "$count" -timeout 2h ./internal/composition; } \
    | tee "$out/inprocess.txt" >&2
  : > "$out/wire.txt"
  declare -A default_rounds=([1000]=5 [5000]=3 [10000]=2)
  for n in 1000 5000 10000; do
    rounds=ROUNDS_$n
    rounds=${!rounds:-${default_rounds[$n]}}
    echo "=== over gRPC, N=$n (COUNT=$count, $rounds calls of each function per run)" >&2
    go test -tags e2e -run '^$' -bench "^BenchmarkServed\$/^N=$n\$/" -benchtime "${rounds}x" -count "$count" -timeout 4h . \
      | tee -a "$out/wire.txt" >&2
  done
fi

stats() { "$benchstat" -format csv "$@" 2>>"$out/benchstat.log"; }
: > "$out/benchstat.log"
[ -n "$hostile_only" ] || {
  echo "#inprocess"; stats -filter .name:InProcess -row /N -col /fn "$out/inprocess.txt"
  echo "#graph"; stats -filter .name:Graph -row /N -col /phase "$out/inprocess.txt"
  echo "#served"; stats -filter .name:Served -row /N "$out/wire.txt"
} > "$out/benchstat.csv"

# benchstat's CSV has a section per unit: a line of column names, a line of units, then a row per N.
[ -n "$hostile_only" ] || awk -F, '
  /^#/ { sect = substr($0, 2); header = 0; next }
  /^$/ { header = 0; next }
  /^,/ && header == 0 { for (i = 2; i <= NF; i += 2) name[i] = $i; header = 1; next }
  /^,/ && header == 1 { unit = $2; header = 2; next }
  header == 2 { for (i = 2; i <= NF; i += 2) if (i in name && $i != "") v[sect, $1, name[i], unit] = $i }
  function t(s) {
    if (s == "") return "—"
    if (s < 1e-3) return sprintf("%.0f µs", s * 1e6)
    if (s < 1) return sprintf("%.3g ms", s * 1e3)
    return sprintf("%.3g s", s)
  }
  function ms(x) { return x == "" ? "—" : (x < 1000 ? sprintf("%.0f ms", x) : sprintf("%.3g s", x / 1000)) }
  function count(x) { return x == "" ? "—" : x >= 1e6 ? sprintf("%.2fM", x / 1e6) : (x >= 1e3 ? sprintf("%.1fk", x / 1e3) : sprintf("%d", x)) }
  function r(x) { return x == "" ? "—" : sprintf("%.2f", x) }
  function pair(a, b) { return (a == "" && b == "") ? "—" : r(a) " · " r(b) }
  function phase(n, p) { return t(v["graph", n, p, "sec/op"]) " · " count(v["graph", n, p, "allocs/op"]) }
  function wire(sect, n, fn,   k) {
    for (k in v) { split(k, p, SUBSEP); if (p[1] == sect && p[2] == n && p[4] == fn "-p50-ms") return ms(v[k]) " · " ms(v[sect, n, p[3], fn "-p99-ms"]) }
    return "—"
  }
  function col(sect, n, unit,   k) {
    for (k in v) { split(k, p, SUBSEP); if (p[1] == sect && p[2] == n && p[4] == unit) return v[k] }
    return ""
  }
  # A figure not measured misses its target: make bench is the check.
  function target(what, n, x, limit, shown,   met) {
    met = x != "" && x + 0 <= limit
    targets++; if (!met) failed++
    printf "| %s | %s | %s | %s |\n", what, n, x == "" ? "—" : shown, met ? "pass" : "FAIL"
  }
  function ratio(a, b) { return (a == "" || b == "") ? "" : a / b }
  END {
    split("10 100 1000 5000 10000 1000-namespaced", rows, " ")
    print "| N | ours | floor | ours/floor | allocs ours · floor | over gRPC ours/floor p50 · p99 | ours/echo p50 · p99 | ours/auto-ready p50 · p99 | ours/patch-and-transform p50 · p99 |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= 6; i++) {
      n = rows[i]; o = v["inprocess", n, "ours", "sec/op"]; f = v["inprocess", n, "floor", "sec/op"]
      if (o == "" && f == "" && col("served", n, "ours/floor-p50") == "") continue
      printf "| %s | %s | %s | %s | %s · %s | %s | %s | %s | %s |\n", n, t(o), t(f), (o != "" && f != "") ? r(o / f) : "—",
        count(v["inprocess", n, "ours", "allocs/op"]), count(v["inprocess", n, "floor", "allocs/op"]),
        pair(col("served", n, "ours/floor-p50"), col("served", n, "ours/floor-p99")),
        pair(col("served", n, "ours/echo-p50"), col("served", n, "ours/echo-p99")),
        pair(col("served", n, "ours/auto-ready-p50"), col("served", n, "ours/auto-ready-p99")),
        pair(col("served", n, "ours/patch-and-transform-p50"), col("served", n, "ours/patch-and-transform-p99"))
    }
    print ""
    print "Over gRPC, p50 · p99 per call:"
    print ""
    print "| N | ours | floor | echo | function-auto-ready | function-patch-and-transform |"
    print "|---|---|---|---|---|---|"
    split("1000 5000 10000", served, " ")
    for (i = 1; i <= 3; i++) {
      n = served[i]
      printf "| %s | %s | %s | %s | %s | %s |\n", n, wire("served", n, "ours"), wire("served", n, "floor"),
        wire("served", n, "echo"), wire("served", n, "auto-ready"), wire("served", n, "patch-and-transform")
    }
    print ""
    print "Graph work: RunFunction on a decoded request with 3 references per dependent, whole and in its phases"
    print "(time · allocations per call):"
    print ""
    print "| N | edges | whole | read the request | decide (the graph work) | write the response |"
    print "|---|---|---|---|---|---|"
    split("1000 10000", graph, " ")
    for (i = 1; i <= 2; i++) {
      n = graph[i]
      printf "| %s | %s | %s | %s | %s | %s |\n", n, v["graph", n, "all", "edges"],
        phase(n, "all"), phase(n, "read"), phase(n, "decide"), phase(n, "write")
    }
    print ""
    d1 = v["graph", "1000", "decide", "sec/op"]; d10 = v["graph", "10000", "decide", "sec/op"]
    growth = ratio(v["inprocess", "10000", "ours", "sec/op"], v["inprocess", "1000", "ours", "sec/op"])
    printf "Growth from N=1000 to 10000: in process %s×, graph work %s×.\n",
      growth != "" ? sprintf("%.1f", growth) : "—", (d1 != "") ? sprintf("%.1f", d10 / d1) : "—"

    print ""
    print "Targets:"
    print ""
    print "| target | N | measured | |"
    print "|---|---|---|---|"
    for (i = 1; i <= 2; i++) {
      n = graph[i]; x = ratio(v["inprocess", n, "ours", "sec/op"], v["inprocess", n, "floor", "sec/op"])
      target("in process, ours/floor ≤ 0.15", n, x, 0.15, sprintf("%.3f", x))
    }
    for (i = 1; i <= 2; i++) {
      n = graph[i]; x = col("served", n, "ours/floor-p50")
      target("over gRPC, ours/floor p50 ≤ 0.92", n, x, 0.92, sprintf("%.3f", x))
    }
    target("in process, growth of ours ≤ 12×", "1000 → 10000", growth, 12, sprintf("%.2f×", growth))
    for (i = 1; i <= 2; i++) {
      n = served[i]; x = col("served", n, "ours/echo-p50")
      target("over gRPC, ours/echo p50 ≤ 1.05", n, x, 1.05, sprintf("%.3f", x))
    }
    if (failed) {
      printf "\n%d of %d targets missed.\n", failed, targets
      exit 1
    }
  }
' "$out/benchstat.csv" || status=1

# 3. Hostile request shapes (BenchmarkHostile), each shape its own process, one call per run, HOSTILE_COUNT
# runs; then each shape at each N that ran once more as its own process, for its peak RSS: one call on the
# request itself, with no copy beside it (FD_BENCH_RSS=1), under /usr/bin/time (Debian's package time). Each
# process may use at most HOSTILE_MEM_KB of address space (default three quarters of the memory available),
# so that a shape that would take every GB fails alone, with the function's "out of memory".
hostile_count=${HOSTILE_COUNT:-3}
hostile_shapes="sameName matchAllSelector matchAllPatterns inferredCycle fanIn"
if [ -z "${FD_BENCH_REUSE:-}" ]; then
  if [ ! -x /usr/bin/time ]; then
    echo "bench: /usr/bin/time is missing, which measures the hostile tier's peak RSS: apt-get install time" >&2
    exit 1
  fi
  mem_kb=${HOSTILE_MEM_KB:-$(awk '/^MemAvailable:/ { print int($2 * 3 / 4) }' /proc/meminfo)}
  go test -c -o "$out/hostile.test" .
  hostile() { (ulimit -v "$mem_kb" && "$out/hostile.test" -test.run '^$' -test.benchtime 1x -test.timeout 8h "$@"); }
  : > "$out/hostile.txt"
  for shape in $hostile_shapes; do
    echo "=== hostile shapes: $shape (HOSTILE_COUNT=$hostile_count, one call per run)" >&2
    hostile -test.bench "^BenchmarkHostile\$/^shape=$shape\$" -test.count "$hostile_count" \
      | tee -a "$out/hostile.txt" >&2 || status=1
  done
  : > "$out/hostile-rss.txt"
  while read -r shape n; do
    echo "=== hostile shapes: peak RSS of $shape at N=$n" >&2
    if (ulimit -v "$mem_kb" && FD_BENCH_RSS=1 /usr/bin/time -f %M -o "$out/hostile-rss.kb" "$out/hostile.test" -test.run '^$' \
      -test.bench "^BenchmarkHostile\$/^shape=$shape\$/^N=$n\$" -test.benchtime 1x -test.timeout 8h >&2); then
      echo "$shape $n $(tail -n 1 "$out/hostile-rss.kb")" >> "$out/hostile-rss.txt"
    fi
  done < <(sed -n 's|^BenchmarkHostile/shape=\([^/]*\)/N=\([0-9]*\)-[0-9]*[[:space:]].*|\1 \2|p' "$out/hostile.txt" | sort -u)
fi

stats -filter .name:Hostile -row /N -col /shape "$out/hostile.txt" > "$out/hostile.csv" || status=1

# The same CSV as above, a column per shape; then hostile-rss.txt: shape, N and peak RSS in KiB.
awk -F, -v shapes="$hostile_shapes" '
  FILENAME == ARGV[2] { split($0, f, " "); rss[f[1], f[2]] = f[3]; next }
  /^$/ { header = 0; next }
  /^,/ && header == 0 { for (i = 2; i <= NF; i += 2) name[i] = $i; header = 1; next }
  /^,/ && header == 1 { unit = $2; header = 2; next }
  header == 2 { for (i = 2; i <= NF; i += 2) if (i in name && $i != "") v[$1, name[i], unit] = $i }
  function t(s) {
    if (s == "") return "—"
    if (s < 1e-3) return sprintf("%.0f µs", s * 1e6)
    if (s < 1) return sprintf("%.3g ms", s * 1e3)
    return sprintf("%.3g s", s)
  }
  function count(x) { return x == "" ? "—" : x >= 1e6 ? sprintf("%.2fM", x / 1e6) : (x >= 1e3 ? sprintf("%.1fk", x / 1e3) : sprintf("%d", x)) }
  function bytes(x) { return x == "" ? "—" : x >= 2^30 ? sprintf("%.2f GiB", x / 2^30) : (x >= 2^20 ? sprintf("%.0f MiB", x / 2^20) : sprintf("%.1f KiB", x / 2^10)) }
  function target(what, x, limit, shown,   met) {
    met = x != "" && x + 0 <= limit
    targets++; if (!met) failed++
    printf "| %s | %s | %s |\n", what, x == "" ? "—" : shown, met ? "pass" : "FAIL"
  }
  END {
    k = split(shapes, shape, " ")
    split("1000 10000 20000 50000", sizes, " ")
    print ""
    print "Hostile request shapes, in process (BenchmarkHostile; one call per run, and peak RSS of one call alone):"
    print ""
    print "| shape | N | time | allocations | allocated per resource | peak RSS | peak RSS per resource |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= k; i++) for (j = 1; j <= 4; j++) {
      s = shape[i]; n = sizes[j]
      if (v[n, s, "sec/op"] == "" && rss[s, n] == "" && n > 10000) continue
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", s, n, t(v[n, s, "sec/op"]), count(v[n, s, "allocs/op"]),
        bytes(v[n, s, "B/resource"]), rss[s, n] == "" ? "—" : bytes(rss[s, n] * 1024), rss[s, n] == "" ? "—" : bytes(rss[s, n] * 1024 / n)
    }
    print ""
    print "| target | measured | |"
    print "|---|---|---|"
    for (i = 1; i <= k; i++) {
      s = shape[i]; a = v["1000", s, "sec/op"]; b = v["10000", s, "sec/op"]
      x = (a == "" || b == "") ? "" : b / a
      target("hostile " s ", growth from 1000 to 10000 ≤ 12×", x, 12, sprintf("%.1f×", x))
    }
    if (failed) {
      printf "\n%d of %d hostile targets missed.\n", failed, targets
      exit 1
    }
  }
' "$out/hostile.csv" "$out/hostile-rss.txt" || status=1
exit "$status"
