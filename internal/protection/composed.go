package protection

// The Usages the composition composes itself, as Crossplane's Usage
// controller reads them, and the edges they protect.

import (
	"cmp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
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

// isNamespaced tells whether a Usage of the API group and kind is
// namespaced: only v2's Usage is.
func isNamespaced(group, kind string) bool { return group == protectionGroup && kind == "Usage" }

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

// Labels are the labels of composed resources, by composition resource
// name: each one's observed and desired labels.
type Labels map[string][]map[string]string

// ComposedEdges returns the edges between composed resources the
// composition's own Usages protect, each by its ends, and whether one of
// those Usages exists. An end names the composed resources of its identity
// (one object may have two composition resource names), or the one composed
// resource of its group, kind and namespace whose observed or desired labels
// (labels, by name) hold all its matchLabels: where several do, Crossplane
// picks one the function can't tell, and the Usage protects no edge the
// function knows of.
func ComposedEdges(g *composed.Graph, usages []Composed, labels Labels) map[Ends]bool {
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
func resolve(g *composed.Graph, e End, labels Labels) []int {
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
		case e.Selector && (e.Namespace == "" || id.Namespace == e.Namespace) && anyHolds(labels[r.Name], e.MatchLabels):
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

// A Body is a Usage as read: its fields decoded when asked for.
type Body interface {
	// Value is the decoded value at the path of nested objects, or nil.
	Value(path ...string) any
}

// ReadComposed reads a Usage the composition composes, u, whose composed
// resource is r: its ends as Crossplane's Usage controller finds them. A
// namespaced Usage's ends are in its namespace, but for a spec.of that
// names another; a cluster-scoped one's have none, and its selectors look
// in every namespace.
func ReadComposed(u Body, r composed.Resource) Composed {
	namespaced := isNamespaced(r.Identity.Group, r.Identity.Kind)
	end := func(field string) End {
		e := readEnd(u, field)
		switch {
		case !namespaced:
			e.Namespace = ""
		case field == "by":
			e.Namespace = r.Identity.Namespace
		default:
			e.Namespace = cmp.Or(e.Namespace, r.Identity.Namespace)
		}
		return e
	}
	return Composed{Target: end("of"), Dependent: end("by"), Observed: r.Observed != nil}
}

// readEnd reads a Usage's spec.of or spec.by (field "of" or "by"), with the
// namespace it says: resourceRef's, or without a name, resourceSelector's.
// An end of an invalid apiVersion has no kind, so that it names nothing.
func readEnd(u Body, field string) End {
	end, _ := u.Value("spec", field).(map[string]any)
	gv, err := schema.ParseGroupVersion(str(end, "apiVersion"))
	e := End{Group: gv.Group, Kind: str(end, "kind")}
	if err != nil {
		e.Kind = ""
	}
	ref, _ := end["resourceRef"].(map[string]any)
	sel, selector := end["resourceSelector"].(map[string]any)
	e.Name, e.Namespace = str(ref, "name"), str(ref, "namespace")
	if e.Name == "" {
		e.Selector, e.Namespace = selector, str(sel, "namespace")
	}
	labels, _ := sel["matchLabels"].(map[string]any)
	e.MatchLabels = make(map[string]string, len(labels))
	for k, v := range labels {
		e.MatchLabels[k], _ = v.(string)
	}
	return e
}

// UsedBy is what one of the function's own Usages, u, is used by: its
// spec.by, in the Usage's namespace; false when its apiVersion is invalid.
func UsedBy(u Body) (object.Ref, bool) {
	by, _ := u.Value("spec", "by").(map[string]any)
	ref, _ := by["resourceRef"].(map[string]any)
	gv, err := schema.ParseGroupVersion(str(by, "apiVersion"))
	namespace, _ := u.Value("metadata", "namespace").(string)
	return object.Ref{APIVersion: str(by, "apiVersion"), Group: gv.Group, Kind: str(by, "kind"), Namespace: namespace, Name: str(ref, "name")}, err == nil
}

// str is the string of the key in m, or "".
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
