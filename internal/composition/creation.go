package composition

// Creation order: which composed resources are not created yet, so that they
// are created after what they depend on.

import (
	"fmt"
	"strings"
	"time"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
)

// MaxWait is how long a resource held back behind a dependency that exists
// and isn't ready waits before the step warns: ten of Crossplane's default
// one-minute polls, long past what a healthy dependency takes to become
// ready, so that a kind that never reports Ready is named, not waited on in
// silence for ever.
const MaxWait = 10 * time.Minute

// heldBack returns the desired resources that must not be created yet, with
// the reason, and those that have waited longer than MaxWait at now. An
// Object that doesn't exist yet waits for the dependencies it must
// reference to be named (unnamed holds them, by dependent): created without
// the reference, it would not wait for them. With waitForReady, every
// resource that doesn't exist yet also waits for its dependencies to be
// ready, except along a broken edge or an inferred one (inference orders
// deletion only), and except for a dependency that exists and can't say it
// is ready (readyOnceItExists). All of them are decided at once, so every
// resource whose dependencies allow is created in the same reconcile.
func heldBack(g *composed.Graph, unnamed map[string][]string, waitForReady bool, now time.Time) (map[string]string, []report.Waiting) {
	held := map[string]string{}
	notReady := map[string][]string{}
	var waiting []report.Waiting
	edges := g.Edges
	if !waitForReady {
		edges = nil // Only an unnamed dependency holds a resource back.
	}
	for _, e := range edges {
		d, t := &g.Resources[e.DependentAt], &g.Resources[e.TargetAt]
		if d.Observed != nil || d.Desired == nil || e.Broken || e.Origin == composed.FromInference || t.Ready() || readyOnceItExists(t) {
			continue
		}
		notReady[d.Name] = append(notReady[d.Name], t.Name)
		if t.Observed != nil && !t.Observed.NotReadySince.IsZero() && now.Sub(t.Observed.NotReadySince) > MaxWait {
			waiting = append(waiting, report.Waiting{Resource: d.Name, Target: t.Name, Kind: t.Identity.Kind, For: now.Sub(t.Observed.NotReadySince)})
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
	return held, waiting
}

// readyOnceItExists is true for a resource that exists and whose kind has no
// way to say it is ready: a ProviderConfig or ClusterProviderConfig of any
// provider, which has no Ready condition, and the core kinds
// function-auto-ready marks ready once they exist (ConfigMap, Secret,
// Namespace, ServiceAccount), which runs after this step and so can't have
// said so yet. Waiting for their Ready condition would hold what depends on
// them for ever.
func readyOnceItExists(r *composed.Resource) bool {
	if r.Observed == nil {
		return false
	}
	switch id := r.Identity; {
	case id.Kind == "ProviderConfig" || id.Kind == "ClusterProviderConfig":
		return true
	case id.Group == "":
		return id.Kind == "ConfigMap" || id.Kind == "Secret" || id.Kind == "Namespace" || id.Kind == "ServiceAccount"
	default:
		return false
	}
}
