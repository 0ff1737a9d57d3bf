// Package protection decides which reference finalizers each composed resource
// must declare so that no referenced object is deleted before the Objects that
// reference it.
//
// provider-kubernetes adds these finalizers itself, but loses them in a race
// (provider-kubernetes #371). Computing them from the whole composition at once
// and declaring them in desired state makes them level-triggered instead: every
// reconcile of the composite declares the complete set again.
package protection

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
)

// A Resource is one composed resource, as observed and as desired.
type Resource struct {
	// Name is the composition resource name.
	Name string

	// Identity is how a reference finds the resource.
	Identity Identity

	// Observed is nil when the resource doesn't exist yet.
	Observed *Observed

	// Desired is nil when no pipeline step asks for the resource, that is
	// when the composition is removing it.
	Desired *Desired

	// APIVersion is the resource's apiVersion, for the references written to
	// its dependents.
	APIVersion string

	// IsObject is true for a provider-kubernetes Object, whose dependencies
	// declare its reference finalizer.
	IsObject bool

	// References are the objects the resource references, when it is an
	// Object: read from desired state when it is desired, else from observed.
	References []objectref.Target

	// DependsOn are the composed resources the input says it depends on, by
	// composition resource name.
	DependsOn []string
}

// Identity is how provider-kubernetes finds a referenced object: API group
// and kind (any version), namespace and name.
type Identity struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// Observed is what the function needs of an observed resource.
type Observed struct {
	UID        string
	Finalizers []string
	Deleting   bool
	// Ready is true when the resource's Ready condition is True.
	Ready bool
}

// Desired is what the function needs of a desired resource.
type Desired struct {
	// Finalizers are the finalizers earlier pipeline steps declared.
	Finalizers []string
	// Ready is true when an earlier step said the resource is ready.
	Ready bool
}

// Options change how the plan is made.
type Options struct {
	// BreakCycles declares no finalizer on an edge inside a cycle, so that the
	// objects in a cycle don't each wait for the other to be deleted first.
	BreakCycles bool

	// Usages says which edges that no finalizer protects a Usage protects.
	Usages UsagePolicy

	// WaitForReady holds back every resource that doesn't exist yet until
	// its dependencies are ready.
	WaitForReady bool

	// IgnoreReferences makes no edge of the Objects' references; they are
	// still read, so that a dependency the input declares is not written
	// into spec.references a second time.
	IgnoreReferences bool

	// ObservedUsages are the composition resource names of the Usages this
	// function emitted that exist: an edge whose Usage exists is protected.
	ObservedUsages map[string]bool
}

// UsagePolicy says which edges a Usage protects.
type UsagePolicy int

// The usage policies.
const (
	// NoUsages protects no edge with a Usage.
	NoUsages UsagePolicy = iota
	// ExternalUsages protects edges to objects outside the composition.
	ExternalUsages
	// AllUsages protects every edge that no finalizer protects.
	AllUsages
)

// Origin says where an edge comes from.
type Origin uint8

// The origins of edges.
const (
	// FromReference: an Object's spec.references.
	FromReference Origin = iota
	// FromInput: the function's input. An Object gets a reference for it.
	FromInput
)

// Protection says what keeps an edge's dependency from being deleted first.
type Protection uint8

// The protections of edges.
const (
	// ByFinalizer: the dependency declares the dependent's reference
	// finalizer.
	ByFinalizer Protection = iota
	// ByUsage: a Crossplane Usage of the dependency by the dependent.
	ByUsage
	// Unprotected: nothing; the function can't, or wasn't asked to.
	Unprotected
)

// EdgeState says how, and whether, an edge is protected.
type EdgeState uint8

// The states of an edge.
const (
	// Protected: the observed target carries the dependent's finalizer, and
	// it is declared.
	Protected EdgeState = iota
	// Declared: the dependent's finalizer is declared now, but the observed
	// target doesn't carry it yet.
	Declared
	// Pending: the dependent doesn't exist yet, so it has no UID to name
	// its finalizer by, or provider-kubernetes doesn't manage it yet (it
	// lacks the provider's own finalizer), so it would not release it.
	Pending
	// Releasing: the dependent is being deleted or removed from the
	// composition. Its finalizer is declared only while the observed target
	// still carries it: the provider removes it once the dependent is gone,
	// and declaring it again would keep the target forever.
	Releasing
	// TargetRemoved: the composition no longer desires the target while a
	// live dependent still references it, so it may be deleted first.
	TargetRemoved
	// TargetDeleting: the target is being deleted without the dependent's
	// finalizer, which the API server no longer lets anyone add.
	TargetDeleting
	// Cyclic: the edge lies on a cycle and cycles are broken, so its
	// finalizer isn't declared.
	Cyclic
	// Exposed: nothing protects the edge (see Protection).
	Exposed
)

