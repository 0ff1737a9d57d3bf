package infer

// ProviderConfigs and their credentials: the resource a managed resource's
// providerConfigRef names, and what writes the Secret a ProviderConfig reads.

import (
	"iter"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// The kinds of a ProviderConfig: a cluster-scoped one, or a namespaced one
// and its cluster-scoped counterpart in the namespaced (.m) APIs.
const (
	providerConfig        = "ProviderConfig"
	clusterProviderConfig = "ClusterProviderConfig"
)

// isProviderConfig tells whether the kind is a ProviderConfig's, which
// spec.providerConfigRef names and no reference field does.
func isProviderConfig(kind string) bool {
	return kind == providerConfig || kind == clusterProviderConfig
}

// providerConfigOf finds the ProviderConfig spec.providerConfigRef names: of
// the kind it says (ProviderConfig by default), in the dependent's group or
// a group it ends in (ec2.aws.upbound.io's is aws.upbound.io), the most
// specific such group where several have one, cluster-scoped or in the
// dependent's namespace. Where no composed resource is one, it is outside
// the composite, where its API is known (outsideConfig).
func (ix *indexed) providerConfigOf(d int, add func(int, string), outside func(object.Ref)) {
	dep := ix.resources[d].Identity
	for _, body := range ix.resources[d].Bodies {
		ref, _ := body.Value("spec", "providerConfigRef").(map[string]any)
		name, _ := ref["name"].(string)
		kind, _ := ref["kind"].(string)
		if kind == "" {
			kind = providerConfig
		}
		if name == "" {
			continue
		}
		found := ix.providerConfigs(name, kind, dep)
		for _, t := range found {
			add(t, "spec.providerConfigRef")
		}
		composed := slices.ContainsFunc(found, func(t int) bool { return t != d })
		if c, known := outsideConfig(name, kind, dep); !composed && known {
			outside(c)
		}
	}
}

// configAPIs are the versions of the ProviderConfig APIs, by group, of the
// providers whose resources run on a cluster another composite may compose
// (provider-kubernetes, provider-helm) and of Upbound's AWS, GCP and Azure
// families. A reference names no version, and Crossplane fails the whole
// reconcile when it is asked for a kind the cluster doesn't serve: a group
// not here is never asked for.
var configAPIs = map[string]string{
	"kubernetes.crossplane.io": "v1alpha1", "kubernetes.m.crossplane.io": "v1alpha1",
	"helm.crossplane.io": "v1beta1", "helm.m.crossplane.io": "v1beta1",
	"aws.upbound.io": "v1beta1", "aws.m.upbound.io": "v1beta1",
	"gcp.upbound.io": "v1beta1", "gcp.m.upbound.io": "v1beta1",
	"azure.upbound.io": "v1beta1", "azure.m.upbound.io": "v1beta1",
}

// outsideConfig is the ProviderConfig a reference names outside the
// composite: in the most specific group of configAPIs that is the
// dependent's or one it ends in; in the dependent's namespace if it is a
// ProviderConfig of the namespaced (.m) APIs, else cluster-scoped.
func outsideConfig(name, kind string, dep object.Ref) (object.Ref, bool) {
	for group := range providerGroups(dep.Group) {
		if v, ok := configAPIs[group]; ok {
			c := object.Ref{APIVersion: group + "/" + v, Group: group, Kind: kind, Name: name}
			if kind == providerConfig && strings.Contains(group, ".m.") {
				c.Namespace = dep.Namespace
				return c, c.Namespace != ""
			}
			return c, true
		}
	}
	return object.Ref{}, false
}

// providerConfigs are the resources of the name and kind in the most
// specific of the dependent's group and the groups it ends in that has
// any, cluster-scoped or in the dependent's namespace, in the resources'
// order. Those groups are the dependent's and what follows each of its dots.
func (ix *indexed) providerConfigs(name, kind string, dep object.Ref) []int {
	if ix.configs == nil {
		ix.configs = map[configKey][]int{}
		for i, r := range ix.resources {
			if id := r.Identity; id.Name != "" {
				k := configKey{name: id.Name, kind: id.Kind, group: id.Group, namespace: id.Namespace}
				ix.configs[k] = append(ix.configs[k], i)
			}
		}
	}
	for group := range providerGroups(dep.Group) {
		found := ix.configs[configKey{name: name, kind: kind, group: group}]
		if dep.Namespace != "" {
			found = merged(found, ix.configs[configKey{name: name, kind: kind, group: group, namespace: dep.Namespace}])
		}
		if len(found) > 0 {
			return found
		}
	}
	return nil
}

// providerGroups are the groups a resource's ProviderConfig may be of, most
// specific first: its own, then what follows each of its dots.
func providerGroups(group string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for {
			if !yield(group) {
				return
			}
			dot := strings.IndexByte(group, '.')
			if dot < 0 {
				return
			}
			group = group[dot+1:]
		}
	}
}

