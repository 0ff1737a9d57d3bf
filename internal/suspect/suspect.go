// Package suspect finds the references of Objects that can't be what their
// author meant. provider-kubernetes resolves a reference by API group,
// kind, namespace and name, and defaults none of them: a reference that
// matches no composed resource is read as one to an object outside the
// composite, which nothing protects, and on a cluster the Object that makes
// it waits for ever for an object that will never exist. A reference to a
// real outside object (a namespace the platform installed, an Object
// another composite composes) is no mistake, so only references that are
// almost a composed resource, or can't resolve at all, are suspect.
package suspect

import (
	"fmt"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// A Reference is a suspect reference of an Object.
type Reference struct {
	// Dependent is the Object's composition resource name.
	Dependent string
	Target    object.Target
	// Problem says why it is suspect, and what was likely meant.
	Problem string
}

// Of returns the suspect references among the graph's references to objects
// no composed resource is, in the graph's order:
//   - one to the very object a composed Object manages, instead of the Object;
//   - one to a namespaced kind without a namespace, which provider-kubernetes
//     looks for in no namespace and never finds;
//   - one within a typo of a composed resource: a name, namespace, kind or
//     API group a letter or two off (maxTypos).
func Of(g *composed.Graph) []Reference {
	var out []Reference
	for _, e := range g.External {
		if e.Origin != composed.FromReference {
			continue
		}
		t := e.Target
		if t.Name == "" {
			continue // Not named yet: a later step's patch names it.
		}
		if m, ok := managing(g, t.Ref); ok {
			out = append(out, Reference{Dependent: e.Dependent, Target: t, Problem: fmt.Sprintf(
				"that is what composed Object %q manages, not a composed resource: reference the Object, %s, to order their deletion", m.Name, m.Identity)})
			continue
		}
		if t.Namespace == "" && namespaced(g, t.Group, t.Kind) {
			problem := t.Kind + " is namespaced, and provider-kubernetes defaults no namespace: set namespace"
			if near, ok := nearest(g, t, func(r *composed.Resource) int { return sameKindAndName(t.Ref, r.Identity) }); ok {
				problem += fmt.Sprintf(" (composed resource %q is %s)", near.Name, near.Identity)
			}
			out = append(out, Reference{Dependent: e.Dependent, Target: t, Problem: problem})
			continue
		}
		if near, ok := nearest(g, t, func(r *composed.Resource) int { return typos(t.Ref, r.Identity) }); ok {
			out = append(out, Reference{Dependent: e.Dependent, Target: t, Problem: fmt.Sprintf("no composed resource is that object; did you mean composed resource %q, %s?", near.Name, near.Identity)})
		}
	}
	return out
}

// managing returns the composed Object whose manifest is the referenced
// object: a reference to what an Object creates, rather than to the Object,
// which is what provider-kubernetes' references and the function's
// protection are about.
func managing(g *composed.Graph, ref object.Ref) (*composed.Resource, bool) {
	for i := range g.Resources {
		if r := &g.Resources[i]; r.IsObject && r.Manages.Name != "" && r.Manages == ref.ID() {
			return r, true
		}
	}
	return nil, false
}

// maxTypos is how many letters a reference may be off a composed resource's
// group, kind, namespace and name, all together, and still be taken for a
// typo of it: two, and one for a name of fewer than eight letters, whose
// neighbours at two are often other words.
func maxTypos(name string) int {
	if len(name) < 8 {
		return 1
	}
	return 2
}

// nearest returns the named composed resource at the smallest distance
// from the target, the first in name order among equals, if one is within
// maxTypos; distance is negative for a resource that can't be meant.
func nearest(g *composed.Graph, t object.Target, distance func(*composed.Resource) int) (*composed.Resource, bool) {
	var best *composed.Resource
	bestD := maxTypos(t.Name) + 1
	for i := range g.Resources {
		r := &g.Resources[i]
		if r.Identity.Name == "" {
			continue
		}
		if d := distance(r); d >= 0 && d < bestD {
			best, bestD = r, d
		}
	}
	return best, best != nil
}

// typos is how many letters the reference is off the composed resource's
// identity, or -1 where it names another namespace entirely or none.
func typos(ref, id object.Ref) int {
	if (ref.Namespace == "") != (id.Namespace == "") {
		return -1
	}
	return levenshtein(ref.Group, id.Group) + levenshtein(ref.Kind, id.Kind) + levenshtein(ref.Namespace, id.Namespace) + levenshtein(ref.Name, id.Name)
}

// sameKindAndName is 0 for a composed resource of the reference's group,
// kind and name in any namespace, else -1.
func sameKindAndName(ref, id object.Ref) int {
	if ref.Group == id.Group && ref.Kind == id.Kind && ref.Name == id.Name {
		return 0
	}
	return -1
}

// namespaced tells whether objects of the group and kind live in a
// namespace: the composition composes one in a namespace, or the kind is
// one of Kubernetes' own namespaced kinds, a namespaced Object, or a
// Crossplane v2 namespaced managed resource (an API group with .m. in it,
// whose ClusterProviderConfig alone is cluster-scoped).
func namespaced(g *composed.Graph, group, kind string) bool {
	for _, r := range g.Resources {
		if r.Identity.Group == group && r.Identity.Kind == kind && r.Identity.Namespace != "" {
			return true
		}
	}
	if strings.Contains(group, ".m.") {
		return !strings.HasPrefix(kind, "Cluster")
	}
	return builtinNamespaced[group+"/"+kind]
}

// builtinNamespaced are the namespaced kinds of Kubernetes' own API groups an
// Object most often references, by group/kind.
var builtinNamespaced = map[string]bool{
	"/ConfigMap": true, "/Secret": true, "/Service": true, "/ServiceAccount": true, "/PersistentVolumeClaim": true, "/Pod": true,
	"apps/Deployment": true, "apps/StatefulSet": true, "apps/DaemonSet": true,
	"batch/Job": true, "batch/CronJob": true, "networking.k8s.io/Ingress": true,
	"rbac.authorization.k8s.io/Role": true, "rbac.authorization.k8s.io/RoleBinding": true,
}

// levenshtein is the number of letters to insert, delete or replace to turn
// a into b.
func levenshtein(a, b string) int {
	if a == b {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