// An Edge is a reference from a dependent Object to another composed resource.
type Edge struct {
	Dependent string
	Target    string
	// Usage is the composition resource name of the Usage that protects the
	// edge, when one does.
	Usage      string
	Origin     Origin
	Protection Protection
	State      EdgeState
}

// An External edge is a reference to an object that no composed resource is.
type External struct {
	Dependent  string
	Target     objectref.Target
	Protection Protection
	// Usage and State are set when a Usage protects the edge.
	Usage string
	State EdgeState
}

// A Reference is a dependsOn the function writes into an Object's desired
// spec.references, for a dependency the input declares.
type Reference struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// A Stale finalizer is a reference finalizer on an observed resource that
// names no Object referencing it in this composition.
type Stale struct {
	Resource  string
	Finalizer string
}

// A Plan is what the function decided, sorted by composition resource name.
type Plan struct {
	Resources int
	Edges     []Edge
	External  []External
	Stale     []Stale
	// Cycles are paths such as [a b a], as graph.Cycles describes them.
	Cycles [][]string

	// Additions holds, for each desired resource that lacks some, the
	// reference finalizers to declare after those earlier steps declared,
	// sorted.
	Additions map[string][]string

	// Declared counts the reference finalizers the desired resources declare
	// for their dependents, whether earlier steps declared them already or
	// not: finalizers, not edges, since two Objects that claim one UID share
	// one.
	Declared int

	// References holds, for each desired Object, the references to write
	// into its spec.references for the dependencies the input declares.
	References map[string][]Reference

	// HeldBack holds the desired resources that must not be created yet,
	// with the reason.
	HeldBack map[string]string
}

// Make decides, for every reference between composed resources, which
// finalizer the referenced resource must declare. Resources are named
// uniquely; they are read in name order, so that the plan is the same
// whatever order they come in (input already in name order is not copied).
//
// It numbers the resources in name order and works with those numbers,
// hashing no string but object names: a composition may have thousands of
// resources, and the plan runs on every reconcile.
func Make(resources []Resource, o Options) Plan {
	pl := newPlanner(resources, o)
	p := &pl.plan
	for d := range pl.rs {
		pl.addEdges(d)
	}
	if len(p.Edges) == 0 {
		p.Edges = nil // As without the allocation.
	}

	// Each dependent's edges follow the one before's, sorted by target: the
	// graph's compressed form.
	pl.targets = sized(pl.targets, len(pl.ends))
	for i, e := range pl.ends {
		pl.targets[i] = e.target
	}
	cycles := graph.New(pl.edgesOf, pl.targets).Cycles()
	for _, path := range cycles.Paths {
		names := make([]string, len(path))
		for i, r := range path {
			names[i] = pl.rs[r].Name
		}
		p.Cycles = append(p.Cycles, names)
	}

	pl.sortByUID()
	onTarget := pl.carried()
	pl.declared = sized(pl.declared, len(p.Edges))
	declared := pl.declared
	for i := range p.Edges {
		e, ends := &p.Edges[i], pl.ends[i]
		d, t := &pl.rs[ends.dependent], &pl.rs[ends.target]
		breakCycle := o.BreakCycles && cycles.Contains(int(ends.dependent), int(ends.target))
		switch e.Protection {
		case ByFinalizer:
			e.State, declared[i] = decide(d, t, onTarget[i], breakCycle)
		case ByUsage:
			e.State = usageState(d, t, pl.o.ObservedUsages[e.Usage], breakCycle)
		case Unprotected:
			e.State = Exposed
			if breakCycle {
				e.State = Cyclic
			}
		}
	}
	for i := range p.External {
		e := &p.External[i]
		if e.Protection == ByUsage {
			e.State = usageState(pl.find(e.Dependent), nil, pl.o.ObservedUsages[e.Usage], false)
		}
	}
	if o.WaitForReady {
		pl.holdUntilReady()
	}
	pl.declare(declared)
	pl.release()
	return pl.plan
}

