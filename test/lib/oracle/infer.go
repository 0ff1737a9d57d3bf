package oracle

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
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
// it manages; a resolved reference's value is that name, or the id or ARN
// its provider observes.
const ExternalNameAnnotation = "crossplane.io/external-name"

// providerConfigKinds are the kinds the credentials rule reads, and the
// managed-references rule leaves to the ProviderConfigs rule.
var providerConfigKinds = []string{"ProviderConfig", "ClusterProviderConfig"}

// An inference is one edge a rule finds: its target and the field that
// makes it.
type inference struct{ target, via string }

// Unidentified tells whether a reference field of the dependent has the
// target among candidates nothing singles out, so that inference makes no
// edge of it: a resource of the target's name composed since an edge was
// inferred, before the provider resolved the field, takes the edge away.
func (p *Plan) Unidentified(dependent, target string) bool {
	for field, candidates := range p.notInferred {
		if strings.HasPrefix(field, dependent+" ") && slices.Contains(candidates, target) {
			return true
		}
	}
	return false
}

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

// configVersions are the versions of the ProviderConfig APIs the function
// knows, by group (docs/rules.md, "Between composites").
var configVersions = map[string]string{
	"kubernetes.crossplane.io": "v1alpha1", "kubernetes.m.crossplane.io": "v1alpha1",
	"helm.crossplane.io": "v1beta1", "helm.m.crossplane.io": "v1beta1",
	"aws.upbound.io": "v1beta1", "aws.m.upbound.io": "v1beta1",
	"gcp.upbound.io": "v1beta1", "gcp.m.upbound.io": "v1beta1",
	"azure.upbound.io": "v1beta1", "azure.m.upbound.io": "v1beta1",
}

// outsideConfig is rule 1 where no composed resource is the ProviderConfig
// the body's providerConfigRef names: the one to ask Crossplane for by name,
// of the longest group of configVersions the dependent's own is or ends in,
// in its namespace for a .m ProviderConfig (none when the dependent is
// cluster-scoped), else cluster-scoped; false where there is none to ask for.
func (p *Plan) outsideConfig(d *Node, body map[string]any) (Ask, bool) {
	found := false
	p.inferProviderConfig(d, body, func(string, string) { found = true })
	ref := harness.String(body, "spec", "providerConfigRef", "name")
	if found || ref == "" {
		return Ask{}, false
	}
	kind := cmp.Or(harness.String(body, "spec", "providerConfigRef", "kind"), "ProviderConfig")
	group := ""
	for g := range configVersions {
		if (d.Identity.Group == g || strings.HasSuffix(d.Identity.Group, "."+g)) && len(g) > len(group) {
			group = g
		}
	}
	if group == "" {
		return Ask{}, false
	}
	a := Ask{APIVersion: group + "/" + configVersions[group], Kind: kind, Name: ref}
	if kind == "ProviderConfig" && strings.Contains(group, ".m.") {
		a.Namespace = d.Identity.Namespace
		return a, a.Namespace != ""
	}
	return a, true
}

// askForOutsideConfigs asks, with ProviderConfigs inferred, for each
// resource's ProviderConfig outside the composite, one Crossplane is
// deleting too: its Usage of the other composite stays until it is gone.
func (p *Plan) askForOutsideConfigs() {
	if !p.infers(InferProviderConfigs) {
		return
	}
	for _, name := range p.Names {
		for _, body := range p.Nodes[name].bodies() {
			if a, ok := p.outsideConfig(p.Nodes[name], body); ok {
				p.addAsk(a)
			}
		}
	}
	slices.SortFunc(p.Asks, func(a, b Ask) int { return strings.Compare(a.String(), b.String()) })
}

// group is the API group of a by-name ask.
func (a Ask) group() string {
	g, _ := GroupOf(a.APIVersion)
	return g
}

