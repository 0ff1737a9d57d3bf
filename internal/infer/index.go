package infer

// The index of the candidates: each composed resource by what a reference
// can find it by, built once per call, so that finding a target costs the
// same however many resources there are.

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

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