// merged are the places of two ascending lists of places, ascending.
func merged(a, b []int) []int {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	m := make([]int, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			m, a = append(m, a[0]), a[1:]
		} else {
			m, b = append(m, b[0]), b[1:]
		}
	}
	return append(append(m, a...), b...)
}

// credentialFields are where a ProviderConfig names the Secret it reads its
// credentials from: provider-kubernetes' and provider-helm's credentials
// and identity, and every Upbound provider's credentials.
var credentialFields = [][]string{{"spec", "credentials", "secretRef"}, {"spec", "identity", "secretRef"}}

// credentialsOf finds, for a ProviderConfig, the composed resources that
// write the Secrets it reads its credentials from.
func (ix *indexed) credentialsOf(p int, add func(int, string)) {
	pc := ix.resources[p].Identity
	if !isProviderConfig(pc.Kind) {
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
			for _, wr := range ix.writersOf(namespace, name) {
				if wr.w != p {
					add(wr.w, strings.Join(path, ".")+" → "+wr.field)
				}
			}
		}
	}
}

// writersOf are the resources that say they write the Secret, in the
// resources' order, each with where it first says so: it is the Secret, a
// managed resource writes its connection details to it, or a
// provider-kubernetes Object's manifest is it; each body in turn.
func (ix *indexed) writersOf(namespace, name string) []writer {
	if ix.writers == nil {
		ix.writers = map[place][]writer{}
		for w, r := range ix.resources {
			var wrote []place
			write := func(secret place, field string) {
				if secret.name == "" || slices.Contains(wrote, secret) {
					return
				}
				wrote = append(wrote, secret)
				ix.writers[secret] = append(ix.writers[secret], writer{w: w, field: field})
			}
			if r.Identity.Group == "" && r.Identity.Kind == "Secret" {
				write(place{r.Identity.Namespace, r.Identity.Name}, "Secret")
			}
			for _, body := range r.Bodies {
				to, _ := body.Value("spec", "writeConnectionSecretToRef").(map[string]any)
				if n, _ := to["name"].(string); n != "" {
					write(place{inNamespace(to, r.Identity.Namespace), n}, "spec.writeConnectionSecretToRef")
				}
				if !object.IsObject(r.Identity.Group, r.Identity.Kind) {
					continue
				}
				manifest := func(key string) any { return body.Value("spec", "forProvider", "manifest", key) }
				meta, _ := manifest("metadata").(map[string]any)
				if n, _ := meta["name"].(string); manifest("apiVersion") == "v1" && manifest("kind") == "Secret" && n != "" {
					write(place{inNamespace(meta, r.Identity.Namespace), n}, "spec.forProvider.manifest")
				}
			}
		}
	}
	return ix.writers[place{namespace, name}]
}

// inNamespace is the namespace a reference or metadata says, or the one it
// is in when it says none.
func inNamespace(m map[string]any, own string) string {
	if ns, _ := m["namespace"].(string); ns != "" {
		return ns
	}
	return own
}
