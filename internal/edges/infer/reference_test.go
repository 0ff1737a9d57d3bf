package infer

// This file is the implementation of Edges as it was before candidates were
// indexed once per call, kept verbatim but for its names: the differential
// test holds the indexed Edges to it, edge for edge and report for report.
// It is quadratic on many resources of one name or label, so it runs on
// small inputs only.

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// referenceEdges returns the edges of the kinds that the resources state, by
// dependent in the resources' order, then by rule, then in the order each
// rule reads the bodies: one for each dependent and target, never from a
// resource to itself; and the reference fields it found no single target
// for, in the same order, each once.
func referenceEdges(resources []Resource, k Kinds) Found {
	if !k.ProviderConfigs && !k.Credentials && !k.ManagedReferences {
		return Found{}
	}
	ix := refIndex(resources)
	var found Found
	d := 0
	// unidentified reports a reference field of dependent d once: its
	// fields are reported one after the other.
	unidentified := func(via string) {
		u := Unidentified{Dependent: resources[d].Name, Via: via}
		for i := len(found.Unidentified) - 1; i >= 0 && found.Unidentified[i].Dependent == u.Dependent; i-- {
			if found.Unidentified[i] == u {
				return
			}
		}
		found.Unidentified = append(found.Unidentified, u)
	}
	for ; d < len(resources); d++ {
		seen := map[int]bool{d: true}
		add := func(t int, via string) {
			if !seen[t] {
				seen[t] = true
				found.Edges = append(found.Edges, Edge{Dependent: resources[d].Name, Target: resources[t].Name, Via: via})
			}
		}
		if k.ProviderConfigs {
			ix.providerConfigOf(d, add)
		}
		if k.Credentials {
			ix.credentialsOf(d, add)
		}
		if k.ManagedReferences {
			ix.referencesOf(d, add, unidentified)
		}
	}
	return found
}

// refIndexed are the resources, with the places of those of each name, and
// every place: what a selector's target is found among.
type refIndexed struct {
	resources []Resource
	byName    map[string][]int
	all       []int
	// ids are the identifiers of those whose identifiers were read.
	ids map[int][]string
}

