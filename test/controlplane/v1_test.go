//go:build controlplane

package controlplane

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// v1Release is the stack of provider-kubernetes #371's own report:
// Crossplane v1.19 and provider-kubernetes v0.18.0.
var v1Release = releases{
	crossplane: "v1.19.0", provider: "v0.18.0",
	crossplaneTool: "crossplane-core-v1", providerTool: "provider-kubernetes-v0",
	crossplaneModule: "github.com/crossplane/crossplane@v1.19.0",
	providerModule:   "github.com/crossplane-contrib/provider-kubernetes@v0.18.0",
	// The checksum database here doesn't have v0.18.0's go.mod.
	moduleEnv: []string{"GONOSUMDB=github.com/crossplane-contrib/provider-kubernetes"},
	v1:        true,
}

// The claim of the XR type, which Crossplane v1 offers; claims live in
// claimNamespace.
const (
	claimKind      = "Race"
	claimNamespace = "default"
)

var (
	gvrClaim   = schema.GroupVersionResource{Group: xrGroup, Version: "v1alpha1", Resource: "races"}
	gvrUsageV1 = schema.GroupVersionResource{Group: "apiextensions.crossplane.io", Version: "v1beta1", Resource: "usages"}
)

// orderedInput is what provider-kubernetes v0 needs for ordered deletion: a
// Usage of the shared Object by each dependent, beside its finalizer.
var orderedInput = map[string]any{"protection": "Both", "usageAPI": "apiextensions.crossplane.io/v1beta1"}

// TestReferenceFinalizersOnCrossplaneV1 runs TestReferenceFinalizers's
// composition on the stack of provider-kubernetes #371's report, Crossplane
// v1.19.0 and provider-kubernetes v0.18.0, through a claim, as a v1 user
// would: the race leaves some dependents' finalizers off the shared Object
// without function-dependencies, and none with it.
//
// What the finalizers buy on v0.18.0 differs: its crossplane-runtime v1.19
// managed reconciler deletes a referenced Object's remote object at once,
// whatever finalizers the Object carries, so the shared Namespace is not
// expected to outlive its dependents' ConfigMaps with the finalizers alone:
// the test logs that order and asserts only that nothing is left behind. A
// third claim's composition asks for protection: Both, a Usage of the shared
// Object by each dependent; with Crossplane's webhook refusing the shared
// Object's deletion until they are gone, its Namespace must begin
// terminating only after every dependent and its ConfigMap are. The claim
// without the function runs alone first; the two with it, side by side.
func TestReferenceFinalizersOnCrossplaneV1(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_V1_DEPENDENTS", 20)

	s := startRelease(ctx, t, v1Release)
	s.createXRD(ctx)
	s.create(ctx, gvrComposition, "", composition("race-without", n, false))
	s.create(ctx, gvrComposition, "", composition("race-with", n, true))
	s.create(ctx, gvrComposition, "", withInput(composition("race-ordered", n, true), orderedInput))

	scenario := time.Now()
	xr, created := s.createClaim(ctx, "without", "race-without")
	without := arm{xr: xr}
	c := s.settle(ctx, xr, n, created, &without)
	t.Logf("claim without (XR %s, no function-dependencies): %d of %d dependents' finalizers on the shared Object once settled (%s after creating the claim); owners: %s",
		xr, without.finalizers, n, without.converged.Round(100*time.Millisecond), finalizerOwners(c.shared))
	if err := raceShown(n, map[string]int{"claim without (XR " + xr + ")": without.finalizers}); err != nil {
		t.Error("ERROR:", err)
	}
	without.deletion = s.deleteOwner(ctx, xr, n, teardownWithout, claimKind, s.client.Resource(gvrClaim).Namespace(claimNamespace), "without", nil)
	if len(without.deletion.left) > 0 {
		t.Logf("claim without: still tearing down %s after deleting it, carrying on: %s", teardownWithout, strings.Join(without.deletion.left, "; "))
	}

	// The two claims with the function run side by side: their teardowns
	// wait minutes on the provider's backoffs. The second asks for
	// protection: Both, a Usage of the shared Object by each dependent,
	// which Crossplane's webhook enforces and which orders what the
	// finalizers can't; the first has no Usage, so every refusal the
	// webhook logs is the second's.
	arms := sideBySide(ctx,
		func(ctx context.Context) arm { return s.claimWith(ctx, "with", "race-with", n, nil) },
		func(ctx context.Context) arm {
			return s.claimWith(ctx, "ordered", "race-ordered", n, func(xr string) string {
				return fmt.Sprintf(", and %d Usages Ready %s after that", n, s.awaitUsages(ctx, xr, n).Round(100*time.Millisecond))
			})
		})
	with, ordered := arms[0], arms[1]
	od := ordered.deletion
	switch {
	case len(od.left) > 0 || !od.terminated:
		// claimWith said so.
	case s.count("crossplane", usageRefused) == 0:
		t.Errorf("ERROR: claim ordered: Crossplane's webhook never refused a deletion: nothing shows the Usages held the shared Object")
	case od.configMapsLeft > 0 || od.objectsLeft > 0:
		t.Errorf("ERROR: claim ordered: the shared Namespace began terminating with %d/%d remote ConfigMaps (%s) and %d/%d dependent Objects (%s) still present; with a Usage by each dependent it must wait for all of them",
			od.configMapsLeft, n, strings.Join(od.configMapsLeftNames, ", "), od.objectsLeft, n, strings.Join(od.objectsLeftNames, ", "))
	}

	if usages, err := s.client.Resource(s.gvrUsage()).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + ordered.xr}); err != nil {
		t.Errorf("ERROR: claim ordered: cannot list its Usages after the teardown: %v", err)
	} else if len(usages.Items) > 0 {
		t.Errorf("ERROR: claim ordered: %d Usages left after the teardown", len(usages.Items))
	}

	t.Logf("SUMMARY (%d dependents referencing one shared Object through a claim, provider-kubernetes %s at its default --max-reconcile-rate=100, Crossplane %s with its Usage webhook):",
		n, v1Release.provider, v1Release.crossplane)
	for _, a := range []struct {
		name string
		arm
	}{{"without function-dependencies", without}, {"with function-dependencies", with}, {"with function-dependencies, protection: Both", ordered}} {
		t.Logf("  %s, XR %s: %d/%d finalizers on the shared Object (%s after creating the claim); %s",
			a.name, a.xr, a.finalizers, n, a.converged.Round(100*time.Millisecond), describeDeletion(a.deletion, teardownWithout))
	}
	if d := with.deletion; d.terminated && (d.configMapsLeft > 0 || d.objectsLeft > 0) {
		t.Logf("as expected on provider-kubernetes %s: every finalizer in place, the shared Namespace still began terminating before its dependents were gone (%d/%d remote ConfigMaps, %d/%d dependent Objects left): the provider's finalizers keep the shared Object, not its remote object",
			v1Release.provider, d.configMapsLeft, n, d.objectsLeft, n)
	} else if d.terminated {
		t.Logf("unexpected on provider-kubernetes %s: the shared Namespace began terminating only after every dependent was gone", v1Release.provider)
	}
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start: %s)", time.Since(scenario).Round(time.Second), time.Since(wall).Round(time.Second))
}

