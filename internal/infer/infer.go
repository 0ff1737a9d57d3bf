// Package infer finds the dependencies that composed resources state without
// an Object's spec.references: a managed resource's ProviderConfig, the
// resource that writes a ProviderConfig's credentials Secret, and the
// resources a managed resource references from its spec.forProvider. Deleting
// any of them first leaves its dependents unable to reach their cluster or
// cloud, stuck for ever; nothing in Crossplane orders their deletion.
package infer

import (
	"context"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// A Resource is what inference reads of one composed resource.
type Resource struct {
	// Name is the composition resource name.
	Name string
	// Identity is the resource's group, kind, namespace and name.
	Identity object.Ref
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

// Found is what inference finds: the edges, the ProviderConfigs outside the
// composite, and the reference fields it can't tell the target of.
type Found struct {
	Edges []Edge
	// Outside are the ProviderConfigs the resources use that none of them
	// is, by dependent in the resources' order, each once for each.
	Outside []Outside
	// Unidentified are the …Ref, …Refs and resolved …Selector fields whose
	// candidates nothing singles out: no edge is inferred for them.
	Unidentified []Unidentified
}

// An Unidentified reference field of the Dependent, at Via: several
// composed resources may be its target and nothing says which.
type Unidentified struct {
	Dependent, Via string
}

// An Outside ProviderConfig is one the Dependent's spec.providerConfigRef
// names that no composed resource is: another composite's, or one installed
// by hand. Config has the apiVersion to ask Crossplane for it by.
type Outside struct {
	Dependent string
	Config    object.Ref
}

// Edges returns the edges of the kinds that the resources state, by
// dependent in the resources' order, then by rule, then in the order each
// rule reads the bodies: one for each dependent and target, never from a
// resource to itself; and the reference fields it found no single target
// for, in the same order, each once.
//
// It stops, with the context's error, when the call is cancelled.
func Edges(ctx context.Context, resources []Resource, k Kinds) (Found, error) {
	if !k.ProviderConfigs && !k.Credentials && !k.ManagedReferences {
		return Found{}, nil
	}
	ix := &indexed{resources: resources}
	var found Found
	d := 0
	// reported are the fields reported unidentified, by dependent: a field
	// is reported once however many of its references are.
	type report struct {
		d   int
		via string
	}
	var reported map[report]bool
	unidentified := func(via string) {
		if reported[report{d, via}] {
			return
		}
		if reported == nil {
			reported = map[report]bool{}
		}
		reported[report{d, via}] = true
		found.Unidentified = append(found.Unidentified, Unidentified{Dependent: resources[d].Name, Via: via})
	}
	for ; d < len(resources); d++ {
		if err := ctx.Err(); err != nil {
			return Found{}, err
		}
		seen := map[int]bool{d: true}
		add := func(t int, via string) {
			if !seen[t] {
				seen[t] = true
				found.Edges = append(found.Edges, Edge{Dependent: resources[d].Name, Target: resources[t].Name, Via: via})
			}
		}
		if k.ProviderConfigs {
			var outside []object.Ref
			ix.providerConfigOf(d, add, func(c object.Ref) {
				if !slices.Contains(outside, c) {
					outside = append(outside, c)
					found.Outside = append(found.Outside, Outside{Dependent: resources[d].Name, Config: c})
				}
			})
		}
		if k.Credentials {
			ix.credentialsOf(d, add)
		}
		if k.ManagedReferences {
			ix.referencesOf(d, add, unidentified)
		}
	}
	return found, nil
}

// indexed are the resources, with what the rules look their targets up
// by. Each index is built the first time a rule asks, in one pass over the
// resources, so that a call costs the resources plus the references however
// many resources share a name, a label or a Secret: looking candidates up
// among all resources once per reference costs their product.
type indexed struct {
	resources []Resource
	// configs are the resources by name, kind, group and namespace: what a
	// providerConfigRef names.
	configs map[configKey][]int
	// writers are, by the Secret's namespace and name, the resources that
	// say they write it.
	writers map[place][]writer
	// named are the candidates of references by namespace and name.
	named map[place]*group
	// selected are the candidates of resolved selectors, by namespace and
	// matchLabels.
	selected map[string]*group
	// labels are each resource's labels in each body, and byLabel the
	// resources that carry a label with a value in some body.
	labels  [][]map[string]any
	byLabel map[label][]int
	// ids are the identifiers of each resource, of those whose identifiers
	// were read.
	ids     [][]string
	idsRead []bool
}

// A place is a namespace and a name.
type place struct{ namespace, name string }

// A configKey is what a providerConfigRef names: the name and kind, in a
// group and a namespace.
type configKey struct{ name, kind, group, namespace string }

// A writer writes a Secret at the field, the first of its fields that say so.
type writer struct {
	w     int
	field string
}

// A label is a label's key and value, of a type that can be a map key.
type label struct {
	key   string
	value any
}

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

// referencesOf finds the composed resources a managed resource references
// under spec.forProvider and spec.initProvider, and the reference fields
// whose target it can't tell.
func (ix *indexed) referencesOf(d int, add func(int, string), unidentified func(string)) {
	bodies := ix.resources[d].Bodies
	// Each part of each body, decoded once: a reference's resolved value
	// is read at its place in every body. Most resources reference
	// nothing: nothing is allocated for a part no body has fields in.
	var roots [len(parts)][]any
	for p, part := range parts {
		for b, body := range bodies {
			keys := body.Keys("spec", part)
			if len(keys) == 0 {
				continue
			}
			var fields map[string]any
			for _, key := range keys {
				if !passedThrough[key] {
					if fields == nil {
						fields = make(map[string]any, len(keys))
					}
					fields[key] = body.Value("spec", part, key)
				}
			}
			if fields == nil {
				continue
			}
			if roots[p] == nil {
				roots[p] = make([]any, len(bodies))
			}
			roots[p][b] = fields
		}
	}
	for b := range bodies {
		for p, part := range parts {
			if roots[p] != nil && roots[p][b] != nil {
				w := walker{ix: ix, d: d, roots: roots[p], add: add, unidentified: unidentified}
				w.walk(roots[p][b], "spec."+part)
			}
		}
	}
}

// parts are where a managed resource's references are.
var parts = [...]string{"forProvider", "initProvider"}

// passedThrough are the fields of spec.forProvider whose content a provider
// passes on as it is, whose …Ref fields are no provider's references:
// provider-kubernetes' manifest (a Deployment's secretKeyRef names a Secret
// of the remote cluster) and provider-helm's values.
var passedThrough = map[string]bool{"manifest": true, "values": true}

// A walker walks one part of a dependent's bodies for references.
type walker struct {
	ix *indexed
	d  int
	// roots are the part in each of the dependent's bodies, and steps the
	// keys and list indices from there to the object the walk is in.
	roots []any
	steps []any
	add   func(int, string)
	// unidentified reports a field whose target nothing singles out.
	unidentified func(string)
}

// walk finds the references in a value at path, depth first, each key of an
// object in sorted order and before what its value holds.
func (w walker) walk(v any, path string) {
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			w.at(i).walk(item, path+"["+strconv.Itoa(i)+"]")
		}
	case map[string]any:
		for _, key := range slices.Sorted(maps.Keys(v)) {
			at := path + "." + key
			switch {
			case strings.HasSuffix(key, "Ref"):
				ref, _ := v[key].(map[string]any)
				name, _ := ref["name"].(string)
				w.named(key, name, w.lazyValues(strings.TrimSuffix(key, "Ref")), at)
			case strings.HasSuffix(key, "Refs"):
				refs, _ := v[key].([]any)
				values := w.lazyValues(strings.TrimSuffix(key, "Refs") + "s")
				// A name again in the list finds what it found: the
				// field, the values and the candidates are the same.
				var done map[string]bool
				for _, r := range refs {
					ref, _ := r.(map[string]any)
					name, _ := ref["name"].(string)
					if done[name] {
						continue
					}
					if len(refs) > 1 {
						if done == nil {
							done = map[string]bool{}
						}
						done[name] = true
					}
					w.named(key, name, values, at)
				}
			case strings.HasSuffix(key, "Selector"):
				w.selected(key, v[key], at)
			}
			w.at(key).walk(v[key], at)
		}
	}
}

