// Package infer finds the dependencies that composed resources state without
// an Object's spec.references: a managed resource's ProviderConfig, the
// resource that writes a ProviderConfig's credentials Secret, and the
// resources a managed resource references from its spec.forProvider. Deleting
// any of them first leaves its dependents unable to reach their cluster or
// cloud, stuck for ever; nothing in Crossplane orders their deletion.
package infer

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// A Resource is what inference reads of one composed resource.
type Resource struct {
	// Name is the composition resource name.
	Name string
	// Identity is the resource's group, kind, namespace and name.
	Identity objectref.Ref
	// Bodies are the resource as observed and as desired, observed first:
	// what a provider resolved (a Ref set from a Selector) is observed, and
	// what the composition asks for gives the edge before the resource
	// exists.
	Bodies []Body
}

// A Body is one state of a resource, whose fields are decoded when asked
// for: decoding whole resources would decode what no rule reads, such as
// Objects' manifests, and cost several times the rest of the step.
type Body interface {
	// Value is the decoded value at the path of nested objects, or nil.
	Value(path ...string) any
	// Keys are the keys of the object at the path, sorted; none when it is
	// no object.
	Keys(path ...string) []string
}

// Kinds say which kinds of edge to infer.
type Kinds struct {
	ProviderConfigs, Credentials, ManagedReferences bool
}

// An Edge says that the Dependent composed resource depends on the Target,
// by their composition resource names, and Via where the dependent says so.
type Edge struct {
	Dependent, Target, Via string
}

// The kinds of a ProviderConfig: a cluster-scoped one, or a namespaced one
// and its cluster-scoped counterpart in the namespaced (.m) APIs.
const (
	providerConfig        = "ProviderConfig"
	clusterProviderConfig = "ClusterProviderConfig"
)

// externalName is the annotation that holds a managed resource's name in
// its provider, which a resolved reference copies into the referencing field.
const externalName = "crossplane.io/external-name"

// Edges returns the edges of the kinds that the resources state, by
// dependent in the resources' order, then by rule, then in the order each
// rule reads the bodies: one for each dependent and target, never from a
// resource to itself.
func Edges(resources []Resource, k Kinds) []Edge {
	if !k.ProviderConfigs && !k.Credentials && !k.ManagedReferences {
		return nil
	}
	ix := index(resources)
	var edges []Edge
	for d := range resources {
		seen := map[int]bool{d: true}
		add := func(t int, via string) {
			if !seen[t] {
				seen[t] = true
				edges = append(edges, Edge{Dependent: resources[d].Name, Target: resources[t].Name, Via: via})
			}
		}
		if k.ProviderConfigs {
			ix.providerConfigOf(d, add)
		}
		if k.Credentials {
			ix.credentialsOf(d, add)
		}
		if k.ManagedReferences {
			ix.referencesOf(d, add)
		}
	}
	return edges
}

// indexed are the resources, with the places of those of each name, and
// every place: what a selector's target is found among.
type indexed struct {
	resources []Resource
	byName    map[string][]int
	all       []int
}

func index(resources []Resource) indexed {
	ix := indexed{resources: resources, byName: map[string][]int{}, all: make([]int, len(resources))}
	for i, r := range resources {
		ix.all[i] = i
		if r.Identity.Name != "" {
			ix.byName[r.Identity.Name] = append(ix.byName[r.Identity.Name], i)
		}
	}
	return ix
}

// providerConfigOf finds the ProviderConfig spec.providerConfigRef names: of
// the kind it says (ProviderConfig by default), in the dependent's group or
// a group it ends in (ec2.aws.upbound.io's is aws.upbound.io), the most
// specific such group where several have one, cluster-scoped or in the
// dependent's namespace.
func (ix indexed) providerConfigOf(d int, add func(int, string)) {
	dep := ix.resources[d].Identity
	for _, body := range ix.resources[d].Bodies {
		ref, _ := body.Value("spec", "providerConfigRef").(map[string]any)
		name, _ := ref["name"].(string)
		kind, _ := ref["kind"].(string)
		if kind == "" {
			kind = providerConfig
		}
		var found []int
		longest := -1
		for _, t := range ix.byName[name] {
			id := ix.resources[t].Identity
			if id.Kind != kind || !sameOrParentGroup(dep.Group, id.Group) || (id.Namespace != "" && id.Namespace != dep.Namespace) {
				continue
			}
			if len(id.Group) > longest {
				found, longest = nil, len(id.Group)
			}
			if len(id.Group) == longest {
				found = append(found, t)
			}
		}
		for _, t := range found {
			add(t, "spec.providerConfigRef")
		}
	}
}

