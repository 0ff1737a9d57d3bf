//go:build controlplane

package controlplane

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Bounds of the WaitForReady scenario.
const (
	// waitReadyCreated bounds how long from creating the XR until every
	// Object behind its ProviderConfig exists: one reconcile composes the
	// ProviderConfig, the next observes it and may release them.
	waitReadyCreated = 2 * time.Minute
	// waitReadyCalledAgain bounds how long after the nudge until the
	// function is called again: the change of a composed resource makes
	// Crossplane reconcile its XR, and its poll would within a minute.
	waitReadyCalledAgain = 2 * time.Minute
)

// heldBackLogged is in the line Crossplane's event broadcaster logs
// (--debug) for every HeldBack event it is asked to record, before its spam
// filter can drop a repeat (see staleFinalizerLogged).
const heldBackLogged = "reason: 'HeldBack'"

// TestWaitForReadyNeverHoldsObjectsBehindAProviderConfig composes, with
// creation: WaitForReady, a provider-kubernetes ProviderConfig reading a
// kubeconfig Secret for this control plane, which the test writes as in the
// inferred-order scenario's baseline, and n Objects whose
// spec.providerConfigRef names it and that the input declares depend on it
// (issue 46, trap 3). A ProviderConfig never reports Ready: had the function
// waited for its Ready condition, it would hold the Objects back for ever,
// with a HeldBack event on every reconcile. provider-helm's Releases, the
// issue's case, can't be built here; provider-kubernetes' own ProviderConfig
// has the same property. With protection: Usages, as the README recommends,
// each Object's edge to the ProviderConfig, which no reference finalizer can
// protect, gets a ClusterUsage. It asserts that
//
//   - the ProviderConfig has no Ready condition (without that, the test
//     proves nothing);
//   - every Object is created, Synced and Ready, its remote ConfigMap there,
//     and its ClusterUsage Ready;
//   - once they exist, a reconcile of the XR (the test changes the
//     ProviderConfig's annotations, which Crossplane watches) raises no
//     HeldBack event, on the API server or in Crossplane's log;
//   - deleting the XR deletes every Object before the ProviderConfig and
//     leaves nothing.
func TestWaitForReadyNeverHoldsObjectsBehindAProviderConfig(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_WAITREADY_DEPENDENTS", 3)
	s := startStack(ctx, t)
	s.createXRD(ctx)
	kubeconfig, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	// The inferred-order scenario's shape: the ProviderConfig is composition
	// resource "cluster", the Objects app-01 to app-n; the Secret is the
	// test's.
	a := &inferArm{xr: "waitready", n: n, secretFrom: secretOutside, usages: n,
		dependencies: []any{map[string]any{"resource": "app-.*", "dependsOn": []any{"cluster"}}},
		input:        map[string]any{"creation": "WaitForReady", "protection": "Usages"}}
	s.create(ctx, gvrComposition, "", a.composition(kubeconfig))
	s.create(ctx, gvrNamespace, "", obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": a.namespace()}}))
	s.create(ctx, gvrSecret, a.namespace(), obj(a.secret(kubeconfig)))

	scenario := time.Now()
	created := s.createXR(ctx, a.xr, a.xr)
	var st inferredState
	s.await(ctx, fmt.Sprintf("the %d Objects behind ProviderConfig %s to be created", n, a.providerConfig()), waitReadyCreated, func(ctx context.Context) (bool, error) {
		var err error
		if st, err = s.inferredState(ctx, a); err != nil {
			return false, err
		}
		if st.providerConfig != nil && len(st.dependents) == n {
			return true, nil
		}
		return false, fmt.Errorf("composed so far: %s; the XR's HeldBack events: %s", st, s.eventsOfReason(ctx, a.xr, "HeldBack"))
	})
	createdIn := time.Since(created)
	t.Logf("%s: the ProviderConfig and all %d Objects behind it exist %s after creating the XR; the ProviderConfig's %s",
		a.xr, n, createdIn.Round(100*time.Millisecond), describeCondition(st.providerConfig, "Ready"))
	if condition(st.providerConfig, "Ready") != nil {
		t.Errorf("ERROR: %s: the ProviderConfig has a Ready condition (%s): the test's premise, a dependency that never reports Ready, no longer holds, so it proves nothing",
			a.xr, describeCondition(st.providerConfig, "Ready"))
	}
	s.await(ctx, a.xr+"'s Objects Synced and Ready, their remote ConfigMaps and ClusterUsages", inferReady, func(ctx context.Context) (bool, error) {
		st, err := s.inferredState(ctx, a)
		if err != nil {
			return false, err
		}
		err = st.ready(a)
		return err == nil, err
	})
	a.ready = time.Since(created)
	t.Logf("%s: every Object Synced and Ready, %d ClusterUsages Ready, %s after creating the XR", a.xr, a.usages, a.ready.Round(100*time.Millisecond))

	s.assertNothingHeldBackOnceCreated(ctx, a)
	s.tearDownInferred(ctx, a)
	t.Logf("SUMMARY (creation: WaitForReady, %d Objects depending on the composed ProviderConfig they use, protection: Usages; Crossplane v2.4.0 with its Usage webhook, provider-kubernetes v1.2.1): created %s and Ready %s after creating the XR; teardown %s, ordered: %s; left: %s",
		n, createdIn.Round(100*time.Millisecond), a.ready.Round(100*time.Millisecond), a.gone.Round(100*time.Millisecond), a.order, orNone(a.left))
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start: %s)", time.Since(scenario).Round(time.Second), time.Since(wall).Round(time.Second))
}