// claimWith creates a claim of a composition with function-dependencies,
// waits until every dependent's finalizer is on the shared Object, and then
// (after ready, if any, whose words it logs with the rest) until the
// Objects settle with every finalizer still there, and deletes the claim:
// nothing may be left, and the shared Namespace must have begun terminating.
func (s *stack) claimWith(ctx context.Context, name, composition string, n int, ready func(xr string) string) arm {
	t := s.t
	xr, created := s.createClaim(ctx, name, composition)
	a := arm{xr: xr}
	c := s.converge(ctx, xr, n, created, &a)
	extra := ""
	if ready != nil {
		extra = ready(xr)
	}
	t.Logf("claim %s (XR %s, composition %s): %d of %d dependents' finalizers on the shared Object %s after creating the claim%s; owners: %s",
		name, xr, composition, a.finalizers, n, a.converged.Round(100*time.Millisecond), extra, finalizerOwners(c.shared))
	// Every Object Synced and Ready, every remote ConfigMap created, and
	// the finalizers unchanged for ten seconds: they must all stay.
	var settled arm
	c = s.settle(ctx, xr, n, created, &settled)
	if settled.finalizers != n {
		t.Errorf("ERROR: claim %s: only %d of %d finalizers left on the shared Object once settled; owners: %s", name, settled.finalizers, n, finalizerOwners(c.shared))
	}
	s.logWarnings(ctx, xr)
	a.deletion = s.deleteOwner(ctx, xr, n, teardown(n), claimKind, s.client.Resource(gvrClaim).Namespace(claimNamespace), name, nil)
	if d := a.deletion; len(d.left) > 0 {
		t.Errorf("ERROR: claim %s: left behind %s after deleting it: %s", name, teardown(n), strings.Join(d.left, "; "))
	} else if !d.terminated {
		t.Errorf("ERROR: claim %s: the shared Namespace never began terminating within %s", name, teardown(n))
	}
	return a
}

