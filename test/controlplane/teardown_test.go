//go:build controlplane

package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTeardownTimeline records, for each number of dependents in
// FD_CONTROLPLANE_TEARDOWN (such as 10,30,60), one XR's teardown without
// function-dependencies, one with it (reference finalizers, the default),
// one with protection: Usages (a Usage per edge instead of the finalizers),
// and last one with it and the WatchOperations of
// example/operation/watch-objects.yaml and watch-namespaces.yaml, whose
// Operations nudge the teardown (internal/teardown),
// FD_CONTROLPLANE_TEARDOWN_RUNS times (default 1;
// FD_CONTROLPLANE_TEARDOWN_ARMS, such as without,usages, records only those
// arms), as timelines in FD_CONTROLPLANE_TEARDOWN_OUT (default
// docs/teardown): the reference finalizers on the shared Object over time,
// when each dependent and each Usage went, and the conflicts the provider
// hit. `make teardown-plot` draws them. FD_CONTROLPLANE_TEARDOWN_STACK=v1
// records on Crossplane v1.19.0 and provider-kubernetes v0.18.0, through
// claims, without the WatchOperations, which v1 lacks.
//
// It measures, and asserts only the order and that nothing is left: the
// shared Namespace begins terminating after every dependent's ConfigMap is
// gone, in every arm that orders deletion (with the finalizers, on
// provider-kubernetes v1 and later only).
func TestTeardownTimeline(t *testing.T) {
	sizes := os.Getenv("FD_CONTROLPLANE_TEARDOWN")
	if sizes == "" {
		t.Skip("set FD_CONTROLPLANE_TEARDOWN to the numbers of dependents to record, such as 10,30,60")
	}
	ctx := testContext(t)
	runs := envInt(t, "FD_CONTROLPLANE_TEARDOWN_RUNS", 1)
	arms := map[string]bool{"without": true, "with": true, "usages": true, "watched": true}
	if a := os.Getenv("FD_CONTROLPLANE_TEARDOWN_ARMS"); a != "" {
		arms = map[string]bool{}
		for _, name := range strings.Split(a, ",") {
			arms[strings.TrimSpace(name)] = true
		}
	}
	var s *stack
	switch v := os.Getenv("FD_CONTROLPLANE_TEARDOWN_STACK"); v {
	case "", "v2":
		s = startStack(ctx, t)
	case "v1":
		s = startRelease(ctx, t, v1Release)
		delete(arms, "watched")
	default:
		t.Fatalf("ERROR: FD_CONTROLPLANE_TEARDOWN_STACK=%q: want v1 or v2", v)
	}
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
		s.create(ctx, gvrComposition, "", withInput(composition(fmt.Sprintf("teardown-usages-%d", n), n, true), s.usagesInput()))
	}
	record := func(kind, composition string, n, run int) {
		if !arms[kind] {
			return
		}
		name := fmt.Sprintf("%s-%d-%d", kind, n, run)
		tl := s.recordTeardown(ctx, kind, name, composition, n)
		tl.Arm, tl.Stack = kind, stack
		b, err := json.MarshalIndent(tl, "", "  ")
		if err != nil {
			t.Fatal("ERROR:", err)
		}
		file := filepath.Join(out, fmt.Sprintf("%s-%s.json", stack, name))
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			t.Fatal("ERROR:", err)
		}
		t.Logf("%s: %d dependents; teardown %.1f s, %d conflicts; the shared Object's deletion began %.1f s and ended %.1f s after the XR's, its Namespace began terminating at %.1f s, the last dependent went at %.1f s; %d Usages Ready %.1f s after the XR's creation, gone by %.1f s, %d deletions refused, %d replayed; %d reconciles of its Objects, %d Operations, %d nudges, %d API writes, %d of them 409 Conflict; %s",
			name, n, tl.Gone, tl.Conflicts, tl.SharedDeleting, tl.SharedGone, tl.NamespaceTerminating, last(tl.DependentsGone), len(tl.UsagesGone), tl.UsagesReady, last(tl.UsagesGone), tl.Refusals, tl.Replays, tl.Reconciles, tl.Operations, tl.Nudges, tl.APIWrites, tl.APIConflicts, file)
	}
	for _, n := range ns {
		for run := 1; run <= runs; run++ {
			record("without", fmt.Sprintf("teardown-without-%d", n), n, run)
			record("with", fmt.Sprintf("teardown-with-%d", n), n, run)
			record("usages", fmt.Sprintf("teardown-usages-%d", n), n, run)
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

// recordTeardown composes an XR of the composition (through a claim on
// Crossplane v1), waits until what protects its edges is in place and the
// Objects settle, deletes it, and returns the timeline. In an arm that
// orders deletion it fails the test if the shared Namespace began
// terminating before every dependent's ConfigMap was gone, or if anything,
// Usages included, is left.
func (s *stack) recordTeardown(ctx context.Context, kind, name, composition string, n int) timeline {
	t := s.t
	xr, created := name, time.Time{}
	if s.releases.v1 {
		xr, created = s.createClaim(ctx, name, composition)
	} else {
		created = s.createXR(ctx, name, composition)
	}
	a := arm{xr: xr}
	usagesReady := -1.0
	switch kind {
	case "with", "watched":
		s.converge(ctx, xr, n, created, &a)
	case "usages":
		s.awaitUsages(ctx, xr, n)
		usagesReady = time.Since(created).Seconds()
	}
	s.settle(ctx, xr, n, created, &a)
	var d deletion
	if s.releases.v1 {
		d = s.deleteOwner(ctx, xr, n, teardown(n), claimKind, s.client.Resource(gvrClaim).Namespace(claimNamespace), name, nil)
	} else {
		d = s.deleteXR(ctx, xr, n, teardown(n))
	}
	tl := d.timeline
	tl.UsagesReady = usagesReady
	ordered := kind == "usages" || (kind != "without" && !s.releases.v1)
	switch {
	case !ordered:
	case !d.terminated:
		t.Errorf("ERROR: %s: the shared Namespace never began terminating within %s", name, teardown(n))
	case d.configMapsLeft > 0:
		t.Errorf("ERROR: %s: the shared Namespace began terminating while %d of %d dependents' ConfigMaps still existed: %s", name, d.configMapsLeft, n, strings.Join(d.configMapsLeftNames, ", "))
	}
	if len(d.left) > 0 && ordered {
		t.Errorf("ERROR: %s: left behind %s after deleting it: %s", name, teardown(n), strings.Join(d.left, "; "))
	}
	if usages, err := s.client.Resource(s.gvrUsage()).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr}); err != nil {
		t.Errorf("ERROR: %s: cannot list its Usages after the teardown: %v", name, err)
	} else if len(usages.Items) > 0 && ordered {
		t.Errorf("ERROR: %s: %d Usages left after the teardown", name, len(usages.Items))
	}
	return tl
}

// last is the last of the times, or -1 for none.
func last(times []float64) float64 {
	if len(times) == 0 {
		return -1
	}
	return times[len(times)-1]
}