// sameOrParentGroup tells whether group is parent itself or one of its
// subgroups.
func sameOrParentGroup(group, parent string) bool {
	return group == parent || strings.HasSuffix(group, "."+parent)
}

// credentialFields are where a ProviderConfig names the Secret it reads its
// credentials from: provider-kubernetes' and provider-helm's credentials
// and identity, and every Upbound provider's credentials.
var credentialFields = [][]string{{"spec", "credentials", "secretRef"}, {"spec", "identity", "secretRef"}}

// credentialsOf finds, for a ProviderConfig, the composed resources that
// write the Secrets it reads its credentials from.
func (ix indexed) credentialsOf(p int, add func(int, string)) {
	pc := ix.resources[p].Identity
	if pc.Kind != providerConfig && pc.Kind != clusterProviderConfig {
		return
	}
	for _, body := range ix.resources[p].Bodies {
		for _, path := range credentialFields {
			ref, _ := body.Value(path...).(map[string]any)
			name, _ := ref["name"].(string)
			namespace, _ := ref["namespace"].(string)
			if namespace == "" {
				namespace = pc.Namespace
			}
			if name == "" || namespace == "" {
				continue
			}
			for w := range ix.resources {
				if field := ix.writes(w, namespace, name); field != "" && w != p {
					add(w, strings.Join(path, ".")+" → "+field)
				}
			}
		}
	}
}

// writes says where the resource says it writes the Secret: it is the
// Secret, a managed resource writes its connection details to it, or a
// provider-kubernetes Object's manifest is it. "" when it doesn't.
func (ix indexed) writes(w int, namespace, name string) string {
	r := ix.resources[w]
	if r.Identity.Group == "" && r.Identity.Kind == "Secret" && r.Identity.Namespace == namespace && r.Identity.Name == name {
		return "Secret"
	}
	for _, body := range r.Bodies {
		to, _ := body.Value("spec", "writeConnectionSecretToRef").(map[string]any)
		if n, _ := to["name"].(string); n == name && inNamespace(to, r.Identity.Namespace) == namespace {
			return "spec.writeConnectionSecretToRef"
		}
		if !objectref.IsObject(r.Identity.Group, r.Identity.Kind) {
			continue
		}
		manifest := func(key string) any { return body.Value("spec", "forProvider", "manifest", key) }
		meta, _ := manifest("metadata").(map[string]any)
		if manifest("apiVersion") == "v1" && manifest("kind") == "Secret" && meta["name"] == name && inNamespace(meta, r.Identity.Namespace) == namespace {
			return "spec.forProvider.manifest"
		}
	}
	return ""
}

// inNamespace is the namespace a reference or metadata says, or the one it
// is in when it says none.
func inNamespace(m map[string]any, own string) string {
	if ns, _ := m["namespace"].(string); ns != "" {
		return ns
	}
	return own
}

// referencesOf finds the composed resources a managed resource references
// under spec.forProvider and spec.initProvider.
func (ix indexed) referencesOf(d int, add func(int, string)) {
	for _, body := range ix.resources[d].Bodies {
		for _, part := range []string{"forProvider", "initProvider"} {
			fields := map[string]any{}
			for _, key := range body.Keys("spec", part) {
				if !passedThrough[key] {
					fields[key] = body.Value("spec", part, key)
				}
			}
			ix.walk(d, fields, "spec."+part, add)
		}
	}
}

// passedThrough are the fields of spec.forProvider whose content a provider
// passes on as it is, whose …Ref fields are no provider's references:
// provider-kubernetes' manifest (a Deployment's secretKeyRef names a Secret
// of the remote cluster) and provider-helm's values.
var passedThrough = map[string]bool{"manifest": true, "values": true}