// describeDeletion sums up how deleting a claim went.
func describeDeletion(d deletion, bound time.Duration) string {
	if !d.terminated {
		return fmt.Sprintf("the shared Namespace didn't begin terminating within %s of deleting the claim", bound)
	}
	s := fmt.Sprintf("on deletion the shared Namespace began terminating with %d/%d remote ConfigMaps and %d/%d dependent Objects still present; the shared Object gone %s after deleting the claim; ",
		d.configMapsLeft, d.dependents, d.objectsLeft, d.dependents, d.sharedGone.Round(100*time.Millisecond))
	if len(d.left) > 0 {
		return s + fmt.Sprintf("still tearing down after %s (%d finalizer-removal conflicts)", d.gone.Round(100*time.Millisecond), d.conflicts)
	}
	return s + fmt.Sprintf("teardown %s (%d finalizer-removal conflicts)", d.gone.Round(100*time.Millisecond), d.conflicts)
}

// createClaim creates a claim of the composition in claimNamespace and
// returns the name Crossplane generated for its XR, and when the claim was
// created.
func (s *stack) createClaim(ctx context.Context, name, composition string) (string, time.Time) {
	created := time.Now()
	claims := s.client.Resource(gvrClaim).Namespace(claimNamespace)
	s.create(ctx, gvrClaim, claimNamespace, obj(map[string]any{
		"apiVersion": gvrClaim.GroupVersion().String(), "kind": claimKind,
		"metadata": map[string]any{"name": name, "namespace": claimNamespace},
		"spec":     map[string]any{"compositionRef": map[string]any{"name": composition}},
	}))
	var xr string
	s.await(ctx, "claim "+name+" to get an XR", 60*time.Second, func(ctx context.Context) (bool, error) {
		u, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		xr, _, _ = unstructured.NestedString(u.Object, "spec", "resourceRef", "name")
		return xr != "", nil
	})
	s.t.Logf("claim %s/%s: XR %s", claimNamespace, name, xr)
	return xr, created
}

// awaitUsages waits until the XR composes n Usages (Crossplane v1's Usages,
// or v2's ClusterUsages) and each is Ready: the Usage controller has
// labelled what it protects in use, so the webhook refuses its deletion
// while its user exists.
func (s *stack) awaitUsages(ctx context.Context, xr string, n int) time.Duration {
	begin := time.Now()
	s.await(ctx, fmt.Sprintf("%s's %d Usages to be Ready", xr, n), convergeWith, func(ctx context.Context) (bool, error) {
		composed, ready, err := s.usagesReady(ctx, xr)
		return err == nil && ready == n && composed == n, firstError(err, fmt.Errorf("%d Usages composed, %d of them Ready", composed, ready))
	})
	return time.Since(begin)
}

// usagesReady counts the Usages the XR composes, and those of them Ready.
func (s *stack) usagesReady(ctx context.Context, xr string) (composed, ready int, err error) {
	usages, err := s.client.Resource(s.gvrUsage()).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr})
	if err != nil {
		return 0, 0, err
	}
	for _, u := range usages.Items {
		if conditionTrue(&u, "Ready") {
			ready++
		}
	}
	return len(usages.Items), ready, nil
}

// gvrUsage is the resource of the Usages the function emits between
// cluster-scoped Objects on the stack: v1's Usage, or v2's ClusterUsage.
func (s *stack) gvrUsage() schema.GroupVersionResource {
	if s.releases.v1 {
		return gvrUsageV1
	}
	return gvrClusterUsage
}

// usagesInput asks the function for Usages instead of reference
// finalizers, in the stack's Usage API.
func (s *stack) usagesInput() map[string]any {
	in := map[string]any{"protection": "Usages"}
	if s.releases.v1 {
		in["usageAPI"] = "apiextensions.crossplane.io/v1beta1"
	}
	return in
}

// withInput gives the composition's function-dependencies step an input.
func withInput(c *unstructured.Unstructured, input map[string]any) *unstructured.Unstructured {
	pipeline, _, _ := unstructured.NestedSlice(c.Object, "spec", "pipeline")
	for _, step := range pipeline {
		if step := step.(map[string]any); step["step"] == "order-deletion" {
			step["input"] = map[string]any{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"}
			maps.Copy(step["input"].(map[string]any), input)
		}
	}
	if err := unstructured.SetNestedSlice(c.Object, pipeline, "spec", "pipeline"); err != nil {
		panic(err)
	}
	return c
}