// Unprotect marks the edges the Usage of this composition resource name
// would protect as unprotected: no Usage can express them.
func (p *Plan) Unprotect(usage string) {
	for i := range p.Edges {
		if p.Edges[i].Usage == usage {
			p.Edges[i].Protection, p.Edges[i].State = Unprotected, Exposed
		}
	}
	for i := range p.External {
		if p.External[i].Usage == usage {
			p.External[i].Protection, p.External[i].State = Unprotected, Exposed
		}
	}
}

// A planner makes one plan. Resources are numbered by their place in rs, in
// name order.
type planner struct {
	rs   []Resource
	o    Options
	plan Plan
	*scratch
}

// scratch is a planner's working memory, which no plan keeps. Plans are made
// on every reconcile of every composite, and making these arrays and maps
// afresh each time cost more in garbage collection than the planning itself,
// so planners take them from a pool and return them.
type scratch struct {
	// ends holds each edge's dependent and target, by number, in the order
	// of plan.Edges.
	ends []edgeEnds
	// edgesOf[d] is the first of dependent d's edges; edgesOf[d+1] follows
	// its last.
	edgesOf []int32

	// named holds, for each object name, the first resource in rs with it;
	// sameName[r] is the next resource after r with the same object name,
	// or -1.
	named    map[string]int32
	sameName []int32

	// seenBy[t] is the dependent whose edges include one to t, so that a
	// dependent gets one edge to each target.
	seenBy []int32

	// finalizers holds the reference finalizers of the dependents, made
	// once each.
	finalizers []string

	// byUID holds the dependents that exist and have edges, in UID order;
	// withPrefix finds the first of them with a UID prefix. sorting is where
	// the sort moves them.
	byUID      []uidEntry
	withPrefix map[uint64]int32
	sorting    []uidEntry

	// For one step each: the targets of the edges, in the order of ends;
	// whether the observed target carries the edge's finalizer; whether the
	// target declares it; and in declare, the targets' dependents.
	targets            []int32
	onTarget, declared []bool
	start, next        []int32
	dependents         []int32
}

var scratches = sync.Pool{New: func() any {
	return &scratch{named: map[string]int32{}, withPrefix: map[uint64]int32{}}
}}

// release returns the planner's scratch to the pool, holding no string of
// the request, which it would otherwise keep from the garbage collector.
func (pl *planner) release() {
	clear(pl.named)
	clear(pl.withPrefix)
	clear(pl.finalizers)
	clear(pl.byUID)
	clear(pl.sorting)
	scratches.Put(pl.scratch)
	pl.scratch = nil
}

// sized returns s with length n and every element zero, in s's array when
// it has room.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// edgeEnds are an edge's ends by number, and whether a finalizer protects
// it: what the plan looks up edges by, kept apart from the larger Edges.
type edgeEnds struct {
	dependent, target int32
	byFinalizer       bool
}

// A uidEntry is a dependent in UID order.
type uidEntry struct {
	// prefix is the UID's first eight bytes as a number: UIDs are random,
	// so comparing it nearly always decides without reading the UID.
	prefix uint64
	uid    string
	number int32
	// first is the place in byUID of the first dependent with this UID:
	// two Objects may claim one.
	first int32
}

func newPlanner(resources []Resource, o Options) *planner {
	rs := resources
	byName := func(a, b Resource) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(rs, byName) {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, byName)
	}
	n := len(rs)
	pl := &planner{
		rs:      rs,
		o:       o,
		plan:    Plan{Resources: n, Additions: map[string][]string{}, References: map[string][]Reference{}, HeldBack: map[string]string{}},
		scratch: scratches.Get().(*scratch),
	}
	pl.edgesOf = sized(pl.edgesOf, n+1)
	pl.sameName = sized(pl.sameName, n)
	pl.seenBy = sized(pl.seenBy, n)
	pl.finalizers = sized(pl.finalizers, n)
	// Most references and dependencies are an edge each: allocate for them
	// at once rather than grow the slices edge by edge.
	edges := 0
	for i := range rs {
		edges += len(rs[i].References) + len(rs[i].DependsOn)
	}
	if edges > 0 {
		pl.plan.Edges = make([]Edge, 0, edges)
	}
	pl.ends = slices.Grow(pl.ends[:0], edges)
	// Backwards, so that each name's chain runs in name order.
	for r := n - 1; r >= 0; r-- {
		pl.seenBy[r] = -1
		pl.sameName[r] = -1
		name := rs[r].Identity.Name
		if name == "" {
			continue
		}
		if next, ok := pl.named[name]; ok {
			pl.sameName[r] = next
		}
		pl.named[name] = int32(r)
	}
	return pl
}

