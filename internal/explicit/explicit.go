// Package explicit resolves the dependencies the function's input declares,
// by composition resource name or pattern, into pairs of composed resources,
// and decides the references an Object needs for them.
package explicit

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// A Rule says that the resources Resource names depend on those DependsOn
// names. Each is a composition resource name or an RE2 pattern that must
// match a whole name, as v1beta1.Pattern compiles it.
type Rule struct {
	Resource  string
	DependsOn []string
}

// An Unmatched entry is a name or pattern that matches no composed resource.
type Unmatched struct {
	// Field is where the entry is in the input, such as
	// dependencies[0].dependsOn[1].
	Field   string
	Pattern string
}

// MaxPairs bounds the pairs of dependent and dependency that the rules of one
// input may declare, counted before repeats are removed. A pattern that
// matches every name pairs n resources with n: 1,000 make a million pairs, a
// million references written into desired state, far past the 4 MB response
// Crossplane reads, after seconds and gigabytes of work that every other
// composite served by the same pod waits for. 100,000 is ten times what the
// largest composition that fits Crossplane's 4 MB can use.
const MaxPairs = 100_000

// Resolve returns, for each dependent, the resources it depends on, sorted
// and without repeats or itself, and the entries that match nothing. Rules
// must have been validated (v1beta1.Input's Validate compiles every entry with
// v1beta1.Pattern): a pattern that doesn't compile matches nothing. It
// refuses rules that together declare more than MaxPairs pairs, naming the
// rule that passes the bound, before it makes any of its pairs.
func Resolve(rules []Rule, names []string) (map[string][]string, []Unmatched, error) {
	sorted := slices.Sorted(slices.Values(names))
	dependsOn := map[string][]string{}
	var unmatched []Unmatched
	match := func(at, pattern string) []string {
		m := matching(pattern, sorted)
		if len(m) == 0 {
			unmatched = append(unmatched, Unmatched{Field: at, Pattern: pattern})
		}
		return m
	}
	pairs := 0
	for i, r := range rules {
		path := field.NewPath("dependencies").Index(i)
		dependents := match(path.Child("resource").String(), r.Resource)
		var targets []string
		for j, p := range r.DependsOn {
			targets = append(targets, match(path.Child("dependsOn").Index(j).String(), p)...)
		}
		pairs += len(dependents) * len(targets)
		if pairs > MaxPairs {
			return nil, nil, fmt.Errorf("%s pairs %d resources with %d dependencies, which makes %d pairs with the rules before it, more than the %d one input may declare: name the resources, or narrow the patterns", path, len(dependents), len(targets), pairs, MaxPairs)
		}
		for _, d := range dependents {
			for _, t := range targets {
				if t != d {
					dependsOn[d] = append(dependsOn[d], t)
				}
			}
		}
	}
	for d, targets := range dependsOn {
		slices.Sort(targets)
		dependsOn[d] = slices.Compact(targets)
	}
	return dependsOn, unmatched, nil
}

// matching returns the names the entry matches: the name itself when it is
// one, else every name it matches as a pattern.
func matching(entry string, names []string) []string {
	if _, found := slices.BinarySearch(names, entry); found {
		return []string{entry}
	}
	re, err := v1beta1.Pattern(entry)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	return out
}

// References are the references the Objects need for their input
// dependencies.
type References struct {
	// Write holds, for each desired Object, the references to add to its
	// spec.references as dependsOn, in the order of its edges, so that
	// provider-kubernetes protects a dependency the input declares with its
	// finalizer.
	Write map[string][]object.Ref
	// New names the Objects among them whose observed state lacks one of
	// their references: those that change.
	New map[string]bool
	// Unnamed holds, for each desired Object, the dependencies it can't
	// reference yet, for they have no name.
	Unnamed map[string][]string
}

// Writes is true for the input's dependencies that are written into the
// dependent's spec.references as a dependsOn: those of a provider-kubernetes
// Object on what the provider can reach by default (object.Reachable).
// provider-kubernetes reads and updates what an Object depends on with its
// own service account: a dependsOn on a Release or another provider's
// managed resource needs access no one granted it, and puts the provider's
// finalizer on another provider's resource. A Usage protects such an edge
// instead, and creation: WaitForReady orders its creation.
func Writes(g *composed.Graph, e composed.Edge) bool {
	t := &g.Resources[e.TargetAt]
	return e.Origin == composed.FromInput && g.Resources[e.DependentAt].IsObject && object.Reachable(t.Identity.Group, t.Identity.Kind)
}

// Referencing returns the references the graph's Objects need: one for each
// input dependency it Writes that neither a reference it has already nor
// another version of the same object protects. None is written on an edge of
// a cycle (onCycle: Warning): provider-kubernetes would wait on both sides
// of it to create, and hold both sides with its finalizers on deletion.
func Referencing(g *composed.Graph) References {
	refs := References{Write: map[string][]object.Ref{}, New: map[string]bool{}, Unnamed: map[string][]string{}}
	for _, e := range g.Edges {
		d, t := &g.Resources[e.DependentAt], &g.Resources[e.TargetAt]
		if !Writes(g, e) || e.Broken || d.Desired == nil {
			continue
		}
		same := func(ref object.Target) bool { return ref.ID() == t.Identity.ID() }
		if slices.ContainsFunc(d.References, same) || slices.ContainsFunc(refs.Write[d.Name], func(r object.Ref) bool { return r.ID() == t.Identity.ID() }) {
			continue
		}
		if t.Identity.Name == "" {
			refs.Unnamed[d.Name] = append(refs.Unnamed[d.Name], t.Name)
			continue
		}
		refs.Write[d.Name] = append(refs.Write[d.Name], t.Ref())
		if d.Observed == nil || !slices.ContainsFunc(d.Observed.References, same) {
			refs.New[d.Name] = true
		}
	}
	return refs
}
