package oracle

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/test/harness"
)

// Inference (issue 26): with the input's infer, the function finds edges no
// spec.references entry and no dependencies entry names, from what Crossplane
// and its providers read in a composed resource's body: the ProviderConfig a
// managed resource uses, the writer of the Secret a ProviderConfig reads its
// credentials from, and the resources a managed resource's …Ref, …Refs and
// …Selector fields resolve to. Such an edge orders deletion only: a Usage of
// the target by the dependent protects it whatever usages and protection say,
// no reference finalizer ever does (provider-kubernetes releases only those
// of its spec.references), and creation: WaitForReady ignores it. An edge
// spec.references or dependencies make already keeps its origin.

// The rules the input's infer may name.
const (
	InferProviderConfigs   = "ProviderConfigs"
	InferCredentials       = "Credentials"
	InferManagedReferences = "ManagedReferences"
)

// The origins of an edge, as the graph says them.
const (
	OriginReference = "reference"
	OriginExplicit  = "explicit"
	OriginInferred  = "inferred"
)

// ExternalNameAnnotation is where a managed resource holds the name of what
// it manages; a …Selector's resolved value is that name.
const ExternalNameAnnotation = "crossplane.io/external-name"

// providerConfigKinds are the kinds the credentials rule reads, and the
// managed-references rule leaves to the ProviderConfigs rule.
var providerConfigKinds = []string{"ProviderConfig", "ClusterProviderConfig"}

// An inference is one edge a rule finds: its target and the field that
// makes it.
type inference struct{ target, via string }

// infers tells whether the input's infer names the rule.
func (p *Plan) infers(rule string) bool { return slices.Contains(p.Input.Infer, rule) }