// find returns the resource of the composition resource name, or nil.
func (pl *planner) find(name string) *Resource {
	if i, ok := pl.number(name); ok {
		return &pl.rs[i]
	}
	return nil
}

func (pl *planner) number(name string) (int32, bool) {
	i, ok := slices.BinarySearchFunc(pl.rs, name, func(r Resource, name string) int { return strings.Compare(r.Name, name) })
	return int32(i), ok
}

// addEdges adds an edge for every composed resource the dependent references
// or depends on, and an external edge for every reference that matches none.
func (pl *planner) addEdges(dependent int) {
	p, d := &pl.plan, &pl.rs[dependent]
	first, firstExternal := len(p.Edges), len(p.External)
	add := func(t int32, e Edge) bool {
		if pl.seenBy[t] == int32(dependent) {
			return false
		}
		pl.seenBy[t] = int32(dependent)
		e.Dependent, e.Target = d.Name, pl.rs[t].Name
		p.Edges = append(p.Edges, e)
		pl.ends = append(pl.ends, edgeEnds{dependent: int32(dependent), target: t, byFinalizer: e.Protection == ByFinalizer})
		return true
	}
	references := d.References
	if pl.o.IgnoreReferences {
		references = nil
	}
	for _, ref := range references {
		matched := false
		for t, ok := pl.named[ref.Name]; ok && t >= 0; t = pl.sameName[t] {
			// The name matched already.
			if id := &pl.rs[t].Identity; id.Group == ref.Group && id.Kind == ref.Kind && id.Namespace == ref.Namespace {
				matched = true
				add(t, Edge{Origin: FromReference, Protection: ByFinalizer})
			}
		}
		if matched {
			continue
		}
		if id := identityOf(ref); !slices.ContainsFunc(p.External[firstExternal:], func(e External) bool { return identityOf(e.Target) == id }) {
			e := External{Dependent: d.Name, Target: ref, Protection: Unprotected, State: Exposed}
			if pl.o.Usages != NoUsages {
				e.Protection, e.Usage = ByUsage, usage.ExternalKey(d.Name, ref.Group, ref.Kind, ref.Namespace, ref.Name)
			}
			p.External = append(p.External, e)
		}
	}
	for _, name := range d.DependsOn {
		t, ok := pl.number(name)
		if !ok || int(t) == dependent {
			continue // Unknown, or itself.
		}
		e := Edge{Origin: FromInput, Protection: Unprotected}
		switch {
		case d.IsObject:
			e.Protection = ByFinalizer
		case pl.o.Usages == AllUsages:
			e.Protection, e.Usage = ByUsage, usage.Key(d.Name, name)
		}
		if add(t, e) && d.IsObject {
			pl.writeReference(d, &pl.rs[t])
		}
	}
	// The dependent lists its references in any order; sort its edges by
	// target, that is by number, for a stable plan. Dependents come in name
	// order.
	sortByTarget(p.Edges[first:], pl.ends[first:])
	pl.edgesOf[dependent+1] = int32(len(p.Edges))
}

// sortByTarget sorts a dependent's edges, and their ends alike, by target
// number: by insertion, as a dependent usually has few.
func sortByTarget(edges []Edge, ends []edgeEnds) {
	if len(ends) > 16 {
		order := make([]int, len(ends))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ends[a].target, ends[b].target) })
		sortedEdges, sortedEnds := make([]Edge, len(order)), make([]edgeEnds, len(order))
		for i, j := range order {
			sortedEdges[i], sortedEnds[i] = edges[j], ends[j]
		}
		copy(edges, sortedEdges)
		copy(ends, sortedEnds)
		return
	}
	for i := 1; i < len(ends); i++ {
		for j := i; j > 0 && ends[j].target < ends[j-1].target; j-- {
			ends[j], ends[j-1] = ends[j-1], ends[j]
			edges[j], edges[j-1] = edges[j-1], edges[j]
		}
	}
}

