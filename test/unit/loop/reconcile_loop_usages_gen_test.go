package loop

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
)

// What the generator adds for issue 31's composed Usages: Usages the
// composition composes itself, as many published compositions do, of what
// one of its resources depends on, by that resource, naming each end by
// resourceRef or by a resourceSelector; sometimes one whose selector selects
// two resources, which protects no edge the function can tell. All of it is
// drawn from an RNG of its own, after everything else, so that a seed makes
// the same compositions as before wherever it draws none.

// loopComposedUsages adds Usages the composition composes itself.
func loopComposedUsages(c *loopComposition, rng *rand.Rand) {
	chance := func(percent int) bool { return rng.IntN(100) < percent }
	if !chance(25) {
		return
	}
	res := c.phases[0]
	byName := map[string]*loopResource{}
	names := make([]string, len(res))
	for i, r := range res {
		byName[r.name], names[i] = r, r.name
	}
	// The composition's edges: references, dependencies the input declares,
	// the ProviderConfigs resources name; and a pair of no edge.
	type pair struct{ d, t *loopResource }
	var pairs []pair
	for _, r := range res {
		for _, ref := range r.refs {
			if t := byName[ref.target]; t != nil && r.kind.object() {
				pairs = append(pairs, pair{r, t})
			}
		}
		if pc, ok := r.fields["spec.providerConfigRef"].(map[string]any); ok {
			for _, t := range res {
				if t.objName == pc["name"] && (t.kind.kind == "ProviderConfig" || t.kind.kind == "ClusterProviderConfig") {
					pairs = append(pairs, pair{r, t})
				}
			}
		}
	}
	for _, e := range loopDeclared(c.input, names) {
		pairs = append(pairs, pair{byName[e[0]], byName[e[1]]})
	}
	// A pair of resources with no edge at all: one that nothing relates
	// can close no cycle through the Usage.
	dependents, dependencies := loopEnds(res, c.input)
	var loose []*loopResource
	for _, r := range res {
		if !r.kind.object() && len(r.fields) == 0 && !dependents[r.name] && !dependencies[r.name] {
			loose = append(loose, r)
		}
	}
	if len(loose) > 1 && (len(pairs) == 0 || chance(15)) {
		i, j := rng.IntN(len(loose)), rng.IntN(len(loose))
		if i != j {
			pairs = append(pairs, pair{loose[i], loose[j]})
		}
	}
	// namespaceOf is where the resource is, "" for a cluster-scoped one, and
	// false where the generator left it to no one.
	namespaceOf := func(r *loopResource) (string, bool) {
		if !r.kind.namespaced {
			return "", true
		}
		ns := cmp.Or(r.namespace, c.xrNamespace())
		return ns, ns != ""
	}
	var added []*loopResource
	for range 1 + rng.IntN(2) {
		if len(pairs) == 0 {
			break
		}
		p := pairs[rng.IntN(len(pairs))]
		dns, dok := namespaceOf(p.d)
		tns, tok := namespaceOf(p.t)
		name := "keep-" + p.d.name + "-" + p.t.name
		if !dok || !tok || (dns == "") != (tns == "") || slices.ContainsFunc(added, func(r *loopResource) bool { return r.name == name }) {
			continue
		}
		apiVersion, kind := "protection.crossplane.io/v1beta1", "ClusterUsage"
		switch {
		case dns != "":
			kind = "Usage"
		case chance(25):
			apiVersion, kind = "apiextensions.crossplane.io/v1beta1", "Usage"
		}
		u := &loopResource{name: name, kind: &loopKind{[]string{apiVersion}, kind, dns != ""}, apiVersion: apiVersion, objName: c.xrName + "-" + name}
		if dns != "" && (!c.namespaced || chance(50)) {
			u.namespace = dns
		}
		end := func(r *loopResource, ns string) map[string]any {
			e := map[string]any{"apiVersion": r.apiVersion, "kind": r.kind.kind}
			if chance(55) {
				if r.objName == "" {
					r.objName = c.xrName + "-" + r.name
				}
				ref := map[string]any{"name": r.objName}
				if ns != dns {
					ref["namespace"] = ns
				}
				e["resourceRef"] = ref
				c.features["a composed Usage by name"] = true
				return e
			}
			labels := map[string]any{"usage-end": r.name}
			r.addLabels(labels)
			sel := map[string]any{"matchLabels": labels}
			if chance(50) {
				sel["matchControllerRef"] = true
			}
			if ns != dns {
				sel["namespace"] = ns
			}
			e["resourceSelector"] = sel
			c.features["a composed Usage by selector"] = true
			// Another of its kind with the same labels: Crossplane picks
			// one of the two.
			if chance(20) {
				for _, o := range res {
					if ons, _ := namespaceOf(o); o != r && o.kind == r.kind && ons == ns {
						o.addLabels(labels)
						c.features["a composed Usage whose selector selects several"] = true
						break
					}
				}
			}
			return e
		}
		u.set("spec.of", end(p.t, tns))
		u.set("spec.by", end(p.d, dns))
		u.set("spec.reason", "a Usage of the composition's own")
		if chance(70) {
			u.set("spec.replayDeletion", true)
		}
		c.delays[name] = 1 + rng.IntN(2)
		added = append(added, u)
	}
	if len(added) == 0 {
		return
	}
	c.phases[0] = append(res, added...)
	if len(c.phases) == 2 {
		// The composition keeps its Usages. One it removes while an edge it
		// protects still needs it (its user being deleted, or what it
		// protects removed too) goes in that reconcile, before the
		// function's own could be applied: the README says so, and the loop
		// leaves it out.
		c.phases[1] = append(c.phases[1], added...)
	}
}

// addLabels adds labels to the resource's metadata.labels, keeping those it
// has.
func (r *loopResource) addLabels(labels map[string]any) {
	all, _ := r.fields["metadata.labels"].(map[string]any)
	all = maps.Clone(all)
	if all == nil {
		all = map[string]any{}
	}
	maps.Copy(all, labels)
	r.set("metadata.labels", all)
}
