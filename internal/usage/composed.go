package usage

import (
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
)

// An API is an apiVersion a Usage can be written in.
type API string

// The APIs of Usages.
const (
	// Protection is Crossplane v2's: a namespaced Usage, or a ClusterUsage.
	Protection API = "protection.crossplane.io/v1beta1"
	// Apiextensions is Crossplane v1's cluster-scoped Usage.
	Apiextensions API = "apiextensions.crossplane.io/v1beta1"
)

// The API groups of Usages: those of the APIs a Usage can be written in.
var (
	protectionGroup    = groupOf(Protection)
	apiextensionsGroup = groupOf(Apiextensions)
)

// groupOf is the API group of an apiVersion that has one.
func groupOf(api API) string {
	group, _, _ := strings.Cut(string(api), "/")
	return group
}

// IsUsage tells whether a resource of the API group and kind is a Crossplane
// Usage: v2's namespaced Usage or ClusterUsage, or v1's cluster-scoped
// Usage.
func IsUsage(group, kind string) bool {
	switch group {
	case protectionGroup:
		return kind == "Usage" || kind == "ClusterUsage"
	case apiextensionsGroup:
		return kind == "Usage"
	}
	return false
}

// IsNamespaced tells whether a Usage of the API group and kind is
// namespaced: only v2's Usage is.
func IsNamespaced(group, kind string) bool { return group == protectionGroup && kind == "Usage" }

// A Composed Usage is one the composition composes itself, not this
// function: what its ends name, and whether it exists.
type Composed struct {
	// Target is what its spec.of names, Dependent what its spec.by names.
	Target, Dependent End
	Observed          bool
}

// An End is what a Usage's spec.of or spec.by names, as Crossplane's Usage
// controller finds it: a resource of the API group and kind (any version)
// by resourceRef's name, or, without one, the resource resourceSelector's
// matchLabels select.
type End struct {
	Group, Kind string
	// Namespace is where the resource is: a namespaced Usage's, or the one
	// its spec.of names; "" for a cluster-scoped Usage, whose selector looks
	// in every namespace.
	Namespace string
	// Name is resourceRef's. Without one, Selector says whether there is a
	// resourceSelector, and MatchLabels are its.
	Name        string
	Selector    bool
	MatchLabels map[string]string
}

// Ends are the places in the graph's resources of an edge's dependent (By)
// and dependency (Of).
type Ends struct{ Dependent, Target int }

// ComposedEdges returns the edges between composed resources the
// composition's own Usages protect, each by its ends, and whether one of
// those Usages exists. An end names the composed resources of its identity
// (one object may have two composition resource names), or the one composed
// resource of its group, kind and namespace whose observed or desired labels
// (labels gives them, by place) hold all its matchLabels: where several do,
// Crossplane picks one the function can't tell, and the Usage protects no
// edge the function knows of.
func ComposedEdges(g *composed.Graph, usages []Composed, labels func(resource int) []map[string]string) map[Ends]bool {
	if len(usages) == 0 {
		return nil
	}
	out := map[Ends]bool{}
	for _, u := range usages {
		for _, by := range resolve(g, u.Dependent, labels) {
			for _, of := range resolve(g, u.Target, labels) {
				if by != of {
					out[Ends{Dependent: by, Target: of}] = out[Ends{Dependent: by, Target: of}] || u.Observed
				}
			}
		}
	}
	return out
}

// resolve returns the places of the composed resources an end names.
func resolve(g *composed.Graph, e End, labels func(int) []map[string]string) []int {
	var named, selected []int
	for i, r := range g.Resources {
		id := r.Identity
		if id.Group != e.Group || id.Kind != e.Kind {
			continue
		}
		switch {
		case e.Name != "":
			if id.Name == e.Name && id.Namespace == e.Namespace {
				named = append(named, i)
			}
		case e.Selector && (e.Namespace == "" || id.Namespace == e.Namespace) && anyHolds(labels(i), e.MatchLabels):
			selected = append(selected, i)
		}
	}
	if len(selected) > 1 {
		return nil
	}
	return append(named, selected...)
}

// anyHolds tells whether one of the sets of labels holds every label wanted.
func anyHolds(sets []map[string]string, want map[string]string) bool {
	for _, set := range sets {
		holds := true
		for k, v := range want {
			if got, ok := set[k]; !ok || got != v {
				holds = false
				break
			}
		}
		if holds {
			return true
		}
	}
	return false
}