func identityOf(t objectref.Target) Identity {
	return Identity{Group: t.Group, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name}
}

// writeReference plans the reference an Object needs for a dependency the
// input declares. While the dependency has no name yet, an Object that
// doesn't exist yet is held back: created without the reference, it would
// not wait for its dependency.
func (pl *planner) writeReference(d, t *Resource) {
	p := &pl.plan
	if d.Desired == nil {
		return
	}
	// An equal reference is there already (with IgnoreReferences it makes no
	// edge), or another version of the same object is written.
	if slices.ContainsFunc(d.References, func(ref objectref.Target) bool { return identityOf(ref) == t.Identity }) ||
		slices.ContainsFunc(p.References[d.Name], func(r Reference) bool {
			gv, _ := schema.ParseGroupVersion(r.APIVersion)
			return Identity{Group: gv.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name} == t.Identity
		}) {
		return
	}
	if t.Identity.Name == "" {
		if d.Observed == nil {
			p.HeldBack[d.Name] = fmt.Sprintf("waits for %s to be named, to reference it", t.Name)
		}
		return
	}
	p.References[d.Name] = append(p.References[d.Name], Reference{
		APIVersion: t.APIVersion, Kind: t.Identity.Kind, Namespace: t.Identity.Namespace, Name: t.Identity.Name,
	})
}

// finalizerOf returns the reference finalizer of a dependent that exists.
func (pl *planner) finalizerOf(dependent int32) string {
	if pl.finalizers[dependent] == "" {
		pl.finalizers[dependent] = objectref.Finalizer(pl.rs[dependent].uid())
	}
	return pl.finalizers[dependent]
}

// sortByUID puts the dependents that exist and have edges in UID order.
func (pl *planner) sortByUID() {
	pl.byUID = pl.byUID[:0]
	for d := range pl.rs {
		if uid := pl.rs[d].uid(); uid != "" && pl.edgesOf[d+1] > pl.edgesOf[d] {
			pl.byUID = append(pl.byUID, uidEntry{prefix: uidPrefix(uid), uid: uid, number: int32(d)})
		}
	}
	pl.sorting = sized(pl.sorting, len(pl.byUID))
	sortByPrefix(pl.byUID, pl.sorting)
	for i := 0; i < len(pl.byUID); {
		prefix := pl.byUID[i].prefix
		pl.withPrefix[prefix] = int32(i)
		// The UIDs of one prefix, which is rare, are sorted by the rest.
		same := i + 1
		for same < len(pl.byUID) && pl.byUID[same].prefix == prefix {
			same++
		}
		if same-i > 1 {
			slices.SortStableFunc(pl.byUID[i:same], func(a, b uidEntry) int { return strings.Compare(a.uid, b.uid) })
		}
		i = same
	}
	for i, e := range pl.byUID {
		pl.byUID[i].first = int32(i)
		if previous := i - 1; i > 0 && e.prefix == pl.byUID[previous].prefix && e.uid == pl.byUID[previous].uid {
			pl.byUID[i].first = pl.byUID[previous].first
		}
	}
}

// sortByPrefix sorts the entries by prefix, keeping the order of those with
// the same, using buffer, as long: a radix sort, one byte of the prefix at a
// time from the last. BenchmarkSortByPrefix measured it, against sorting by
// comparison, at twice the time for 100 dependents (7 µs), 0.7 times for
// 1,000 and a third for 10,000.
func sortByPrefix(entries, buffer []uidEntry) {
	from, to := entries, buffer
	for shift := 0; shift < 64; shift += 8 {
		var start [256]int
		for _, e := range from {
			start[byte(e.prefix>>shift)]++
		}
		if len(from) == 0 || start[byte(from[0].prefix>>shift)] == len(from) {
			continue // Every prefix has this byte.
		}
		at := 0
		for b, count := range start {
			start[b] = at
			at += count
		}
		for _, e := range from {
			b := byte(e.prefix >> shift)
			to[start[b]] = e
			start[b]++
		}
		from, to = to, from
	}
	copy(entries, from)
}