// at is the walker one step further in.
func (w walker) at(step any) walker {
	w.steps = append(slices.Clip(w.steps), step)
	return w
}

// named infers the target of a …Ref, or of one of a …Refs, of the name:
// among the composed resources of its name in the dependent's namespace,
// the one that is alone, or that value or kind singles out.
func (w walker) named(key, name string, values func() valueSet, at string) {
	if name == "" {
		return
	}
	g := w.ix.namedGroup(w.ix.resources[w.d].Identity.Namespace, name)
	if g.others(w.d) == 1 {
		t := g.members[0]
		if t == w.d {
			t = g.members[1]
		}
		w.add(t, at)
		return
	}
	w.identify(key, g, values(), at)
}

// selected infers the targets of a resolved …Selector: for each value the
// field it fills holds (the key without Selector, or its plural), among
// the composed resources of the dependent's namespace that carry every
// label it matches, the one value or kind singles out. A selector not
// resolved yet has no target.
func (w walker) selected(key string, v any, at string) {
	selector, ok := v.(map[string]any)
	if !ok {
		return
	}
	base := strings.TrimSuffix(key, "Selector")
	values := w.values(base, base+"s")
	if len(values.list) == 0 {
		return
	}
	labels, _ := selector["matchLabels"].(map[string]any)
	g := w.ix.selectedGroup(w.ix.resources[w.d].Identity.Namespace, labels)
	for _, value := range values.list {
		w.identify(key, g, valueSet{list: []string{value}}, at)
	}
}

