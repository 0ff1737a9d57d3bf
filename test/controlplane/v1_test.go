//go:build controlplane

package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
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

var gvrClaim = schema.GroupVersionResource{Group: xrGroup, Version: "v1alpha1", Resource: "races"}

// TestReferenceFinalizersOnCrossplaneV1 runs TestReferenceFinalizers's
// composition on the stack of provider-kubernetes #371's report, Crossplane
// v1.19.0 and provider-kubernetes v0.18.0, through a claim, as a v1 user
// would: the race leaves some dependents' finalizers off the shared Object
// without function-dependencies, and none with it.
//
// What the finalizers buy on v0.18.0 differs: its crossplane-runtime v1.19
// managed reconciler deletes a referenced Object's remote object at once,
// whatever finalizers the Object carries, so the shared Namespace is not
// expected to outlive its dependents' ConfigMaps even with every finalizer
// in place. The test logs the order of the deletion and asserts only that
// nothing is left behind.
func TestReferenceFinalizersOnCrossplaneV1(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_V1_DEPENDENTS", 20)

	s := startRelease(ctx, t, v1Release)
	s.createXRD(ctx)
	s.create(ctx, gvrComposition, "", composition("race-without", n, false))
	s.create(ctx, gvrComposition, "", composition("race-with", n, true))

	scenario := time.Now()
	xr, created := s.createClaim(ctx, "without", "race-without")
	without := arm{xr: xr}
	c := s.settle(ctx, xr, n, created, &without)
	t.Logf("claim without (XR %s, no function-dependencies): %d of %d dependents' finalizers on the shared Object once settled (%s after creating the claim); owners: %s",
		xr, without.finalizers, n, without.converged.Round(100*time.Millisecond), finalizerOwners(c.shared))
	without.deletion = s.deleteOwner(ctx, xr, n, teardownWithout, claimKind, s.client.Resource(gvrClaim).Namespace(claimNamespace), "without")
	if len(without.deletion.left) > 0 {
		t.Logf("claim without: still tearing down %s after deleting it, carrying on: %s", teardownWithout, strings.Join(without.deletion.left, "; "))
	}

	xr, created = s.createClaim(ctx, "with", "race-with")
	with := arm{xr: xr}
	c = s.converge(ctx, xr, n, created, &with)
	t.Logf("claim with (XR %s, with function-dependencies): %d of %d dependents' finalizers on the shared Object %s after creating the claim; owners: %s",
		xr, with.finalizers, n, with.converged.Round(100*time.Millisecond), finalizerOwners(c.shared))
	// Every Object Synced and Ready, every remote ConfigMap created, and
	// the finalizers unchanged for ten seconds: they must all stay.
	var settled arm
	c = s.settle(ctx, xr, n, created, &settled)
	if settled.finalizers != n {
		t.Errorf("claim with: only %d of %d finalizers left on the shared Object once settled; owners: %s", settled.finalizers, n, finalizerOwners(c.shared))
	}
	s.logWarnings(ctx, xr)
	d := s.deleteOwner(ctx, xr, n, teardown(n), claimKind, s.client.Resource(gvrClaim).Namespace(claimNamespace), "with")
	with.deletion = d
	if len(d.left) > 0 {
		t.Errorf("claim with: left behind %s after deleting it: %s", teardown(n), strings.Join(d.left, "; "))
	}
	if !d.terminated {
		t.Errorf("claim with: the shared Namespace never began terminating within %s", teardown(n))
	}

	t.Logf("SUMMARY (%d dependents referencing one shared Object through a claim, provider-kubernetes %s at its default --max-reconcile-rate=100, Crossplane %s):",
		n, v1Release.provider, v1Release.crossplane)
	for _, a := range []struct {
		name string
		arm
	}{{"without function-dependencies", without}, {"with function-dependencies", with}} {
		t.Logf("  %s, XR %s: %d/%d finalizers on the shared Object (%s after creating the claim); %s",
			a.name, a.xr, a.finalizers, n, a.converged.Round(100*time.Millisecond), describeDeletion(a.deletion, teardownWithout))
	}
	if d.terminated && (d.configMapsLeft > 0 || d.objectsLeft > 0) {
		t.Logf("as expected on provider-kubernetes %s: every finalizer in place, the shared Namespace still began terminating before its dependents were gone (%d/%d remote ConfigMaps, %d/%d dependent Objects left): the provider's finalizers keep the shared Object, not its remote object",
			v1Release.provider, d.configMapsLeft, n, d.objectsLeft, n)
	} else if d.terminated {
		t.Logf("unexpected on provider-kubernetes %s: the shared Namespace began terminating only after every dependent was gone", v1Release.provider)
	}
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start: %s)", time.Since(scenario).Round(time.Second), time.Since(wall).Round(time.Second))
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

// startCrossplaneV1 starts Crossplane core v1.19, whose `core start` has no
// Operations and names its flags differently: --webhook-enabled for v2's
// --enable-webhooks, one --cache-dir for v2's --xpkg-cache-dir and
// --xfn-cache-dir. Its webhooks are off: nothing here needs them, and
// without them no Usage webhook is served (the Usage controller still runs,
// with nothing to do).
func (s *stack) startCrossplaneV1(ctx context.Context, bin string) {
	health := freePort(s.t)
	s.start("crossplane", bin, []string{
		"--debug", "core", "start",
		"--namespace=crossplane-system",
		"--leader-election=false",
		"--webhook-enabled=false",
		"--package-runtime=External",
		"--tls-client-certs-dir=" + s.pki.TLSDir,
		"--cache-dir=" + filepath.Join(s.dir, "cache"),
		"--metrics-port=" + strconv.Itoa(freePort(s.t)),
		"--health-probe-port=" + strconv.Itoa(health),
	}, "KUBECONFIG="+s.kubeconfig)
	s.await(ctx, "Crossplane", 60*time.Second, httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", health)))
}