func uidPrefix(uid string) uint64 {
	var prefix [8]byte
	copy(prefix[:], uid)
	return binary.BigEndian.Uint64(prefix[:])
}

// withUID returns the dependents of the UID, from byUID.
func (pl *planner) withUID(uid string) []uidEntry {
	prefix := uidPrefix(uid)
	first, ok := pl.withPrefix[prefix]
	if !ok {
		return nil
	}
	// The entries of the UID, among those of the prefix.
	for low := int(first); low < len(pl.byUID) && pl.byUID[low].prefix == prefix; low++ {
		if pl.byUID[low].uid != uid {
			continue
		}
		high := low + 1
		for high < len(pl.byUID) && pl.byUID[high].first == int32(low) {
			high++
		}
		return pl.byUID[low:high]
	}
	return nil
}

// carried finds the reference finalizers the observed resources carry. It
// returns, for each edge, whether its target carries its dependent's
// finalizer, and plans as stale each carried finalizer of no dependent
// whose finalizer protects an edge to the resource.
//
// It finds each carried reference finalizer's dependents by the UID's
// prefix, a number, hashing no string: a shared resource may carry thousands.
func (pl *planner) carried() []bool {
	p := &pl.plan
	pl.onTarget = sized(pl.onTarget, len(p.Edges))
	onTarget := pl.onTarget
	for t := range pl.rs {
		o := pl.rs[t].Observed
		if o == nil {
			continue
		}
		first := len(p.Stale)
		for _, f := range o.Finalizers {
			uid, ok := objectref.UIDOf(f)
			if !ok {
				continue
			}
			referenced := false
			for _, d := range pl.withUID(uid) {
				if i, ok := pl.edge(d.number, int32(t)); ok && pl.ends[i].byFinalizer {
					onTarget[i], referenced = true, true
					pl.finalizers[d.number] = f // Carried already: no need to make it.
				}
			}
			if !referenced {
				p.Stale = append(p.Stale, Stale{Resource: pl.rs[t].Name, Finalizer: f})
			}
		}
		slices.SortFunc(p.Stale[first:], func(a, b Stale) int { return strings.Compare(a.Finalizer, b.Finalizer) })
	}
	return onTarget
}

// edge returns the number of the edge from dependent to target, if there is
// one: the dependent's edges are sorted by target.
func (pl *planner) edge(dependent, target int32) (int, bool) {
	first, last := pl.edgesOf[dependent], pl.edgesOf[dependent+1]
	if last-first <= 8 {
		// Most dependents have a few edges: a scan is faster.
		for i := first; i < last; i++ {
			if pl.ends[i].target == target {
				return int(i), true
			}
		}
		return 0, false
	}
	i, ok := slices.BinarySearchFunc(pl.ends[first:last], target, func(e edgeEnds, t int32) int { return int(e.target - t) })
	return int(first) + i, ok
}

// holdUntilReady holds back every desired resource that doesn't exist yet
// while one of its dependencies isn't ready. All of them are decided in the
// same pass, so every resource whose dependencies are ready is created at once.
func (pl *planner) holdUntilReady() {
	p := &pl.plan
	waiting := map[string][]string{}
	for i, e := range p.Edges {
		d, t := &pl.rs[pl.ends[i].dependent], &pl.rs[pl.ends[i].target]
		if d.Observed != nil || d.Desired == nil || e.State == Cyclic || t.ready() {
			continue
		}
		waiting[d.Name] = append(waiting[d.Name], t.Name)
	}
	for name, targets := range waiting {
		if _, held := p.HeldBack[name]; !held {
			p.HeldBack[name] = "waits for " + strings.Join(targets, ", ") + " to be ready"
		}
	}
}

