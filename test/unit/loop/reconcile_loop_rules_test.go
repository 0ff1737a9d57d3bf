package loop

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// The reconcile-loop tier's own properties (reconcile_loop_test.go): those
// no single call can show, so test/lib/oracle, which works out one call, doesn't
// state them. What the function must answer at each call, the oracle says;
// what is here follows the calls through the model of crossplane_model_test.go:
// nothing flaps, each Usage keeps its names and shares them with no other
// edge, every protectable edge is protected at the fixed point, and on
// teardown every protected edge's dependency goes after its dependent and
// nothing is left stuck. The convergence bound is live's.

func loopText(m map[string]any, path ...string) string {
	var v any = m
	for _, k := range path {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}

func loopStrings(v any) []string {
	var out []string
	for _, s := range asList(v) {
		if t, ok := s.(string); ok {
			out = append(out, t)
		}
	}
	return out
}

// loopKey is how the model's API server finds the object the oracle names.
func loopKey(id oracle.Identity) xpKey { return xpKey{id.Group, id.Kind, id.Namespace, id.Name} }

// loopExternalEdge names an edge to an object outside the composition as the
// function's messages do.
func loopExternalEdge(e oracle.External) string { return e.Dependent + " → " + e.Target.Describe() }

// loopStates lists every edge of the plan with its state, for failures.
func loopStates(p *oracle.Plan) string {
	var parts []string
	for _, e := range p.Edges {
		parts = append(parts, e.String()+" "+e.State.String())
	}
	for _, e := range p.External {
		parts = append(parts, loopExternalEdge(e)+" "+e.State.String())
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// flaps follows what the function declares: a finalizer on a resource, a
// reference of an Object, a Usage. None may come, go and come back. Each is
// followed on one object (by its UID, or before it exists), so that a
// resource deleted and created anew starts afresh.
func (r *loopRun) flaps(res xpResult, p *oracle.Plan) {
	present := map[string]bool{}
	uid := func(name string) string {
		if n := p.Nodes[name]; n != nil && n.UID != "" {
			return n.UID
		}
		if o := res.req.GetObserved().GetResources()[name]; o != nil {
			return loopText(o.GetResource().AsMap(), "metadata", "uid")
		}
		return "new"
	}
	refs := func(s *structpb.Struct) []any {
		spec, _ := s.AsMap()["spec"].(map[string]any)
		return asList(spec["references"])
	}
	for name, d := range res.rsp.GetDesired().GetResources() {
		e := res.req.GetDesired().GetResources()[name]
		if e == nil {
			present["Usage "+name+" of "+r.usageEnds(d.GetResource())] = true
			continue
		}
		id := uid(name)
		if id == "new" {
			continue // Creation is not flapping: what it is created with is followed once it exists.
		}
		before := loopStrings(loopMeta(e.GetResource())["finalizers"])
		for _, f := range loopStrings(loopMeta(d.GetResource())["finalizers"]) {
			if !slices.Contains(before, f) {
				present["finalizer "+f+" on "+name+" "+id] = true
			}
		}
		earlier := refs(e.GetResource())
		if after := refs(d.GetResource()); len(after) > len(earlier) {
			for _, ref := range after[len(earlier):] {
				present["reference "+loopJSON(map[string]any{"r": ref})+" of "+name+" "+id] = true
			}
		}
	}
	for k := range present {
		if r.presence[k] == 2 {
			r.violate(loopNoFlaps, k+" is declared again after it was dropped")
		}
		r.presence[k] = 1
	}
	for k, v := range r.presence {
		if v == 1 && !present[k] {
			r.presence[k] = 2
		}
	}
}

// usageEnds names the objects a Usage joins by their UIDs, so that a Usage
// of an object deleted and created anew is another.
func (r *loopRun) usageEnds(s *structpb.Struct) string {
	body := s.AsMap()
	of, by, _, _ := xpUsageRefs(body, loopText(body, "metadata", "namespace"))
	uid := func(k xpKey) string {
		if o := r.m.objects[k]; o != nil {
			return o.uid
		}
		return k.String()
	}
	return uid(of) + " by " + uid(by)
}

// usageNames checks that an edge's Usage keeps its composition resource name
// and metadata.name on every reconcile, and that no two edges share one: the
// names are the function's to choose, and the oracle doesn't say them. Two
// edges whose Usages join the same objects (body's) are one: an edge's
// dependency may leave the composition and become an object outside it,
// and its Usage stays the one it was.
func (r *loopRun) usageNames(edge string, body map[string]any, name, metaName string) {
	of, by, _, _ := xpUsageRefs(body, loopText(body, "metadata", "namespace"))
	ends := of.String() + " by " + by.String()
	names := name + " " + metaName
	if before, ok := r.usageName[edge]; ok && before != names {
		r.violate(loopUsageNames, fmt.Sprintf("edge %s's Usage was %s and is now %s", edge, before, names))
	}
	r.usageName[edge] = names
	for _, n := range []string{"name " + name, "metadata.name " + metaName} {
		if other, ok := r.usageOfName[n]; ok && other[0] != edge && other[1] != ends {
			r.violate(loopUsageNames, fmt.Sprintf("edges %s and %s share the Usage %s", other[0], edge, n))
		}
		r.usageOfName[n] = [2]string{edge, ends}
	}
}

// checkFixedPoint checks that at the fixed point every edge the rules can
// protect is protected, by a finalizer or by exactly one live Usage. An edge
// may stay pending only while one of its ends is held back, or when its
// dependent is an Object provider-kubernetes never manages: one whose
// references never all resolve (it references an object that doesn't exist)
// never gets the provider's own finalizer, and its reference finalizers are
// declared only once it has it.
func (r *loopRun) checkFixedPoint(p *oracle.Plan) {
	if p.Condition.Status {
		r.fixedTrue = true
	}
	if !p.Writes() {
		return
	}
	if r.m.usageBlocked {
		// A Usage refuses the deletion of a resource the composition
		// removed while its user remains: Crossplane's reconcile fails
		// before applying anything, so nothing the function declares
		// after it is applied. That is Usages working, not this function.
		r.blocked = true
		return
	}
	for _, e := range p.Edges {
		d, t := p.Nodes[e.Dependent], p.Nodes[e.Target]
		switch e.State {
		case oracle.Declared:
			r.violate(loopProtectedOnce, fmt.Sprintf("edge %s is declared but not protected at the fixed point", e))
		case oracle.Pending:
			_, dHeld := p.HeldBack[d.Name]
			_, tHeld := p.HeldBack[t.Name]
			switch {
			case dHeld || tHeld:
			case e.Protection == oracle.ByFinalizer && r.neverManaged(d):
				r.reach("an edge pending for good: its Object's references never resolve")
			default:
				r.violate(loopProtectedOnce, fmt.Sprintf("edge %s is still pending at the fixed point, though nothing holds its ends back", e))
			}
		case oracle.Protected:
			if e.Protection != oracle.ByUsage {
				continue
			}
			// An edge a Usage the composition composes protects gets none
			// of the function's. A composed one whose selector selects
			// several may protect another edge the function can't tell.
			own, composed := r.m.liveUsages(loopKey(t.Identity), loopKey(d.Identity))
			if _, ok := p.Composed[[2]string{d.Name, t.Name}]; ok {
				if own != 0 || composed == 0 {
					r.violate(loopProtectedOnce, fmt.Sprintf("edge %s, which a Usage of the composition's protects, has %d live Usages of the function's and %d of the composition's at the fixed point", e, own, composed))
				}
			} else if own != 1 {
				r.violate(loopProtectedOnce, fmt.Sprintf("edge %s has %d live Usages of the function's at the fixed point", e, own))
			}
		}
	}
	for _, e := range p.External {
		d := p.Nodes[e.Dependent]
		switch e.State {
		case oracle.Declared:
			r.violate(loopProtectedOnce, fmt.Sprintf("edge %s is declared but not protected at the fixed point", loopExternalEdge(e)))
		case oracle.Protected:
			if own, _ := r.m.liveUsages(loopKey(e.Target.Identity), loopKey(d.Identity)); own != 1 {
				r.violate(loopProtectedOnce, fmt.Sprintf("edge %s has %d live Usages at the fixed point", loopExternalEdge(e), own))
			}
		}
	}
}

// neverManaged tells whether the Object exists and provider-kubernetes
// never reconciled it, and never will while the world stays as it is: it
// is being deleted, or something it references doesn't exist.
func (r *loopRun) neverManaged(d *oracle.Node) bool {
	o := r.m.byUID[d.UID]
	if d.UID == "" || o == nil || o.resolved || d.Carries(oracle.ObjectFinalizer) {
		return false
	}
	return o.deleting || slices.ContainsFunc(xpReferences(o), func(k xpKey) bool { return r.m.objects[k] == nil })
}

// liveUsages counts the Usages of one object by another that aren't being
// deleted: the function's, and the composition's own.
func (m *xpModel) liveUsages(of, by xpKey) (own, composed int) {
	for _, o := range m.objects {
		if xpIsUsage(o.key.group, o.key.kind) && !o.deleting {
			if uo, ub, _, _ := usageRefs(o); uo == of && ub == by {
				if o.byFunction {
					own++
				} else {
					composed++
				}
			}
		}
	}
	return own, composed
}

// teardown deletes the composite and checks that every protected edge's
// dependency went after its dependent, and that nothing was left behind but
// what provider-kubernetes' own finalizers deadlock, or a Usage the
// composition composes against its own references.
func (r *loopRun) teardown() {
	m := r.m
	r.n = 0
	if r.c.deleteExternals {
		for _, e := range r.c.externals {
			if o := m.objects[e.key()]; o != nil && !m.delete(o, "a user") && e.kind == "XCluster" {
				r.reach(loopClusterWaits)
			}
		}
	}
	r.teardownSteps = m.teardown(r.reconciles)
	r.tornDown = true
	r.trace = append(r.trace, "teardown: "+m.takeNotes())
	// Every edge the function protected at some reconcile, while the
	// composite lived or at its fixed point, keeps its order: nothing
	// legitimately unprotects an edge while both ends exist (a dependent
	// removed from the composition goes before its finalizer and its Usage
	// do; a dependency removed stays while they hold it), but an input that
	// stops writing Usages, which warns about what it leaves unprotected,
	// and a resource composed under an inferred edge's target's name before
	// the reference's provider resolved it, which leaves nothing to single
	// out the target and which the summary counts.
	for _, o := range slices.SortedFunc(maps.Values(r.protected), func(a, b loopOrdered) int { return strings.Compare(a.edge+a.dependentUID, b.edge+b.dependentUID) }) {
		start, started := m.deletionStart[o.targetUID]
		end, ended := m.deletionEnd[o.dependentUID]
		if started && (!ended || start < end) {
			r.violate(loopTeardownOrder, fmt.Sprintf("edge %s: the dependency's deletion began (tick %d) before the dependent's ended (tick %d, %v)", o.edge, start, end, ended))
		}
	}
	if len(r.protected) > 0 {
		r.reach("a teardown ordering protected edges")
	}
	if slices.ContainsFunc(slices.Collect(maps.Values(r.protected)), func(o loopOrdered) bool { return o.inferred }) {
		r.reach("a teardown ordering inferred edges")
	}

	// What is left: composed resources, and objects someone tried to
	// delete. Each waits for others; a reference finalizer whose Object is
	// gone, or a deadlock the function's own finalizers are part of, is the
	// function's doing. A deadlock of the provider's own finalizers (a cycle
	// of references: each Object waits for the other's finalizer to go) is
	// provider-kubernetes'.
	var left []*xpObject
	for _, o := range m.sorted() {
		if _, tried := m.attempted[o.uid]; tried || slices.Contains(o.ownerUIDs, m.xr.uid) {
			left = append(left, o)
		}
	}
	if len(left) == 0 {
		return
	}
	waits := map[string][]string{} // UID → UIDs it waits for
	ours := map[[2]string]bool{}   // a wait through a finalizer Crossplane applied
	explained := map[string]bool{}
	var problems []string
	for _, o := range left {
		for _, f := range o.finalizers {
			uid, ok := strings.CutPrefix(f, xpRefFinalizerPrefix)
			if !ok {
				continue
			}
			if m.byUID[uid] == nil {
				problems = append(problems, fmt.Sprintf("%s keeps %s of an Object that is gone (owners %v)", m.describe(o), xpShortFinalizer(f), loopOwnerNames(o.owners[f])))
				explained[o.uid] = true
				continue
			}
			waits[o.uid] = append(waits[o.uid], uid)
			if o.owners[f]&xpByCrossplane != 0 {
				ours[[2]string{o.uid, uid}] = true
			}
		}
		if xpIsUsage(o.key.group, o.key.kind) {
			if _, by, hasBy, _ := usageRefs(o); hasBy && m.objects[by] != nil {
				waits[o.uid] = append(waits[o.uid], m.objects[by].uid)
			}
		}
		if !o.deleting {
			for _, u := range m.usagesOf(o) {
				waits[o.uid] = append(waits[o.uid], u.uid)
			}
		}
	}
	// composedUsage tells whether the object is a Usage the composition
	// composes itself, not one of the function's.
	composedUsage := func(uid string) bool {
		o := m.byUID[uid]
		return o != nil && xpIsUsage(o.key.group, o.key.kind) && !o.byFunction
	}
	// reachesAvoiding tells whether from waits, through others, for to,
	// through none that avoid says.
	reachesAvoiding := func(from, to string, avoid func(uid string) bool) bool {
		seen := map[string]bool{}
		stack := slices.Clone(waits[from])
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v == to {
				return true
			}
			if !seen[v] && !avoid(v) {
				seen[v] = true
				stack = append(stack, waits[v]...)
			}
		}
		return false
	}
	reaches := func(from, to string) bool { return reachesAvoiding(from, to, func(string) bool { return false }) }
	// What explains an object being left: a finalizer of an Object that is
	// gone, or a cycle of waits.
	for _, o := range left {
		if reaches(o.uid, o.uid) {
			explained[o.uid] = true
		}
	}
	composedDeadlock := false
	for _, o := range left {
		for _, w := range waits[o.uid] {
			// With references: Infer the function sees every reference, so
			// a deadlock through a finalizer it declared is its own. With
			// Ignore it was told not to look: the references make the cycle.
			if !ours[[2]string{o.uid, w}] || !reaches(w, o.uid) || r.in.References != "Infer" {
				continue
			}
			// One that only a Usage the composition composes itself closes
			// is the composition's: its Usage orders a pair against its
			// references (its selector selected several, and Crossplane
			// picked one its references delete first), and the finalizers
			// of those references, which provider-kubernetes adds too
			// whenever #371's race spares them, hold the cycle with it.
			// Nothing the function may do undoes a Usage it didn't write.
			if !reachesAvoiding(w, o.uid, composedUsage) {
				composedDeadlock = true
				continue
			}
			problems = append(problems, fmt.Sprintf("%s and %s deadlock through a finalizer the function declared", m.describe(o), m.describe(m.byUID[w])))
		}
	}
	for _, o := range left {
		leads := explained[o.uid]
		for id := range explained {
			leads = leads || reaches(o.uid, id)
		}
		if !leads {
			problems = append(problems, fmt.Sprintf("%s is left (deleting %v, finalizers %v) with nothing to wait for", m.describe(o), o.deleting, o.finalizers))
		}
	}
	if len(problems) > 0 {
		r.violate(loopTeardownClean, strings.Join(problems, "; "))
		return
	}
	if composedDeadlock {
		r.reach("a teardown a Usage the composition composes deadlocks against its references")
		return
	}
	r.providerDeadlock = true
	r.reach("a teardown provider-kubernetes' own reference finalizers deadlock")
}

func loopOwnerNames(o xpOwners) []string {
	var out []string
	for _, n := range []struct {
		bit  xpOwners
		name string
	}{{xpByCrossplane, "crossplane"}, {xpByProvider, "provider"}, {xpByUsages, "usages"}} {
		if o&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return out
}
