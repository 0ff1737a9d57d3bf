//go:build controlplane

package controlplane

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTeardownTimeline records, for each number of dependents in
// FD_CONTROLPLANE_TEARDOWN (such as 10,30,60), one XR's teardown without
// function-dependencies, one with it, and last one with it and the
// WatchOperations of example/operation/watch-objects.yaml and
// watch-namespaces.yaml, whose Operations nudge the teardown
// (internal/teardown), FD_CONTROLPLANE_TEARDOWN_RUNS times
// (default 1; FD_CONTROLPLANE_TEARDOWN_ARMS, such as without,watched,
// records only those arms), as timelines in FD_CONTROLPLANE_TEARDOWN_OUT (default
// docs/teardown): the reference finalizers on the shared Object over time,
// when each dependent went, and the conflicts the provider hit. `make
// teardown-plot` draws them. It measures and asserts nothing: the other tests
// assert the order; this one shows where the time goes.
func TestTeardownTimeline(t *testing.T) {
	sizes := os.Getenv("FD_CONTROLPLANE_TEARDOWN")
	if sizes == "" {
		t.Skip("set FD_CONTROLPLANE_TEARDOWN to the numbers of dependents to record, such as 10,30,60")
	}
	ctx := testContext(t)
	runs := envInt(t, "FD_CONTROLPLANE_TEARDOWN_RUNS", 1)
	arms := map[string]bool{"without": true, "with": true, "watched": true}
	if a := os.Getenv("FD_CONTROLPLANE_TEARDOWN_ARMS"); a != "" {
		arms = map[string]bool{}
		for _, name := range strings.Split(a, ",") {
			arms[strings.TrimSpace(name)] = true
		}
	}
	s := startStack(ctx, t)
	out := os.Getenv("FD_CONTROLPLANE_TEARDOWN_OUT")
	if out == "" {
		out = filepath.Join(s.root, "docs", "teardown")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal("ERROR:", err)
	}
	s.createXRD(ctx)
	stack := fmt.Sprintf("crossplane-%s-provider-kubernetes-%s", s.releases.crossplane, s.releases.provider)
	var ns []int
	for _, field := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			t.Fatalf("ERROR: FD_CONTROLPLANE_TEARDOWN=%q: %q is not a number of dependents", sizes, field)
		}
		ns = append(ns, n)
		s.create(ctx, gvrComposition, "", composition(fmt.Sprintf("teardown-without-%d", n), n, false))
		s.create(ctx, gvrComposition, "", composition(fmt.Sprintf("teardown-with-%d", n), n, true))
	}
	record := func(kind, composition string, n, run int) {
		if !arms[kind] {
			return
		}
		name := fmt.Sprintf("%s-%d-%d", kind, n, run)
		created := s.createXR(ctx, name, composition)
		a := arm{xr: name}
		if composition != fmt.Sprintf("teardown-without-%d", n) {
			s.converge(ctx, name, n, created, &a)
		}
		s.settle(ctx, name, n, created, &a)
		d := s.deleteXR(ctx, name, n, teardown(n))
		tl := d.timeline
		tl.Arm, tl.Stack = kind, stack
		b, err := json.MarshalIndent(tl, "", "  ")
		if err != nil {
			t.Fatal("ERROR:", err)
		}
		file := filepath.Join(out, fmt.Sprintf("%s-%s.json", stack, name))
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			t.Fatal("ERROR:", err)
		}
		t.Logf("%s: %d dependents, %d of their finalizers on the shared Object; teardown %.1f s, %d conflicts; the shared Object's deletion began %.1f s and ended %.1f s after the XR's; %d reconciles of its Objects, %d Operations, %d nudges, %d API writes, %d of them 409 Conflict; %s",
			name, n, a.finalizers, tl.Gone, tl.Conflicts, tl.SharedDeleting, tl.SharedGone, tl.Reconciles, tl.Operations, tl.Nudges, tl.APIWrites, tl.APIConflicts, file)
	}
	for _, n := range ns {
		for run := 1; run <= runs; run++ {
			record("without", fmt.Sprintf("teardown-without-%d", n), n, run)
			record("with", fmt.Sprintf("teardown-with-%d", n), n, run)
		}
	}
	// Last, with the WatchOperations of example/operation in place, whose
	// Operations nudge the teardown.
	if arms["watched"] {
		s.watchWith(ctx, "watch-objects.yaml", "watch-namespaces.yaml")
	}
	for _, n := range ns {
		for run := 1; run <= runs; run++ {
			record("watched", fmt.Sprintf("teardown-with-%d", n), n, run)
		}
	}
}