// inferOutside is rule 1 across composites: a resource whose ProviderConfig
// outside the composite Crossplane fetched for the step, and another
// composite composes (its controller, whose name the ProviderConfig's
// crossplane.io/composite label holds), depends on that composite, in the
// ProviderConfig's namespace; a Usage protects it as any inferred edge.
func (p *Plan) inferOutside() {
	if !p.infers(InferProviderConfigs) {
		return
	}
	for _, name := range p.Names {
		var added []Identity
		for _, body := range p.Nodes[name].bodies() {
			a, ok := p.outsideConfig(p.Nodes[name], body)
			if !ok {
				continue
			}
			for _, r := range p.required {
				group, _ := GroupOf(harness.String(r, "apiVersion"))
				if group != a.group() || harness.String(r, "kind") != a.Kind || harness.String(r, "metadata", "namespace") != a.Namespace || harness.String(r, "metadata", "name") != a.Name {
					continue
				}
				owner, uid := controllerOf(r)
				if owner == nil || uid == p.XRUID || harness.String(owner, "name") == "" || harness.String(r, "metadata", "labels", "crossplane.io/composite") != harness.String(owner, "name") {
					continue
				}
				ownerGroup, _ := GroupOf(harness.String(owner, "apiVersion"))
				id := Identity{Group: ownerGroup, Kind: harness.String(owner, "kind"), Namespace: a.Namespace, Name: harness.String(owner, "name")}
				if slices.Contains(added, id) {
					continue
				}
				added = append(added, id)
				p.External = append(p.External, External{
					Dependent: name, Target: Target{Identity: id, APIVersion: harness.String(owner, "apiVersion")},
					Protection: ByUsage, Inferred: true,
				})
			}
		}
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

// inferManagedReferences is rule 3, for one body. In spec.forProvider and
// spec.initProvider, walked depth first with each map's keys sorted, a
// reference is a …Ref's name, each name of a …Refs, and each value a
// resolved …Selector's field holds (fooSelector fills foo or foos; one that
// holds none is no reference yet). Its candidates are the composed resources
// of the dependent's namespace, ProviderConfigs (rule 1's) and the
// dependent aside: of the name, or that carry every label the selector
// matches. A name only one has means it. Otherwise the candidates whose
// external name, status.atProvider.id or .arn is a value of the field the
// provider fills as it resolves (fooRef: foo, fooRefs: foos, in any body,
// at the same place) single out the target when there is one; where several
// are left (or none), the kind the field names does, as whole words that
// end the field's name before Id(s), Name(s) or Arn(s). What nothing singles
// out makes no edge and is counted (p.notInferred, with its candidates).
func (p *Plan) inferManagedReferences(d *Node, body map[string]any, add func(target, via string)) {
	m := managedInference{p: p, d: d, add: add, places: map[string][]map[string]any{}}
	for _, b := range d.bodies() {
		for _, field := range []string{"forProvider", "initProvider"} {
			root, _ := harness.Lookup(b, "spec", field).(map[string]any)
			collectMaps("spec."+field, root, m.places)
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
		walk("spec."+field, fields, m.visit)
	}
}

// A managedInference is rule 3 at work on the bodies of one dependent, d.
type managedInference struct {
	p   *Plan
	d   *Node
	add func(target, via string)
	// places are the maps of every body of d, by their path: where a
	// reference's resolved sibling is looked for.
	places map[string][]map[string]any
}

// visit infers the references of the field key of the map m at place.
func (m managedInference) visit(place string, fields map[string]any, key string) {
	path := place + "." + key
	switch v := fields[key]; {
	case strings.HasSuffix(key, "Ref"):
		ref, _ := v.(map[string]any)
		m.byName(place, path, key, strings.TrimSuffix(key, "Ref"), harness.String(ref, "name"))
	case strings.HasSuffix(key, "Refs"):
		refs, _ := v.([]any)
		for _, r := range refs {
			ref, _ := r.(map[string]any)
			m.byName(place, path, key, strings.TrimSuffix(key, "Refs")+"s", harness.String(ref, "name"))
		}
	case strings.HasSuffix(key, "Selector"):
		sel, ok := v.(map[string]any)
		if !ok {
			return
		}
		stem := strings.TrimSuffix(key, "Selector")
		values := m.siblingValues(place, stem)
		for _, v := range m.siblingValues(place, stem+"s") {
			if !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
		labels, _ := sel["matchLabels"].(map[string]any)
		candidates := m.others(func(t *Node) bool { return carriesLabels(t, labels) })
		for _, value := range values {
			m.resolve(path, key, candidates, []string{value})
		}
	}
}

// byName names the target of a …Ref or …Refs' name: the one candidate of
// the name, or else the one its resolved sibling singles out.
func (m managedInference) byName(place, path, key, sibling, name string) {
	if name == "" {
		return
	}
	candidates := m.others(func(t *Node) bool { return t.Identity.Name == name })
	if len(candidates) == 1 {
		m.add(candidates[0], path)
		return
	}
	m.resolve(path, key, candidates, m.siblingValues(place, sibling))
}

// siblingValues are the values the field key holds, resolved, in the maps
// of d's bodies at place.
func (m managedInference) siblingValues(place, key string) []string {
	var out []string
	for _, fields := range m.places[place] {
		for _, v := range resolvedValues(fields[key]) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// others are the composed resources of d's namespace but d and
// ProviderConfigs that keep holds for.
func (m managedInference) others(keep func(t *Node) bool) []string {
	var out []string
	for _, tn := range m.p.Names {
		t := m.p.Nodes[tn]
		if tn != m.d.Name && t.Identity.Namespace == m.d.Identity.Namespace && !slices.Contains(providerConfigKinds, t.Identity.Kind) && keep(t) {
			out = append(out, tn)
		}
	}
	return out
}

// resolve names the target of one reference of the field key at path, or
// counts the field.
func (m managedInference) resolve(path, key string, candidates, values []string) {
	if len(candidates) == 0 {
		return // Nothing composed: an external reference.
	}
	var held []string
	for _, tn := range candidates {
		if slices.ContainsFunc(identifiers(m.p.Nodes[tn]), func(id string) bool { return slices.Contains(values, id) }) {
			held = append(held, tn)
		}
	}
	if len(held) == 1 {
		m.add(held[0], path)
		return
	}
	if len(held) == 0 {
		held = candidates
	}
	var ofKind []string
	for _, tn := range held {
		if fieldNamesKind(key, m.p.Nodes[tn].Identity.Kind) {
			ofKind = append(ofKind, tn)
		}
	}
	if len(ofKind) == 1 {
		m.add(ofKind[0], path)
		return
	}
	m.notInferred(path, candidates)
}

// notInferred counts the field at path that nothing singles a target out
// of, with its candidates.
func (m managedInference) notInferred(path string, candidates []string) {
	p := m.p
	if p.notInferred == nil {
		p.notInferred = map[string][]string{}
	}
	field := m.d.Name + " " + path
	for _, tn := range candidates {
		if !slices.Contains(p.notInferred[field], tn) {
			p.notInferred[field] = append(p.notInferred[field], tn)
		}
	}
}

// collectMaps records every map under v by its path, as walk writes paths.
func collectMaps(path string, v any, into map[string][]map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		into[path] = append(into[path], v)
		for k, e := range v {
			collectMaps(path+"."+k, e, into)
		}
	case []any:
		for i, e := range v {
			collectMaps(fmt.Sprintf("%s[%d]", path, i), e, into)
		}
	}
}

// walk visits every key of every map under v, depth first, each map's keys
// in sorted order, each key before what its value holds; place is the
// path of the map the key is in.
func walk(path string, v any, visit func(place string, m map[string]any, key string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			visit(path, v, k)
			walk(path+"."+k, v[k], visit)
		}
	case []any:
		for i, e := range v {
			walk(fmt.Sprintf("%s[%d]", path, i), e, visit)
		}
	}
}

// resolvedValues are the values a resolved field holds: a string, or the
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

// identifiers are what t's provider calls it, in any of its bodies: its
// external name, and the id and ARN the provider observed.
func identifiers(t *Node) []string {
	var out []string
	for _, b := range t.bodies() {
		for _, s := range []string{
			harness.String(b, "metadata", "annotations", ExternalNameAnnotation),
			harness.String(b, "status", "atProvider", "id"),
			harness.String(b, "status", "atProvider", "arn"),
		} {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// carriesLabels tells whether a body of t carries all the labels.
func carriesLabels(t *Node, labels map[string]any) bool {
	return slices.ContainsFunc(t.bodies(), func(b map[string]any) bool {
		for k, v := range labels {
			if s, ok := v.(string); !ok || harness.String(b, "metadata", "labels", k) != s {
				return false
			}
		}
		return true
	})
}

// fieldNamesKind tells whether a reference field names the kind: with its
// Ref, Refs or Selector and then an Id, Ids, Name, Names, Arn or Arns cut
// off, the field ends with the kind, which starts one of its words (the
// field's first letter, or a capital).
func fieldNamesKind(field, kind string) bool {
	stem := field
	for _, suffix := range []string{"Selector", "Refs", "Ref"} {
		if s, ok := strings.CutSuffix(stem, suffix); ok {
			stem = s
			break
		}
	}
	for _, suffix := range []string{"Ids", "Id", "Names", "Name", "Arns", "Arn"} {
		if s, ok := strings.CutSuffix(stem, suffix); ok {
			stem = s
			break
		}
	}
	at := len(stem) - len(kind)
	if kind == "" || at < 0 || !strings.EqualFold(stem[at:], kind) {
		return false
	}
	return at == 0 || unicode.IsUpper(rune(stem[at]))
}
