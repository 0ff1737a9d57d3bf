package loop

import (
	"math/rand/v2"

	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// loopOtherComposites makes some of the composition's Objects run on a
// cluster another composite composes (issue 38): they name a
// provider-kubernetes ProviderConfig the composition doesn't compose, which
// an XCluster controls and labels as its own, or one installed by hand. The
// model holds those as external objects, so that a user deleting the
// external objects on teardown deletes the XCluster while the Objects may
// still use it. It draws from an RNG of its own, so that a seed makes the
// same compositions as before wherever it draws none.
func loopOtherComposites(c *loopComposition, rng *rand.Rand) {
	if rng.IntN(100) >= 30 {
		return
	}
	group, namespace := oracle.ClusterObjectGroup, ""
	if c.namespaced {
		group, namespace = oracle.NamespacedObjectGroup, c.xrNamespace()
	}
	cluster := &loopExternal{apiVersion: "platform.example.org/v1alpha1", kind: "XCluster", namespace: namespace, name: "acme"}
	config := &loopExternal{apiVersion: group + "/v1alpha1", kind: "ProviderConfig", namespace: namespace, name: "acme",
		labels: map[string]string{"crossplane.io/composite": "acme"}, controller: cluster}
	byHand := &loopExternal{apiVersion: group + "/v1alpha1", kind: "ProviderConfig", namespace: namespace, name: "by-hand"}
	c.externals = append(c.externals, cluster, config, byHand)
	used := false
	for _, r := range c.phases[0] {
		// An Object of the composite's scope, in its namespace: one a
		// ProviderConfig there can serve.
		if !r.kind.object() || r.kind.namespaced != c.namespaced || (r.namespace != "" && r.namespace != namespace) || r.fields["spec.providerConfigRef"] != nil {
			continue
		}
		switch rng.IntN(3) {
		case 0:
			r.set("spec.providerConfigRef", map[string]any{"name": config.name})
			used = true
		case 1:
			r.set("spec.providerConfigRef", map[string]any{"name": byHand.name})
		}
	}
	if used {
		c.features[loopOnAnotherComposite] = true
	}
}

// What the loop reaches of it.
const (
	loopOnAnotherComposite = "inferred across composites: an Object on a cluster another composite composes"
	loopClusterWaits       = "inferred across composites: the cluster's composite deleted first waits for what runs on it"
)