// walk finds the references in a value at path, depth first, each key of an
// object in sorted order and before what its value holds: a …Ref or …Refs
// names its target, and a …Selector's target is the resource whose external
// name its resolved field holds.
func (ix indexed) walk(d int, v any, path string, add func(int, string)) {
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			ix.walk(d, item, path+"["+strconv.Itoa(i)+"]", add)
		}
	case map[string]any:
		for _, key := range slices.Sorted(maps.Keys(v)) {
			at := path + "." + key
			switch {
			case strings.HasSuffix(key, "Ref"):
				ref, _ := v[key].(map[string]any)
				ix.named(d, key, ref, at, add)
			case strings.HasSuffix(key, "Refs"):
				refs, _ := v[key].([]any)
				for _, r := range refs {
					ref, _ := r.(map[string]any)
					ix.named(d, key, ref, at, add)
				}
			case strings.HasSuffix(key, "Selector"):
				ix.selected(d, key, v, at, add)
			}
			ix.walk(d, v[key], at, add)
		}
	}
}

// named adds the edge to the resource a reference names: a resource of that
// name in the dependent's namespace.
func (ix indexed) named(d int, key string, ref map[string]any, at string, add func(int, string)) {
	name, _ := ref["name"].(string)
	if name == "" {
		return
	}
	ns := ix.resources[d].Identity.Namespace
	for _, t := range ix.pick(d, key, ix.byName[name], func(t int) bool { return ix.resources[t].Identity.Namespace == ns }) {
		add(t, at)
	}
}

// selected adds the edges to the resources a selector matched: for each
// value the resolved field (the key without Selector, or its plural) holds,
// those whose external name it is, and which carry every label the selector
// matches.
func (ix indexed) selected(d int, key string, in map[string]any, at string, add func(int, string)) {
	selector, _ := in[key].(map[string]any)
	if selector == nil {
		return
	}
	base := strings.TrimSuffix(key, "Selector")
	values := resolvedValues(in[base])
	if len(values) == 0 {
		values = resolvedValues(in[base+"s"])
	}
	labels, _ := selector["matchLabels"].(map[string]any)
	ns := ix.resources[d].Identity.Namespace
	for _, value := range values {
		for _, t := range ix.pick(d, key, ix.all, func(t int) bool {
			r := ix.resources[t]
			return r.Identity.Namespace == ns && slices.ContainsFunc(r.Bodies, func(b Body) bool {
				return b.Value("metadata", "annotations", externalName) == value && carries(b, labels)
			})
		}) {
			add(t, at)
		}
	}
}

// resolvedValues are the values a resolved field holds: a string, or the
// strings of a list; none empty.
func resolvedValues(v any) []string {
	var values []string
	switch v := v.(type) {
	case string:
		values = []string{v}
	case []any:
		for _, item := range v {
			if s, ok := item.(string); ok {
				values = append(values, s)
			}
		}
	}
	return slices.DeleteFunc(values, func(s string) bool { return s == "" })
}

// carries tells whether the body carries every one of the labels.
func carries(body Body, labels map[string]any) bool {
	have, _ := body.Value("metadata", "labels").(map[string]any)
	for k, v := range labels {
		if have[k] != v {
			return false
		}
	}
	return true
}

// pick returns the targets of the dependent's reference field among the
// candidates that match: neither the dependent nor
// a ProviderConfig, which spec.providerConfigRef names; and where several
// match, those whose kind the field's name holds (vpcIdRef, a VPC), if any
// does.
func (ix indexed) pick(d int, key string, candidates []int, match func(int) bool) []int {
	var found []int
	for _, t := range candidates {
		if k := ix.resources[t].Identity.Kind; t != d && k != providerConfig && k != clusterProviderConfig && match(t) {
			found = append(found, t)
		}
	}
	if len(found) < 2 {
		return found
	}
	field := strings.ToLower(key)
	byKind := slices.DeleteFunc(slices.Clone(found), func(t int) bool {
		return !strings.Contains(field, strings.ToLower(ix.resources[t].Identity.Kind))
	})
	if len(byKind) > 0 {
		return byKind
	}
	return found
}