// declare counts the finalizers each target declares for its dependents,
// and plans those that earlier steps didn't declare: sorted, each once, since
// two Objects with one UID would otherwise declare it twice, which
// server-side apply rejects in a set.
//
// Every reference finalizer is the same prefix followed by a UID, so taking
// the dependents in UID order gives each target's finalizers sorted, and
// those of one UID next to each other.
func (pl *planner) declare(declared []bool) {
	p := &pl.plan
	// The targets' dependents, as places in byUID, target after target in
	// one array.
	pl.start = sized(pl.start, len(pl.rs)+1)
	start := pl.start
	for i, e := range pl.ends {
		if declared[i] {
			start[e.target+1]++
		}
	}
	for t := range pl.rs {
		start[t+1] += start[t]
	}
	if start[len(pl.rs)] == 0 {
		return
	}
	pl.dependents = sized(pl.dependents, int(start[len(pl.rs)]))
	pl.next = append(pl.next[:0], start...)
	dependents, next := pl.dependents, pl.next
	targets := 0
	for u, dep := range pl.byUID {
		d := dep.number
		for i := pl.edgesOf[d]; i < pl.edgesOf[d+1]; i++ {
			if declared[i] {
				t := pl.ends[i].target
				if next[t] == start[t] {
					targets++
				}
				dependents[next[t]] = int32(u)
				next[t]++
			}
		}
	}
	p.Additions = make(map[string][]string, targets)
	// The targets' missing finalizers share one array.
	finalizers := make([]string, 0, len(dependents))
	for t := range pl.rs {
		wanted := dependents[start[t]:start[t+1]]
		if len(wanted) == 0 {
			continue
		}
		// The finalizers earlier steps declared are left out.
		has := contains(pl.rs[t].Desired.Finalizers)
		first := len(finalizers)
		for i, u := range wanted {
			if i > 0 && pl.byUID[u].first == pl.byUID[wanted[i-1]].first {
				continue // The same UID, so the same finalizer.
			}
			p.Declared++
			if f := pl.finalizerOf(pl.byUID[u].number); !has(f) {
				finalizers = append(finalizers, f)
			}
		}
		if len(finalizers) > first {
			p.Additions[pl.rs[t].Name] = finalizers[first:len(finalizers):len(finalizers)]
		}
	}
}

// contains returns a test for membership in the list: a scan for the few
// finalizers a resource usually has, a set for many.
func contains(list []string) func(string) bool {
	if len(list) <= 16 {
		return func(s string) bool { return slices.Contains(list, s) }
	}
	set := make(map[string]bool, len(list))
	for _, s := range list {
		set[s] = true
	}
	return func(s string) bool { return set[s] }
}

// ready is true when the resource exists and it, or an earlier step, says
// it's ready.
func (r *Resource) ready() bool {
	return r.Observed != nil && (r.Observed.Ready || (r.Desired != nil && r.Desired.Ready))
}

// managed is true when provider-kubernetes manages the Object: it carries
// the provider's own finalizer, which the provider adds only once every
// reference resolves. Only an Object that carries it releases its reference
// finalizers when it is deleted; a finalizer declared for one that doesn't
// would keep its target for ever.
func (r *Resource) managed() bool {
	return r.Observed != nil && r.Observed.UID != "" && slices.Contains(r.Observed.Finalizers, objectref.ObjectFinalizer)
}

// uid is the resource's UID, "" while it doesn't exist.
func (r *Resource) uid() string {
	if r.Observed == nil {
		return ""
	}
	return r.Observed.UID
}

// usageState is the state of an edge a Usage protects: protected once the
// Usage is observed, declared once both ends exist (t is nil for an external
// dependency, which the function can't see), else pending; and unprotected
// once the target is being deleted.
func usageState(d, t *Resource, observed, breakCycle bool) EdgeState {
	switch {
	case breakCycle:
		return Cyclic
	case d.Observed == nil || (t != nil && t.Observed == nil):
		return Pending
	case t != nil && t.Observed.Deleting:
		// A Usage can't undo a deletion the API server accepted, observed
		// or not: the target goes first, as with a finalizer it can't be
		// given.
		return TargetDeleting
	case observed:
		return Protected
	default:
		return Declared
	}
}

// decide returns the state of the edge from d to t, and whether t declares
// d's finalizer. onTarget is true when the observed t carries it.
func decide(d, t *Resource, onTarget, breakCycle bool) (EdgeState, bool) {
	switch {
	case breakCycle:
		return Cyclic, false
	case !d.managed():
		return Pending, false
	case d.Desired == nil || d.Observed.Deleting:
		return Releasing, t.Desired != nil && onTarget
	case t.Desired == nil:
		return TargetRemoved, false
	case onTarget:
		return Protected, true
	case t.Observed != nil && t.Observed.Deleting:
		return TargetDeleting, false
	default:
		return Declared, true
	}
}
