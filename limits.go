package main

import (
	"os"
	"strconv"
	"strings"
)

// perCallFactor is the memory one call takes, as a multiple of the largest
// request it may receive: the request as received and decoded, its composed
// resources read, the graph, and the response, which repeats desired state.
// BenchmarkInProcess allocates about five times the request's size on the
// wire; eight leaves room for the garbage collector's lag.
const perCallFactor = 8

// unlimitedCalls is how many calls run at once in a pod without a memory
// limit: a call is CPU-bound, so more than a few per core only share the
// same cores and add their memory.
const unlimitedCalls = 16

// concurrentCalls returns how many calls to serve at once: n when it is set,
// else as many as fit the memory limit (cgroup v2's memory.max or v1's
// memory.limit_in_bytes) at perCallFactor times maxRecv bytes each, at
// least one, or unlimitedCalls without a limit.
func concurrentCalls(n, maxRecv int, limit func() (int64, bool)) int {
	if n > 0 {
		return n
	}
	bytes, ok := limit()
	if !ok {
		return unlimitedCalls
	}
	return int(max(1, bytes/(int64(perCallFactor)*int64(maxRecv))))
}

// memoryLimit reads the container's memory limit from its cgroup.
func memoryLimit() (int64, bool) {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(f) //nolint:gosec // Fixed paths of the kernel's.
		if err != nil {
			continue
		}
		// "max" in cgroup v2; a page-rounded maximum of int64 in v1.
		v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || v >= 1<<62 {
			return 0, false
		}
		return v, true
	}
	return 0, false
}