func refIndex(resources []Resource) refIndexed {
	ix := refIndexed{resources: resources, byName: map[string][]int{}, all: make([]int, len(resources)), ids: map[int][]string{}}
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
func (ix refIndexed) providerConfigOf(d int, add func(int, string)) {
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
			if id.Kind != kind || !refSameOrParentGroup(dep.Group, id.Group) || (id.Namespace != "" && id.Namespace != dep.Namespace) {
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

// refSameOrParentGroup tells whether group is parent itself or one of its
// subgroups.
func refSameOrParentGroup(group, parent string) bool {
	return group == parent || strings.HasSuffix(group, "."+parent)
}

// refCredentialFields are where a ProviderConfig names the Secret it reads its
// credentials from: provider-kubernetes' and provider-helm's credentials
// and identity, and every Upbound provider's credentials.
var refCredentialFields = [][]string{{"spec", "credentials", "secretRef"}, {"spec", "identity", "secretRef"}}

// credentialsOf finds, for a ProviderConfig, the composed resources that
// write the Secrets it reads its credentials from.
func (ix refIndexed) credentialsOf(p int, add func(int, string)) {
	pc := ix.resources[p].Identity
	if pc.Kind != providerConfig && pc.Kind != clusterProviderConfig {
		return
	}
	for _, body := range ix.resources[p].Bodies {
		for _, path := range refCredentialFields {
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
func (ix refIndexed) writes(w int, namespace, name string) string {
	r := ix.resources[w]
	if r.Identity.Group == "" && r.Identity.Kind == "Secret" && r.Identity.Namespace == namespace && r.Identity.Name == name {
		return "Secret"
	}
	for _, body := range r.Bodies {
		to, _ := body.Value("spec", "writeConnectionSecretToRef").(map[string]any)
		if n, _ := to["name"].(string); n == name && refInNamespace(to, r.Identity.Namespace) == namespace {
			return "spec.writeConnectionSecretToRef"
		}
		if !objectref.IsObject(r.Identity.Group, r.Identity.Kind) {
			continue
		}
		manifest := func(key string) any { return body.Value("spec", "forProvider", "manifest", key) }
		meta, _ := manifest("metadata").(map[string]any)
		if manifest("apiVersion") == "v1" && manifest("kind") == "Secret" && meta["name"] == name && refInNamespace(meta, r.Identity.Namespace) == namespace {
			return "spec.forProvider.manifest"
		}
	}
	return ""
}

// refInNamespace is the namespace a reference or metadata says, or the one it
// is in when it says none.
func refInNamespace(m map[string]any, own string) string {
	if ns, _ := m["namespace"].(string); ns != "" {
		return ns
	}
	return own
}

// referencesOf finds the composed resources a managed resource references
// under spec.forProvider and spec.initProvider, and the reference fields
// whose target it can't tell.
func (ix refIndexed) referencesOf(d int, add func(int, string), unidentified func(string)) {
	bodies := ix.resources[d].Bodies
	// Each part of each body, decoded once: a reference's resolved value
	// is read at its place in every body. Most resources reference
	// nothing: nothing is allocated for a part no body has fields in.
	var roots [len(refParts)][]any
	for p, part := range refParts {
		for b, body := range bodies {
			keys := body.Keys("spec", part)
			if len(keys) == 0 {
				continue
			}
			var fields map[string]any
			for _, key := range keys {
				if !refPassedThrough[key] {
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
		for p, part := range refParts {
			if roots[p] != nil && roots[p][b] != nil {
				w := refWalker{ix: ix, d: d, roots: roots[p], add: add, unidentified: unidentified}
				w.walk(roots[p][b], "spec."+part)
			}
		}
	}
}

// refParts are where a managed resource's references are.
var refParts = [...]string{"forProvider", "initProvider"}

// refPassedThrough are the fields of spec.forProvider whose content a provider
// passes on as it is, whose …Ref fields are no provider's references:
// provider-kubernetes' manifest (a Deployment's secretKeyRef names a Secret
// of the remote cluster) and provider-helm's values.
var refPassedThrough = map[string]bool{"manifest": true, "values": true}

// A refWalker walks one part of a dependent's bodies for references.
type refWalker struct {
	ix refIndexed
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
func (w refWalker) walk(v any, path string) {
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
				w.named(key, ref, strings.TrimSuffix(key, "Ref"), at)
			case strings.HasSuffix(key, "Refs"):
				refs, _ := v[key].([]any)
				for _, r := range refs {
					ref, _ := r.(map[string]any)
					w.named(key, ref, strings.TrimSuffix(key, "Refs")+"s", at)
				}
			case strings.HasSuffix(key, "Selector"):
				w.selected(key, v[key], at)
			}
			w.at(key).walk(v[key], at)
		}
	}
}

// at is the walker one step further in.
func (w refWalker) at(step any) refWalker {
	w.steps = append(slices.Clip(w.steps), step)
	return w
}

// named infers the target of a …Ref, or of one of a …Refs: among the
// composed resources of its name in the dependent's namespace, the one
// that is alone, or that value or kind singles out.
func (w refWalker) named(key string, ref map[string]any, sibling, at string) {
	name, _ := ref["name"].(string)
	if name == "" {
		return
	}
	ns := w.ix.resources[w.d].Identity.Namespace
	candidates := w.ix.candidates(w.d, w.ix.byName[name], func(t int) bool { return w.ix.resources[t].Identity.Namespace == ns })
	if len(candidates) == 1 {
		w.add(candidates[0], at)
		return
	}
	w.identify(key, candidates, w.values(sibling), at)
}

// selected infers the targets of a resolved …Selector: for each value the
// field it fills holds (the key without Selector, or its plural), among
// the composed resources of the dependent's namespace that carry every
// label it matches, the one value or kind singles out. A selector not
// resolved yet has no target.
func (w refWalker) selected(key string, v any, at string) {
	selector, ok := v.(map[string]any)
	if !ok {
		return
	}
	base := strings.TrimSuffix(key, "Selector")
	values := append(w.values(base), w.values(base+"s")...)
	if len(values) == 0 {
		return
	}
	labels, _ := selector["matchLabels"].(map[string]any)
	ns := w.ix.resources[w.d].Identity.Namespace
	candidates := w.ix.candidates(w.d, w.ix.all, func(t int) bool {
		r := w.ix.resources[t]
		return r.Identity.Namespace == ns && slices.ContainsFunc(r.Bodies, func(b Body) bool { return refCarries(b, labels) })
	})
	for _, value := range values {
		w.identify(key, candidates, []string{value}, at)
	}
}

// identify adds the edge to the candidate a reference field means: the
// only one whose external name, id or ARN is one of the values the field's
// resolved sibling holds; else, of those (or of all when none is), the
// only one of the kind the field refNames. Where neither singles one out, the
// field is unidentified.
func (w refWalker) identify(key string, candidates []int, values []string, at string) {
	if len(candidates) == 0 {
		return
	}
	byValue := slices.DeleteFunc(slices.Clone(candidates), func(t int) bool {
		return !slices.ContainsFunc(w.ix.identifiers(t), func(id string) bool { return slices.Contains(values, id) })
	})
	if len(byValue) == 1 {
		w.add(byValue[0], at)
		return
	}
	if len(byValue) == 0 {
		byValue = slices.Clone(candidates) // The next value has them all.
	}
	words := refFieldWords(key)
	byKind := slices.DeleteFunc(byValue, func(t int) bool { return !refNames(words, w.ix.resources[t].Identity.Kind) })
	if len(byKind) == 1 {
		w.add(byKind[0], at)
		return
	}
	w.unidentified(at)
}

// values are the values the sibling of the object the walk is in holds,
// in every body: a string, or the strings of a list; none empty, each
// once. A provider fills it when it resolves the reference, so it is
// often observed only.
func (w refWalker) values(sibling string) []string {
	var values []string
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
		for _, s := range refResolvedValues(m[sibling]) {
			if !slices.Contains(values, s) {
				values = append(values, s)
			}
		}
	}
	return values
}

// refResolvedValues are the values a resolved field holds: a string, or the
// strings of a list; none empty.
func refResolvedValues(v any) []string {
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

// refCarries tells whether the body carries every one of the labels.
func refCarries(body Body, labels map[string]any) bool {
	have, _ := body.Value("metadata", "labels").(map[string]any)
	for k, v := range labels {
		if have[k] != v {
			return false
		}
	}
	return true
}

// candidates are those of the resources that match, but the dependent and
// ProviderConfigs, which spec.providerConfigRef names.
func (ix refIndexed) candidates(d int, resources []int, match func(int) bool) []int {
	var found []int
	for _, t := range resources {
		if k := ix.resources[t].Identity.Kind; t != d && k != providerConfig && k != clusterProviderConfig && match(t) {
			found = append(found, t)
		}
	}
	return found
}

// refIdentifierFields are where a managed resource says what its provider
// calls it: what a resolved reference copies into the referencing field.
var refIdentifierFields = [][]string{
	{"metadata", "annotations", externalName},
	{"status", "atProvider", "id"},
	{"status", "atProvider", "arn"},
}

// identifiers are the resource's external name, id and ARN, in any of its
// bodies (status only in the observed one), read once.
func (ix refIndexed) identifiers(t int) []string {
	if ids, ok := ix.ids[t]; ok {
		return ids
	}
	var ids []string
	for _, b := range ix.resources[t].Bodies {
		for _, path := range refIdentifierFields {
			if s, _ := b.Value(path...).(string); s != "" {
				ids = append(ids, s)
			}
		}
	}
	ix.ids[t] = ids
	return ids
}

// refFieldWords are the words of a reference field's name that may name its
// target's kind: those before Ref, Refs or Selector, and before an Id,
// Ids, Name, Names, Arn or Arns that ends them.
func refFieldWords(key string) []string {
	words := refCamelWords(key)
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
func refNames(fieldWords []string, kind string) bool {
	k := refCamelWords(kind)
	return len(k) > 0 && len(k) <= len(fieldWords) && slices.Equal(k, fieldWords[len(fieldWords)-len(k):])
}

// refCamelWords splits a camel-case name into its words, lower case: a run of
// capitals is a word, but for its last when a small letter follows
// (DBSubnetGroup: db, subnet, group); digits stay in their word.
func refCamelWords(s string) []string {
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