// identify adds the edge to the candidate a reference field means: the
// only one whose external name, id or ARN is one of the values the field's
// resolved sibling holds; else, of those (or of all when none is), the
// only one of the kind the field names. Where neither singles one out, the
// field is unidentified. The candidates are the group's but the dependent.
func (w walker) identify(key string, g *group, values valueSet, at string) {
	if g.others(w.d) == 0 {
		return
	}
	words := fieldWords(key)
	var byKind few
	if len(g.members) <= len(values.list) {
		// No more candidates than values: each is looked at.
		var byValue []int
		for _, t := range g.members {
			if t != w.d && slices.ContainsFunc(w.ix.identifiers(t), values.has) {
				byValue = append(byValue, t)
			}
		}
		if len(byValue) == 1 {
			w.add(byValue[0], at)
			return
		}
		if len(byValue) == 0 {
			byValue = g.members // The next value has them all.
		}
		for _, t := range byValue {
			if t != w.d && names(words, w.ix.resources[t].Identity.Kind) {
				byKind.add1(t, w.d)
			}
		}
	} else {
		// More candidates than values: they are looked up by each value,
		// and by each kind the field may name, as far as telling one from
		// several takes.
		g.index(w.ix)
		var byValue few
		for _, value := range values.list {
			byValue.add(g.byID[value], w.d)
		}
		if byValue.n == 1 {
			w.add(byValue.t[0], at)
			return
		}
		kinds := suffixKeys(words)
		for _, kind := range kinds {
			if byValue.n == 0 {
				byKind.add(g.byKind[kind], w.d)
				continue
			}
			for _, value := range values.list {
				byKind.add(g.byIDKind[[2]string{value, kind}], w.d)
			}
		}
	}
	if byKind.n == 1 {
		w.add(byKind.t[0], at)
		return
	}
	w.unidentified(at)
}

// few are the first two distinct resources of lists of distinct resources,
// but one: identify tells one candidate from none and from several.
type few struct {
	n int
	t [2]int
}

// add adds the resources of the list, but the one, while there are fewer
// than two. A list has the one and the first at most once each, so it is
// read no further than its fourth.
func (f *few) add(list []int, but int) {
	for _, t := range list {
		if f.n == 2 {
			return
		}
		f.add1(t, but)
	}
}

// add1 adds the resource unless it is the one, while there are fewer than
// two.
func (f *few) add1(t, but int) {
	if f.n < 2 && t != but && (f.n == 0 || f.t[0] != t) {
		f.t[f.n] = t
		f.n++
	}
}

// A valueSet are the values a resolved field holds, each once, with a set
// of them where they are many.
type valueSet struct {
	list []string
	set  map[string]bool
}

func (v valueSet) has(s string) bool {
	if v.set != nil {
		return v.set[s]
	}
	return slices.Contains(v.list, s)
}

// lazyValues are the values of the sibling, read when first asked for: a
// reference alone among its name's candidates needs none.
func (w walker) lazyValues(sibling string) func() valueSet {
	var values valueSet
	read := false
	return func() valueSet {
		if !read {
			values, read = w.values(sibling), true
		}
		return values
	}
}

