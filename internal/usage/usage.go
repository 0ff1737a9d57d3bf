// Package usage writes the Crossplane Usages that protect edges no reference
// finalizer can protect: a Usage of the dependency by the dependent keeps the
// dependency from being deleted while the dependent exists.
package usage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// The APIs a Usage can be written in.
const (
	// ProtectionAPI is Crossplane v2's: a namespaced Usage between resources
	// in namespaces, or a ClusterUsage between cluster-scoped resources.
	ProtectionAPI = "protection.crossplane.io/v1beta1"
	// ApiextensionsAPI is Crossplane v1's cluster-scoped Usage.
	ApiextensionsAPI = "apiextensions.crossplane.io/v1beta1"
)

// Label marks the Usages this function emits, so that it can tell them from
// the composition's own resources when it observes them: they are never part
// of the graph, or a pattern such as ".*" would give each Usage a Usage of
// its own, one more on every reconcile.
const Label = "dependencies.fn.crossplane.io/usage"

// Key is the composition resource name of the Usage of the edge from one
// composed resource to another. The dependent's length comes first so that
// no two edges share a key: a → b-c and a-b → c would otherwise both be
// usage-a-b-c.
func Key(dependent, dependency string) string {
	return fmt.Sprintf("usage-%d-%s-%s", len(dependent), dependent, dependency)
}

// ExternalKey is the composition resource name of the Usage of the edge from
// a composed resource to an object this composite doesn't compose. The "x"
// after the length sets it apart from every Key; the object is named by kind,
// group, namespace and name, none of which can hold a "/", and a kind no ".".
func ExternalKey(dependent, group, kind, namespace, name string) string {
	return fmt.Sprintf("usage-%dx-%s-%s.%s/%s/%s", len(dependent), dependent, strings.ToLower(kind), group, namespace, name)
}

// maxName is the longest name a Usage gets: a label's length, so that the
// name is valid wherever Kubernetes puts it.
const maxName = 63

// A Ref names one end of an edge.
type Ref struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// UID is the composite's, when it names the owner; a Usage's ends don't
	// need one.
	UID string
}

// An Edge is a dependency to protect.
type Edge struct {
	// Key is the composition resource name of the edge's Usage.
	Key string
	// Dependent and Dependency describe the ends for the Usage's reason.
	Dependent, Dependency string
	// By uses Of: Of can't be deleted while By exists.
	By, Of Ref
}

// A Problem is an edge no Usage of the API can protect, and why.
type Problem struct {
	Edge   Edge
	Reason string
}

// Write returns the Usages, by composition resource name, that protect the
// edges, written in the API. owner names the composite resource, so that the
// Usages of two composites never share a name.
func Write(api string, owner Ref, edges []Edge) (map[string]map[string]any, []Problem) {
	usages := map[string]map[string]any{}
	var problems []Problem
	for _, e := range edges {
		u, why := write(api, owner, e)
		if why != "" {
			problems = append(problems, Problem{Edge: e, Reason: why})
			continue
		}
		usages[e.Key] = u
	}
	return usages, problems
}

func write(api string, owner Ref, e Edge) (map[string]any, string) {
	byScoped, ofScoped := e.By.Namespace != "", e.Of.Namespace != ""
	kind := "Usage"
	metadata := map[string]any{"name": name(owner, e.Key), "labels": map[string]any{Label: "true"}}
	of := ref(e.Of, false)
	switch {
	case api == ApiextensionsAPI && (byScoped || ofScoped):
		return nil, ApiextensionsAPI + " Usages protect cluster-scoped resources only"
	case api == ApiextensionsAPI:
	case byScoped && ofScoped:
		metadata["namespace"] = e.By.Namespace
		// A Usage's references are in its own namespace unless they say
		// otherwise, which only the used resource may.
		of = ref(e.Of, e.Of.Namespace != e.By.Namespace)
	case !byScoped && !ofScoped:
		kind = "ClusterUsage"
	case byScoped:
		return nil, fmt.Sprintf("the dependent is namespaced and the dependency is cluster-scoped: a namespaced Usage can't refer to a cluster-scoped %s, and a ClusterUsage can't refer to a namespaced %s", e.Of.Kind, e.By.Kind)
	default:
		return nil, fmt.Sprintf("the dependent is cluster-scoped and the dependency is namespaced: a ClusterUsage can't refer to a namespaced %s, and a namespaced Usage can't be used by a cluster-scoped %s", e.Of.Kind, e.By.Kind)
	}
	return map[string]any{
		"apiVersion": api,
		"kind":       kind,
		"metadata":   metadata,
		"spec": map[string]any{
			"of":             of,
			"by":             ref(e.By, false),
			"reason":         fmt.Sprintf("%s depends on %s (function-dependencies)", e.Dependent, e.Dependency),
			"replayDeletion": true,
		},
	}, ""
}

func ref(r Ref, withNamespace bool) map[string]any {
	resourceRef := map[string]any{"name": r.Name}
	if withNamespace {
		resourceRef["namespace"] = r.Namespace
	}
	return map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "resourceRef": resourceRef}
}

// name is the Usage's name: readable from its key, and unique by a hash of
// the owner and the key, within maxName characters.
func name(owner Ref, key string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{owner.APIVersion, owner.Kind, owner.Namespace, owner.Name, key}, "/")))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	var b strings.Builder
	for _, c := range strings.ToLower(key) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	readable := strings.Trim(b.String(), "-")
	if len(readable) > maxName-len(suffix) {
		readable = strings.TrimRight(readable[:maxName-len(suffix)], "-")
	}
	return readable + suffix
}
