//go:build e2e

package mistakes

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// observedAt is when the cluster created every resource and last changed
// every condition: long ago, so that nothing observed is new.
const observedAt = "2024-01-01T00:00:00Z"

// managedFinalizer is the finalizer every provider puts on its managed
// resources; provider-kubernetes adds it to an Object once every reference
// of the Object resolves.
const managedFinalizer = "finalizer.managedresource.crossplane.io"

// applied returns a render's composed resources as the API server returns
// them once Crossplane has applied them and their providers have reconciled
// them: a name where the composition left it to Crossplane, a uid, a
// creationTimestamp, and, as each provider sets them, the managed
// resource's finalizer and conditions. A ProviderConfig has no conditions: no
// provider reports one ready. An Object is ready as provider-kubernetes
// v1.2.1 derives it from its readiness policy; a Release once deployed.
// Nothing here reads function-dependencies' rules.
func applied(t *testing.T, xr doc, composed map[string]doc) []doc {
	t.Helper()
	var observed []doc
	for _, resource := range slices.Sorted(maps.Keys(composed)) {
		d := harness.DeepCopy(t, composed[resource])
		if harness.String(d, "metadata", "name") == "" {
			harness.Set(d, harness.String(xr, "metadata", "name")+"-"+resource, "metadata", "name")
		}
		harness.Set(d, "uid-"+resource, "metadata", "uid")
		harness.Set(d, observedAt, "metadata", "creationTimestamp")
		switch kind := harness.String(d, "kind"); {
		case kind == "ProviderConfig" || kind == "ClusterProviderConfig":
		case harness.Lookup(d, "spec", "forProvider") != nil:
			harness.Set(d, append([]any{managedFinalizer}, harness.List(d, "metadata", "finalizers")...), "metadata", "finalizers")
			ready, reason := "True", "Available"
			if kind == "Object" {
				harness.Set(d, harness.Lookup(d, "spec", "forProvider", "manifest"), "status", "atProvider", "manifest")
				if !objectReady(t, d) {
					ready, reason = "False", "Unavailable"
				}
			}
			harness.Set(d, []any{
				doc{"type": "Ready", "status": ready, "reason": reason, "lastTransitionTime": observedAt},
				doc{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": observedAt},
			}, "status", "conditions")
		default:
			// A Usage, say: Crossplane sets it Ready once it is in force.
			harness.Set(d, []any{doc{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": observedAt}}, "status", "conditions")
		}
		observed = append(observed, d)
	}
	return observed
}

// objectReady says whether provider-kubernetes sets an Object Ready, by its
// spec.readiness.policy, once it has created its manifest: at once
// (SuccessfulCreate, the default); when the object has a Ready condition that
// is True (DeriveFromObject); when it has conditions and all are True
// (AllTrue). Which kinds have such conditions once they work is what
// Kubernetes and cert-manager set: a Deployment has Available and
// Progressing, and no Ready; cert-manager's kinds have Ready; a ConfigMap,
// a Secret or a Namespace none.
func objectReady(t *testing.T, object doc) bool {
	t.Helper()
	manifest, _ := harness.Lookup(object, "spec", "forProvider", "manifest").(doc)
	group, _, grouped := strings.Cut(harness.String(manifest, "apiVersion"), "/")
	if !grouped {
		group = "" // The core group: v1.
	}
	conditions := map[string][]string{
		"apps/Deployment":               {"Available", "Progressing"},
		"cert-manager.io/Certificate":   {"Ready"},
		"cert-manager.io/Issuer":        {"Ready"},
		"cert-manager.io/ClusterIssuer": {"Ready"},
	}[group+"/"+harness.String(manifest, "kind")]
	switch policy := harness.String(object, "spec", "readiness", "policy"); policy {
	case "", "SuccessfulCreate":
		return true
	case "DeriveFromObject":
		return slices.Contains(conditions, "Ready")
	case "AllTrue":
		return len(conditions) > 0
	default:
		t.Fatalf("Object %s: this test doesn't model the readiness policy %s", harness.String(object, "metadata", "name"), policy)
		return false
	}
}
