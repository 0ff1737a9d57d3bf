//go:build controlplane

package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestBothProtectionsHoldAgainstOutOfBandDeletesAndCrashes composes the
// scenario's XR with each protection the function offers, the reference
// finalizers (the default) and protection: Usages, and proves on a real
// control plane what each must hold:
//
//   - a user's delete of the shared Object while its dependents live is
//     refused: by Crossplane's webhook with Usages, by the finalizers (the
//     deletion waits, and the provider deletes nothing) without them; with
//     Usages the composite goes on as if nothing happened;
//   - the XR's teardown is ordered, and leaves nothing, Usages included,
//     even when provider-kubernetes, or Crossplane core, crashes in the
//     middle of it and starts again ten seconds later, as in an upgrade.
//
// Each protection tears down two XRs, one per crash.
func TestBothProtectionsHoldAgainstOutOfBandDeletesAndCrashes(t *testing.T) {
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_PROTECTION_DEPENDENTS", 10)
	s := startStack(ctx, t)
	s.createXRD(ctx)
	s.create(ctx, gvrComposition, "", composition("protect-finalizers", n, true))
	s.create(ctx, gvrComposition, "", withInput(composition("protect-usages", n, true), s.usagesInput()))

	for _, protection := range []string{"finalizers", "usages"} {
		for _, crash := range []string{"provider-kubernetes", "crossplane"} {
			xr := fmt.Sprintf("%s-%s", protection, strings.TrimSuffix(crash, "-kubernetes"))
			created := s.createXR(ctx, xr, "protect-"+protection)
			a := arm{xr: xr}
			if protection == "usages" {
				s.awaitUsages(ctx, xr, n)
			} else {
				s.converge(ctx, xr, n, created, &a)
			}
			s.settle(ctx, xr, n, created, &a)
			if crash == "provider-kubernetes" {
				s.deleteSharedOutOfBand(ctx, xr, protection, n)
			}
			d := s.deleteOwner(ctx, xr, n, teardown(n), "XR", s.client.Resource(gvrXR), xr, s.crashMidway(xr, n, crash))
			switch {
			case !d.terminated:
				t.Errorf("ERROR: %s: the shared Namespace never began terminating within %s", xr, teardown(n))
			case d.configMapsLeft > 0:
				t.Errorf("ERROR: %s: the shared Namespace began terminating while %d of %d dependents' ConfigMaps still existed: %s", xr, d.configMapsLeft, n, strings.Join(d.configMapsLeftNames, ", "))
			}
			if len(d.left) > 0 {
				t.Errorf("ERROR: %s: left behind %s after deleting it: %s", xr, teardown(n), strings.Join(d.left, "; "))
			}
			if usages, err := s.client.Resource(gvrClusterUsage).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr}); err != nil {
				t.Errorf("ERROR: %s: cannot list its Usages after the teardown: %v", xr, err)
			} else if len(usages.Items) > 0 {
				t.Errorf("ERROR: %s: %d Usages left after the teardown", xr, len(usages.Items))
			}
			t.Logf("%s: teardown with %s crashing midway took %s, ordered, nothing left; %d deletions refused by Usages, %d replayed",
				xr, crash, d.gone.Round(100*time.Millisecond), d.timeline.Refusals, d.timeline.Replays)
		}
	}
}

// deleteSharedOutOfBand deletes the XR's shared Object as a user would
// while its dependents live, and asserts that the deletion is refused (with
// Usages) or held (with the finalizers), that the remote Namespace and
// every dependent's ConfigMap stay for ten seconds, and with Usages that the
// composite goes on unharmed.
func (s *stack) deleteSharedOutOfBand(ctx context.Context, xr, protection string, n int) {
	t := s.t
	objects := s.client.Resource(gvrObject)
	err := objects.Delete(ctx, xr+"-shared", metav1.DeleteOptions{})
	switch {
	case protection == "usages" && err == nil:
		t.Errorf("ERROR: %s: a user's delete of the shared Object was accepted while %d Usages of it exist", xr, n)
	case protection == "usages":
		t.Logf("%s: a user's delete of the shared Object was refused: %v", xr, err)
	case err != nil:
		t.Errorf("ERROR: %s: cannot delete the shared Object as a user: %v", xr, err)
	default:
		t.Logf("%s: a user's delete of the shared Object was accepted; its %d reference finalizers hold it", xr, n)
	}
	ns := namespaceOf(xr)
	if err := s.hold(ctx, 10*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		c, err := s.composed(ctx, xr, n)
		if err != nil {
			return err
		}
		if deleting := c.shared.GetDeletionTimestamp() != nil; deleting != (protection == "finalizers") {
			return fmt.Errorf("the shared Object is deleting: %t", deleting)
		}
		if notReady := c.notReady(); protection == "usages" && len(notReady) > 0 {
			return fmt.Errorf("Objects no longer Synced and Ready: %s", strings.Join(notReady, ", "))
		}
		namespace, err := s.client.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the remote Namespace: %w", err)
		}
		if phase, _, _ := unstructured.NestedString(namespace.Object, "status", "phase"); phase != "Active" {
			return fmt.Errorf("the remote Namespace is %s", phase)
		}
		cms, err := s.client.Resource(gvrConfigMap).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		remote := 0
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.GetName(), "cm-") {
				remote++
			}
		}
		if remote != n {
			return fmt.Errorf("%d of %d dependents' ConfigMaps left", remote, n)
		}
		return nil
	}); err != nil {
		t.Errorf("ERROR: %s: after a user's delete of the shared Object: %v", xr, err)
	}
}

// crashMidway kills the component once the first of the XR's dependent
// Objects is gone, and starts it again ten seconds later.
func (s *stack) crashMidway(xr string, n int, component string) func(context.Context) error {
	return func(ctx context.Context) error {
		begin := time.Now()
		var c composed
		err := s.poll(ctx, teardown(n), 250*time.Millisecond, func(ctx context.Context) (bool, error) {
			var err error
			c, err = s.composed(ctx, xr, n)
			return c.shared == nil || len(c.dependents) < n, err
		})
		switch {
		case err != nil:
			return fmt.Errorf("no dependent Object went, so %s never crashed: %w", component, err)
		case c.shared == nil:
			return fmt.Errorf("the shared Object went before any dependent, so %s never crashed", component)
		}
		s.t.Logf("%s: %s crashes %s into the teardown", xr, component, time.Since(begin).Round(100*time.Millisecond))
		return s.restart(ctx, component, 10*time.Second)
	}
}
