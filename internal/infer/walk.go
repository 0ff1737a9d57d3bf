package infer

// The walk of a managed resource's spec.forProvider: the fields that name,
// select or identify another resource.

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

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
			fields := fieldsOf(body, part)
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

// fieldsOf decodes the fields of the part of a body, but those passed
// through; nil when there is none.
func fieldsOf(body Body, part string) map[string]any {
	keys := body.Keys("spec", part)
	var fields map[string]any
	for _, key := range keys {
		if !passedThrough[key] {
			if fields == nil {
				fields = make(map[string]any, len(keys))
			}
			fields[key] = body.Value("spec", part, key)
		}
	}
	return fields
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
	var t int
	var one bool
	if len(g.members) <= len(values.list) {
		t, one = w.among(g.members, words, values)
	} else {
		t, one = w.lookUp(g, words, values)
	}
	if !one {
		w.unidentified(at)
		return
	}
	w.add(t, at)
}

// among singles out a candidate where there are no more candidates than
// values: each is looked at.
func (w walker) among(members []int, words []string, values valueSet) (int, bool) {
	var byValue []int
	for _, t := range members {
		if t != w.d && slices.ContainsFunc(w.ix.identifiers(t), values.has) {
			byValue = append(byValue, t)
		}
	}
	if len(byValue) == 1 {
		return byValue[0], true
	}
	if len(byValue) == 0 {
		byValue = members // The next value has them all.
	}
	var byKind few
	for _, t := range byValue {
		if t != w.d && names(words, w.ix.resources[t].Identity.Kind) {
			byKind.add1(t, w.d)
		}
	}
	return byKind.one()
}

// lookUp singles out a candidate where there are more candidates than
// values: they are looked up by each value, and by each kind the field may
// name, as far as telling one from several takes.
func (w walker) lookUp(g *group, words []string, values valueSet) (int, bool) {
	g.index(w.ix)
	var byValue few
	for _, value := range values.list {
		byValue.add(g.byID[value], w.d)
	}
	if byValue.n == 1 {
		return byValue.t[0], true
	}
	var byKind few
	for _, kind := range suffixKeys(words) {
		if byValue.n == 0 {
			byKind.add(g.byKind[kind], w.d)
			continue
		}
		for _, value := range values.list {
			byKind.add(g.byIDKind[[2]string{value, kind}], w.d)
		}
	}
	return byKind.one()
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

// one is the resource when there is one only.
func (f few) one() (int, bool) { return f.t[0], f.n == 1 }

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
