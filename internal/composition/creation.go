package composition

// Creation order: which composed resources are not created yet, so that they
// are created after what they depend on.

import (
	"fmt"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
)

// heldBack returns the desired resources that must not be created yet, with
// the reason. An Object that doesn't exist yet waits for the dependencies it
// must reference to be named (unnamed holds them, by dependent): created
// without the reference, it would not wait for them. With waitForReady, every
// resource that doesn't exist yet also waits for its dependencies to be
// ready, except along a broken edge or an inferred one: inference orders
// deletion only, and a ProviderConfig, say, has no Ready condition to wait
// for. All of them are decided at once, so
// every resource whose dependencies allow is created in the same reconcile.
func heldBack(g *composed.Graph, unnamed map[string][]string, waitForReady bool) map[string]string {
	held := map[string]string{}
	notReady := map[string][]string{}
	edges := g.Edges
	if !waitForReady {
		edges = nil // Only an unnamed dependency holds a resource back.
	}
	for _, e := range edges {
		d, t := &g.Resources[e.DependentAt], &g.Resources[e.TargetAt]
		if d.Observed == nil && d.Desired != nil && !e.Broken && e.Origin != composed.FromInference && !t.Ready() {
			notReady[d.Name] = append(notReady[d.Name], t.Name)
		}
	}
	for name, targets := range notReady {
		held[name] = "waits for " + strings.Join(targets, ", ") + " to be ready"
	}
	// Being named comes first: a resource that waits for it waits for its
	// reference to be written.
	for name, targets := range unnamed {
		if g.Resource(name).Observed == nil {
			held[name] = fmt.Sprintf("waits for %s to be named, to reference it", strings.Join(targets, ", "))
		}
	}
	return held
}