// values are the values the siblings of the object the walk is in hold,
// in every body: a string, or the strings of a list; none empty, each
// once. A provider fills them when it resolves the reference, so they
// are often observed only.
func (w walker) values(siblings ...string) valueSet {
	var values valueSet
	for _, sibling := range siblings {
		for _, root := range w.roots {
			v := root
			for _, step := range w.steps {
				switch s := step.(type) {
				case string:
					m, _ := v.(map[string]any)
					v = m[s]
				case int:
					l, _ := v.([]any)
					v = nil
					if s < len(l) {
						v = l[s]
					}
				}
			}
			m, _ := v.(map[string]any)
			for _, s := range resolvedValues(m[sibling]) {
				if values.set == nil {
					values.set = map[string]bool{}
				}
				if !values.set[s] {
					values.set[s] = true
					values.list = append(values.list, s)
				}
			}
		}
	}
	return values
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

// carries tells whether labels a body has carry every one of the labels.
func carries(have, labels map[string]any) bool {
	for k, v := range labels {
		if have[k] != v {
			return false
		}
	}
	return true
}

// A group are the candidates of references, in the resources' order:
// the resources of a namespace and name, or of a namespace that carry a
// selector's labels, but ProviderConfigs, which spec.providerConfigRef
// names. Indexed by identifier and kind when a reference's values are
// fewer than its candidates.
type group struct {
	members []int
	indexed bool
	// byID are the members by identifier, byKind by the words of their
	// kind, and byIDKind by both.
	byID     map[string][]int
	byKind   map[string][]int
	byIDKind map[[2]string][]int
}

// others counts the members but the one.
func (g *group) others(but int) int {
	if g == nil {
		return 0
	}
	if _, in := slices.BinarySearch(g.members, but); in {
		return len(g.members) - 1
	}
	return len(g.members)
}

// index indexes the members, once. A member is once in each list.
func (g *group) index(ix *indexed) {
	if g.indexed {
		return
	}
	g.indexed = true
	g.byID, g.byKind, g.byIDKind = map[string][]int{}, map[string][]int{}, map[[2]string][]int{}
	for _, t := range g.members {
		kind := wordsKey(camelWords(ix.resources[t].Identity.Kind))
		for _, id := range ix.identifiers(t) {
			if l := g.byID[id]; len(l) == 0 || l[len(l)-1] != t {
				g.byID[id] = append(l, t)
			}
			if k := [2]string{id, kind}; kind != "" {
				if l := g.byIDKind[k]; len(l) == 0 || l[len(l)-1] != t {
					g.byIDKind[k] = append(l, t)
				}
			}
		}
		if kind != "" {
			g.byKind[kind] = append(g.byKind[kind], t)
		}
	}
}

// namedGroup are the candidates of the namespace and name; nil when none.
func (ix *indexed) namedGroup(namespace, name string) *group {
	if ix.named == nil {
		ix.named = map[place]*group{}
		for i, r := range ix.resources {
			if id := r.Identity; id.Name != "" && !isProviderConfig(id.Kind) {
				at := place{id.Namespace, id.Name}
				g := ix.named[at]
				if g == nil {
					g = &group{}
					ix.named[at] = g
				}
				g.members = append(g.members, i)
			}
		}
	}
	return ix.named[place{namespace, name}]
}

// selectedGroup are the candidates of the namespace that carry the labels
// in some body, found once for each namespace and labels: among those that
// carry the label fewest carry where there is one to look up, else among
// all.
func (ix *indexed) selectedGroup(namespace string, labels map[string]any) *group {
	key, keyed := selectorKey(namespace, labels)
	if g, ok := ix.selected[key]; keyed && ok {
		return g
	}
	ix.labelled()
	var among []int
	all := true
	for k, v := range labels {
		if !isScalar(v) {
			continue
		}
		if l := ix.byLabel[label{k, v}]; all || len(l) < len(among) {
			among, all = l, false
		}
	}
	g := &group{}
	match := func(t int) bool {
		id := ix.resources[t].Identity
		return id.Namespace == namespace && !isProviderConfig(id.Kind) &&
			slices.ContainsFunc(ix.labels[t], func(have map[string]any) bool { return carries(have, labels) })
	}
	if all {
		for t := range ix.resources {
			if match(t) {
				g.members = append(g.members, t)
			}
		}
	} else {
		for _, t := range among {
			if match(t) {
				g.members = append(g.members, t)
			}
		}
	}
	if keyed {
		if ix.selected == nil {
			ix.selected = map[string]*group{}
		}
		ix.selected[key] = g
	}
	return g
}

// labelled decodes each resource's labels in each body, once, and indexes
// the resources by each label.
func (ix *indexed) labelled() {
	if ix.labels != nil {
		return
	}
	ix.labels = make([][]map[string]any, len(ix.resources))
	ix.byLabel = map[label][]int{}
	for t, r := range ix.resources {
		ix.labels[t] = make([]map[string]any, len(r.Bodies))
		for b, body := range r.Bodies {
			have, _ := body.Value("metadata", "labels").(map[string]any)
			ix.labels[t][b] = have
			for k, v := range have {
				if !isScalar(v) {
					continue
				}
				if l := ix.byLabel[label{k, v}]; len(l) == 0 || l[len(l)-1] != t {
					ix.byLabel[label{k, v}] = append(l, t)
				}
			}
		}
	}
}

// isScalar tells whether a decoded value is a string, number or boolean:
// one a label can be looked up by, equal to what is equal to it.
func isScalar(v any) bool {
	switch v.(type) {
	case string, float64, bool:
		return true
	}
	return false
}

// selectorKey is the namespace and the labels, sorted, for selectors that
// match the same candidates to share them; false for labels of a value
// neither null nor scalar.
func selectorKey(namespace string, labels map[string]any) (string, bool) {
	var b strings.Builder
	b.WriteString(strconv.Quote(namespace))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(strconv.Quote(k))
		switch v := labels[k].(type) {
		case nil:
			b.WriteString("n")
		case string:
			b.WriteString("s" + strconv.Quote(v))
		case float64:
			b.WriteString("f" + strconv.FormatFloat(v, 'g', -1, 64))
		case bool:
			b.WriteString("b" + strconv.FormatBool(v))
		default:
			return "", false
		}
	}
	return b.String(), true
}