// bodies are what the rules read of a resource: its observed body first,
// then its desired one, each when it has it.
func (n *Node) bodies() []map[string]any {
	var out []map[string]any
	for _, b := range []map[string]any{n.observedBody, n.desiredBody} {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// inferEdges finds, for each dependent, the edges the rules the input names
// infer, each target once, with the field of the first rule that found it:
// rule by rule, then body by body (observed first), then in each body's walk
// order.
func (p *Plan) inferEdges() map[string][]inference {
	out := map[string][]inference{}
	add := func(dependent, target, via string) {
		if dependent != target && !slices.ContainsFunc(out[dependent], func(i inference) bool { return i.target == target }) {
			out[dependent] = append(out[dependent], inference{target, via})
		}
	}
	for _, rule := range []struct {
		name  string
		infer func(d *Node, body map[string]any, add func(target, via string))
	}{
		{InferProviderConfigs, p.inferProviderConfig},
		{InferCredentials, p.inferCredentials},
		{InferManagedReferences, p.inferManagedReferences},
	} {
		if !p.infers(rule.name) {
			continue
		}
		for _, name := range p.Names {
			d := p.Nodes[name]
			for _, body := range d.bodies() {
				rule.infer(d, body, func(target, via string) { add(name, target, via) })
			}
		}
	}
	return out
}

// inferProviderConfig is rule 1: spec.providerConfigRef names a composed
// resource of its kind (ProviderConfig by default) and name, of the
// dependent's API group or one it ends in (ec2.aws.upbound.io uses
// aws.upbound.io's), cluster-scoped or in the dependent's namespace; of
// several, those of the longest group.
func (p *Plan) inferProviderConfig(d *Node, body map[string]any, add func(target, via string)) {
	name := harness.String(body, "spec", "providerConfigRef", "name")
	if name == "" {
		return
	}
	kind := harness.String(body, "spec", "providerConfigRef", "kind")
	if kind == "" {
		kind = "ProviderConfig"
	}
	var found []string
	longest := -1
	for _, tn := range p.Names {
		t := p.Nodes[tn].Identity
		if tn == d.Name || t.Kind != kind || t.Name != name || (t.Namespace != "" && t.Namespace != d.Identity.Namespace) ||
			(t.Group != d.Identity.Group && !strings.HasSuffix(d.Identity.Group, "."+t.Group)) {
			continue
		}
		switch {
		case len(t.Group) > longest:
			found, longest = []string{tn}, len(t.Group)
		case len(t.Group) == longest:
			found = append(found, tn)
		}
	}
	for _, t := range found {
		add(t, "spec.providerConfigRef")
	}
}

// inferCredentials is rule 2: a ProviderConfig's (or
// ClusterProviderConfig's) secret references name a Secret, and each
// composed resource that writes it is a target: the Secret itself, a
// resource whose connection secret it is, or a provider-kubernetes Object
// whose manifest it is.
func (p *Plan) inferCredentials(pc *Node, body map[string]any, add func(target, via string)) {
	if !slices.Contains(providerConfigKinds, pc.Identity.Kind) {
		return
	}
	for _, field := range []string{"spec.credentials.secretRef", "spec.identity.secretRef"} {
		path := strings.Split(field, ".")
		name := harness.String(body, append(path, "name")...)
		namespace := harness.String(body, append(path, "namespace")...)
		if namespace == "" {
			namespace = pc.Identity.Namespace
		}
		if name == "" || namespace == "" {
			continue
		}
		for _, wn := range p.Names {
			if w := p.Nodes[wn]; wn != pc.Name {
				if how := writes(w, namespace, name); how != "" {
					add(wn, field+" → "+how)
				}
			}
		}
	}
}

// writes tells which field of w writes the Secret namespace/name: "Secret"
// when w is that Secret, spec.writeConnectionSecretToRef when it is w's
// connection secret, spec.forProvider.manifest when w is an Object that
// manages it; "" when w doesn't write it. A body that says so is enough.
func writes(w *Node, namespace, name string) string {
	if id := w.Identity; id.Group == "" && id.Kind == "Secret" && id.Namespace == namespace && id.Name == name {
		return "Secret"
	}
	for _, b := range w.bodies() {
		if harness.String(b, "spec", "writeConnectionSecretToRef", "name") == name &&
			cmp.Or(harness.String(b, "spec", "writeConnectionSecretToRef", "namespace"), w.Identity.Namespace) == namespace {
			return "spec.writeConnectionSecretToRef"
		}
	}
	if !w.Object {
		return ""
	}
	for _, b := range w.bodies() {
		m, _ := harness.Lookup(b, "spec", "forProvider", "manifest").(map[string]any)
		if harness.String(m, "apiVersion") == "v1" && harness.String(m, "kind") == "Secret" && harness.String(m, "metadata", "name") == name &&
			cmp.Or(harness.String(m, "metadata", "namespace"), w.Identity.Namespace) == namespace {
			return "spec.forProvider.manifest"
		}
	}
	return ""
}

// inferManagedReferences is rule 3: in spec.forProvider and spec.initProvider,
// walked depth first with each map's keys sorted, a …Ref's name and each of
// a …Refs' names name a composed resource of the dependent's namespace, and
// a …Selector's resolved value (the field it fills, or its plural) is the
// external name of one that carries the selector's labels. ProviderConfigs
// are rule 1's. Of several resources for one name, those whose kind the
// field's name holds (vpcIdRef: a VPC), if any.
func (p *Plan) inferManagedReferences(d *Node, body map[string]any, add func(target, via string)) {
	match := func(key string, is func(t *Node) bool) []string {
		var found []string
		for _, tn := range p.Names {
			t := p.Nodes[tn]
			if tn != d.Name && t.Identity.Namespace == d.Identity.Namespace && !slices.Contains(providerConfigKinds, t.Identity.Kind) && is(t) {
				found = append(found, tn)
			}
		}
		if len(found) < 2 {
			return found
		}
		if named := slices.DeleteFunc(slices.Clone(found), func(tn string) bool {
			return !strings.Contains(strings.ToLower(key), strings.ToLower(p.Nodes[tn].Identity.Kind))
		}); len(named) > 0 {
			return named
		}
		return found
	}
	byName := func(path, key, name string) {
		for _, t := range match(key, func(t *Node) bool { return t.Identity.Name != "" && t.Identity.Name == name }) {
			add(t, path)
		}
	}
	visit := func(path string, m map[string]any, key string) {
		switch v := m[key]; {
		case strings.HasSuffix(key, "Ref"):
			ref, _ := v.(map[string]any)
			if name := harness.String(ref, "name"); name != "" {
				byName(path, key, name)
			}
		case strings.HasSuffix(key, "Refs"):
			refs, _ := v.([]any)
			for _, r := range refs {
				ref, _ := r.(map[string]any)
				if name := harness.String(ref, "name"); name != "" {
					byName(path, key, name)
				}
			}
		case strings.HasSuffix(key, "Selector"):
			sel, ok := v.(map[string]any)
			if !ok {
				return
			}
			base := strings.TrimSuffix(key, "Selector")
			values := resolvedValues(m[base])
			if len(values) == 0 {
				values = resolvedValues(m[base+"s"])
			}
			labels, _ := sel["matchLabels"].(map[string]any)
			for _, value := range values {
				for _, t := range match(key, func(t *Node) bool { return selects(t, value, labels) }) {
					add(t, path)
				}
			}
		}
	}
	for _, field := range []string{"forProvider", "initProvider"} {
		fields, _ := harness.Lookup(body, "spec", field).(map[string]any)
		// provider-kubernetes' manifest and provider-helm's values are
		// content the provider passes on: their …Ref fields (a Deployment's
		// secretKeyRef) are no provider's references.
		fields = maps.Clone(fields)
		delete(fields, "manifest")
		delete(fields, "values")
		walk("spec."+field, fields, visit)
	}
}

// walk visits every key of every map under v, depth first, each map's keys
// in sorted order, each key before what its value holds; path is v's.
func walk(path string, v any, visit func(path string, m map[string]any, key string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			visit(path+"."+k, v, k)
			walk(path+"."+k, v[k], visit)
		}
	case []any:
		for i, e := range v {
			walk(fmt.Sprintf("%s[%d]", path, i), e, visit)
		}
	}
}

// resolvedValues are the values a selector resolved to: a string, or the
// strings of a list; none when empty.
func resolvedValues(v any) []string {
	switch v := v.(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, e := range v {
			if s, _ := e.(string); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// selects tells whether a selector that resolved to value, with the
// labels, selects t: one of t's bodies has the external name and all the
// labels.
func selects(t *Node, value string, labels map[string]any) bool {
	return slices.ContainsFunc(t.bodies(), func(b map[string]any) bool {
		if harness.String(b, "metadata", "annotations", ExternalNameAnnotation) != value {
			return false
		}
		for k, v := range labels {
			if s, ok := v.(string); !ok || harness.String(b, "metadata", "labels", k) != s {
				return false
			}
		}
		return true
	})
}