// assertNothingHeldBackOnceCreated changes the ProviderConfig's annotations,
// so that Crossplane reconciles the XR, waits until the function is called
// again, and asserts that no HeldBack was raised since every Object existed:
// on the API server, or in Crossplane's log, which sees each one before the
// event recorder's spam filter may drop it.
func (s *stack) assertNothingHeldBackOnceCreated(ctx context.Context, a *inferArm) {
	t := s.t
	xr, err := s.client.Resource(gvrXR).Get(ctx, a.xr, metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	before, err := s.eventsOf(ctx, xr.GetUID())
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	logged := s.crossplaneLines(heldBackLogged, `Name:"`+a.xr+`"`)
	calls := s.count("function-dependencies", "Planned dependencies")
	nudge := fmt.Sprintf(`{"metadata":{"annotations":{"test.fn.crossplane.io/nudge":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := s.client.Resource(gvrProviderConfig).Patch(ctx, a.providerConfig(), types.MergePatchType, []byte(nudge), metav1.PatchOptions{}); err != nil {
		t.Fatalf("ERROR: %s: cannot annotate the ProviderConfig: %v", a.xr, err)
	}
	begin := time.Now()
	s.await(ctx, "function-dependencies to be called again for "+a.xr+" after its ProviderConfig changed", waitReadyCalledAgain, func(context.Context) (bool, error) {
		return s.count("function-dependencies", "Planned dependencies") > calls, nil
	})
	// What the call returned reaches the API server as events after it.
	time.Sleep(5 * time.Second)
	after, err := s.eventsOf(ctx, xr.GetUID())
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	var held []string
	for _, e := range raised(before, after) {
		if e.reason == "HeldBack" {
			held = append(held, e.String())
		}
	}
	heldLogged := s.crossplaneLines(heldBackLogged, `Name:"`+a.xr+`"`) - logged
	t.Logf("%s: called again %s after the ProviderConfig changed (calls since every Object existed: %d); HeldBack raised since: %s; HeldBack results Crossplane logged since: %d, before: %d",
		a.xr, time.Since(begin).Round(100*time.Millisecond), s.count("function-dependencies", "Planned dependencies")-calls, orNone(held), heldLogged, logged)
	switch {
	case len(held) > 0:
		t.Errorf("ERROR: %s: HeldBack raised after the ProviderConfig and every Object behind it existed: %s", a.xr, strings.Join(held, "; "))
	case heldLogged > 0:
		t.Errorf("ERROR: %s: Crossplane recorded %d HeldBack results after the ProviderConfig and every Object behind it existed (in its log; the API server has none, so the event recorder dropped them)", a.xr, heldLogged)
	}
}

// eventsOfReason describes the XR's events of the reason, for a failure
// message.
func (s *stack) eventsOfReason(ctx context.Context, name, reason string) string {
	xr, err := s.client.Resource(gvrXR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	events, err := s.eventsOf(ctx, xr.GetUID())
	if err != nil {
		return err.Error()
	}
	var of []string
	for _, e := range events {
		if e.reason == reason {
			of = append(of, e.String())
		}
	}
	return orNone(of)
}