// identifierFields are where a managed resource says what its provider
// calls it: what a resolved reference copies into the referencing field.
var identifierFields = [][]string{
	{"metadata", "annotations", externalName},
	{"status", "atProvider", "id"},
	{"status", "atProvider", "arn"},
}

// identifiers are the resource's external name, id and ARN, in any of its
// bodies (status only in the observed one), read once.
func (ix *indexed) identifiers(t int) []string {
	if ix.idsRead == nil {
		ix.ids, ix.idsRead = make([][]string, len(ix.resources)), make([]bool, len(ix.resources))
	}
	if ix.idsRead[t] {
		return ix.ids[t]
	}
	var ids []string
	for _, b := range ix.resources[t].Bodies {
		for _, path := range identifierFields {
			if s, _ := b.Value(path...).(string); s != "" {
				ids = append(ids, s)
			}
		}
	}
	ix.ids[t], ix.idsRead[t] = ids, true
	return ids
}

// fieldWords are the words of a reference field's name that may name its
// target's kind: those before Ref, Refs or Selector, and before an Id,
// Ids, Name, Names, Arn or Arns that ends them.
func fieldWords(key string) []string {
	words := camelWords(key)
	if n := len(words); n > 0 && slices.Contains([]string{"ref", "refs", "selector"}, words[n-1]) {
		words = words[:n-1]
	}
	if n := len(words); n > 0 && slices.Contains([]string{"id", "ids", "name", "names", "arn", "arns"}, words[n-1]) {
		words = words[:n-1]
	}
	return words
}

// names tells whether a field of the words names the kind: the kind's
// words are the field's last (vpcIdRef a VPC, routeTableIdRef a
// RouteTable but no Route, gatewayIdRef no InternetGateway).
func names(fieldWords []string, kind string) bool {
	k := camelWords(kind)
	return len(k) > 0 && len(k) <= len(fieldWords) && slices.Equal(k, fieldWords[len(fieldWords)-len(k):])
}

// suffixKeys are the keys of the words' every end: a kind whose words'
// key is one of them is one the field of the words names.
func suffixKeys(words []string) []string {
	keys := make([]string, len(words))
	for i := range words {
		keys[i] = wordsKey(words[i:])
	}
	return keys
}

// wordsKey is a key of the words, the same for the same words only; ""
// for none.
func wordsKey(words []string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteString(strconv.Quote(w))
	}
	return b.String()
}

// camelWords splits a camel-case name into its words, lower case: a run of
// capitals is a word, but for its last when a small letter follows
// (DBSubnetGroup: db, subnet, group); digits stay in their word.
func camelWords(s string) []string {
	var words []string
	start := 0
	r := []rune(s)
	for i := 1; i < len(r); i++ {
		upper := unicode.IsUpper(r[i])
		if upper && (!unicode.IsUpper(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]))) {
			words = append(words, strings.ToLower(string(r[start:i])))
			start = i
		}
	}
	if len(r) > 0 {
		words = append(words, strings.ToLower(string(r[start:])))
	}
	return words
}
