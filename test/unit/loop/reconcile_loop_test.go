package loop

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// The reconcile-loop tier runs the function as Crossplane does: on every
// reconcile of a composite, with what Crossplane applied last time as observed
// state, in the model of Crossplane, the API server and provider-kubernetes of
// crossplane_model_test.go. Each random composition lives until its desired
// state stops changing, then its composite is deleted and the teardown runs to
// its end. The properties are those of issue 13, checked at every reconcile, at
// the fixed point and after the teardown. What the function must answer to
// each call (finalizers, references, labels, Usages, what is held back, the
// condition, the results, stale finalizers, what it asks Crossplane for) is
// what test/lib/oracle works out from the rules of docs/rules.md for that call's request,
// the one oracle every tier uses; what only a sequence of calls shows (no
// flapping, stable and distinct Usage names, convergence, the fixed point,
// the teardown) is reconcile_loop_rules_test.go's. Neither uses the function's
// own packages.
//
//	go test -run TestReconcileLoop -fd.loop.n=10000 -fd.loop.seed=7 ./test/loop
//
// A failure names its composition; -fd.loop.first=i -fd.loop.n=1 runs it
// alone, and -fd.loop.trace prints its reconciles. -fd.loop.without=known
// leaves out the features of the bugs issue 13 lists, -fd.loop.without=found
// those of the bugs this tier found besides.
var (
	loopN       = flag.Int("fd.loop.n", 1000, "how many random compositions TestReconcileLoop runs")
	loopSeed    = flag.Uint64("fd.loop.seed", 13, "the seed of TestReconcileLoop's compositions; composition i uses the seeds (seed, i)")
	loopFirst   = flag.Int("fd.loop.first", 0, "the index of TestReconcileLoop's first composition")
	loopWithout = flag.String("fd.loop.without", "", "features TestReconcileLoop's generator leaves out, comma-separated ("+
		strings.Join(loopFeatureNames, ", ")+"); known stands for those of issue 13's bugs ("+strings.Join(loopKnownBugFeatures, ", ")+
		"), found for those of the bugs this tier found besides ("+strings.Join(loopFoundBugFeatures, ", ")+")")
	loopTraceAll = flag.Bool("fd.loop.trace", false, "log the trace of every composition TestReconcileLoop runs")
)

// The generator's optional features, which -fd.loop.without can leave out.
var loopFeatureNames = []string{
	"wide-patterns",        // .* and usage-.* in dependencies, which also match the function's own Usages
	"collisions",           // edges a → b-c and a-b → c
	"ignore-duplicates",    // with references: Ignore, a dependency the Object's spec.references already has
	"duplicates",           // one Object under two composition resource names
	"removed-dependents",   // removing a resource that depends on another
	"removed-dependencies", // removing a resource another depends on
	"changes",              // the composition changing at some reconcile
	"user-deletes",         // someone deleting a composed or external object while the composite lives
	"missing-external",     // a reference to an object that doesn't exist
	"usages",               // protection: Both, drawn where the input's former usages field was
	"protection",           // protection: Usages or Both, and switching it while the composite lives
	"explicit",             // dependencies in the input
	"cycles",               // compositions not kept acyclic
	"inference",            // ProviderConfigs, credentials and managed references, and the input's infer
	"composed-usages",      // Usages the composition composes itself
}

// loopKnownBugFeatures are what issue 13's bugs need: (1) Usages begetting
// Usages, (2) Usage names colliding, (3) duplicate references, (4) two
// Objects of one UID counted twice, (6) a removed dependent's finalizer
// looking stale.
var loopKnownBugFeatures = []string{"wide-patterns", "collisions", "ignore-duplicates", "duplicates", "removed-dependents"}

// loopFoundBugFeatures are what the bugs this tier found besides need: an
// Object whose references never all resolve (an object that doesn't exist,
// or one a user deletes) has no finalizer of its own, so it goes at once and
// the reference finalizer declared for it stays; and a dependency removed
// from the composition loses the dependsOn the function wrote, so the
// provider never removes the dependent's finalizer from it.
var loopFoundBugFeatures = []string{"missing-external", "user-deletes", "removed-dependencies"}

// The properties, by the name a failure reports.
const (
	loopConverges       = "converges within depth + 3 reconciles"
	loopBounded         = "desired resources never exceed the composed ones plus one Usage per edge"
	loopNoFlaps         = "nothing flaps (no finalizer, reference or Usage added, dropped and added again)"
	loopUsageNames      = "each Usage's names are unique per edge and the same on every reconcile"
	loopProtectedOnce   = "at the fixed point every protectable edge is protected exactly once"
	loopCondition       = "DeletionOrdered is what the README's table says"
	loopCreationOrder   = "resources are held back exactly as the rules say: dependency order, a fan-out in one pass"
	loopTeardownOrder   = "every referenced resource is deleted after all its dependents, on teardown and before"
	loopTeardownClean   = "on teardown nothing is left stuck"
	loopPassThrough     = "the function never drops or damages a resource it was not asked to change"
	loopOwnFinalizer    = "the function never declares finalizer.managedresource.crossplane.io"
	loopNoNewOnDeleting = "the function never adds a finalizer to a deleting object"
	loopFinalizers      = "reference finalizers are declared as the rules of docs/rules.md say"
	loopReferences      = "references are written as the README says, each once"
	loopUsages          = "Usages are emitted for exactly the edges the README says"
	loopLabels          = "the function labels exactly the dependent Objects the README says"
	loopSummary         = "the summary counts what the rules count, and is a result only when something changes"
	loopResults         = "the results are those the rules of docs/rules.md give"
	loopStaleRules      = "StaleFinalizer names exactly the finalizers the rules call stale"
	loopStale           = "no StaleFinalizer warning names an Object that still exists and references the resource"
	loopRequirements    = "the function asks Crossplane for exactly what the rules say"
	loopFatal           = "the step fails only for a cycle with onCycle: Fatal"
	loopApplies         = "Crossplane can apply what the function returns"
	loopGraph           = "the graph is in the context exactly when graph: Context asks for it, with the rules' edges"
	loopSilent          = "a composite with nothing wrong gets no result at its fixed point"
	loopNoGap           = "an edge once protected stays protected while the function protects it, whatever protects it next"
	loopNeverWorse      = "turning infer on never adds a Fatal result, never drops a declared edge's finalizer or Usage, and converges as without it"
)

// loopMaxReconciles bounds a composite's life: no composition the generator
// makes needs a third of it.
const loopMaxReconciles = 40

// TestReconcileLoop runs random compositions through reconciles and a
// teardown, and checks every property of issue 13 on each: see the constants
// above. It reports each broken property once, with its first composition and
// that composition's trace, and how many compositions broke it.
func TestReconcileLoop(t *testing.T) {
	f := function(t)
	off := loopOff(*loopWithout)
	start := time.Now()
	var stats loopStats
	first := map[string]*loopRun{}
	counts := map[string]int{}
	for i := *loopFirst; i < *loopFirst+*loopN; i++ {
		c := loopGenerate(i, rand.New(rand.NewPCG(*loopSeed, uint64(i))), off)
		r := loopRunComposition(f, c, *loopSeed)
		if without := c.withoutInfer(); without != nil {
			// Never worse than off: the same composition, every seed the
			// same, with infer removed.
			offRun := loopRunComposition(f, without, *loopSeed)
			r.compareWithInferOff(offRun)
			if *loopTraceAll {
				t.Logf("composition %d with infer off:\n%s", i, offRun.report(""))
			}
		}
		stats.add(r)
		if *loopTraceAll {
			t.Logf("composition %d:\n%s", i, r.report(""))
		}
		for _, p := range r.broken() {
			counts[p]++
			if first[p] == nil || r.c.size() < first[p].c.size() {
				first[p] = r // The smallest reproduces it best.
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(first)) {
		r := first[p]
		without := ""
		if *loopWithout != "" {
			without = " -fd.loop.without=" + *loopWithout
		}
		t.Errorf("%q broken by %d of %d compositions; the smallest, %d (-fd.loop.seed=%d -fd.loop.first=%d -fd.loop.n=1%s):\n%s",
			p, counts[p], *loopN, r.c.index, *loopSeed, r.c.index, without, r.report(p))
	}
	t.Logf("%d compositions in %s: %s", *loopN, time.Since(start).Round(time.Millisecond), stats)
	var inference []string
	for _, name := range slices.Sorted(maps.Keys(stats.reached)) {
		if strings.Contains(name, "infer") {
			inference = append(inference, fmt.Sprintf("%s %d", name, stats.reached[name]))
		}
	}
	t.Logf("inference: %s", strings.Join(inference, ", "))
	if *loopN >= 1000 && len(off) == 0 {
		for _, name := range slices.Sorted(maps.Keys(stats.reached)) {
			if stats.reached[name] == 0 {
				t.Errorf("no composition reached %s: the generator needs to produce it", name)
			}
		}
	}
}

func loopOff(list string) map[string]bool {
	off := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case "known":
			for _, k := range loopKnownBugFeatures {
				off[k] = true
			}
		case "found":
			for _, k := range loopFoundBugFeatures {
				off[k] = true
			}
		default:
			if !slices.Contains(loopFeatureNames, f) {
				panic(fmt.Sprintf("-fd.loop.without: unknown feature %q", f))
			}
			off[f] = true
		}
	}
	return off
}

// Running a composition.

type loopViolation struct {
	property, detail string
	reconcile        int
}

// A loopRun is one composition's life and teardown.
type loopRun struct {
	c          *loopComposition
	in         oracle.Input // with the defaults
	m          *xpModel
	n          int // the current reconcile
	violations []loopViolation
	trace      []string

	// What the properties follow from reconcile to reconcile.
	protected   map[[2]string]loopOrdered // by the UIDs of the ends
	presence    map[string]int            // flap keys: 1 present, 2 dropped since
	usageName   map[string]string
	usageOfName map[string][2]string // the edge and the ends it joins

	// fatal: some reconcile failed the step. final is the plan of the
	// fixed point, once converged.
	fatal bool
	final *oracle.Plan
	// unmanaged are the Objects at the fixed point that provider-kubernetes
	// never manages while the world stays as it is.
	unmanaged map[string]bool
	// offReconciles are those of the run with infer off, when there is one.
	offReconciles int

	// Figures.
	reconciles, took, total, depth int
	converged, fixedTrue, blocked  bool
	// silent: its fixed point had nothing wrong, so no result was allowed.
	silent                     bool
	teardownSteps              int
	tornDown, providerDeadlock bool
	reached                    map[string]int
}

func (r *loopRun) violate(property, detail string) {
	r.violations = append(r.violations, loopViolation{property, detail, r.n})
}

func (r *loopRun) broken() []string {
	var out []string
	for _, v := range r.violations {
		if !slices.Contains(out, v.property) {
			out = append(out, v.property)
		}
	}
	return out
}

func (r *loopRun) reach(what string) { r.reached[what]++ }

// report describes the composition, the violations of the property (all of
// them when property is ""), and the trace.
func (r *loopRun) report(property string) string {
	var b strings.Builder
	c := r.c
	fmt.Fprintf(&b, "  composite %s (namespace %q), input %s\n", c.xrName, c.xrNamespace(), loopJSON(c.input))
	for p, phase := range c.phases {
		at := 1
		if p == 1 {
			at = c.changeAt
		}
		fmt.Fprintf(&b, "  from reconcile %d:\n", at)
		for _, res := range phase {
			fmt.Fprintf(&b, "    %s: %s %s name=%q ns=%q delay=%d%s\n", res.name, res.apiVersion, res.kind.kind, res.objName, res.namespace, c.delay(res.name), loopRefsText(res))
		}
	}
	for _, d := range c.userDeletes {
		what := d.name
		if d.external != nil {
			what = d.external.key().String()
		}
		fmt.Fprintf(&b, "  a user deletes %s after reconcile %d\n", what, d.after)
	}
	if c.deleteExternals {
		fmt.Fprintf(&b, "  a user deletes the external objects when the composite is deleted\n")
	}
	shown := 0
	for _, v := range r.violations {
		if property == "" || v.property == property {
			if shown++; shown <= 5 {
				when := fmt.Sprintf("reconcile %d", v.reconcile)
				if v.reconcile == 0 {
					when = "teardown"
				}
				fmt.Fprintf(&b, "  %s: %s: %s\n", when, v.property, v.detail)
			}
		}
	}
	if shown > 5 {
		fmt.Fprintf(&b, "  ... and %d more\n", shown-5)
	}
	fmt.Fprintf(&b, "  trace:\n")
	trace := r.trace
	if len(trace) > 60 {
		fmt.Fprintf(&b, "    ... %d lines before\n", len(trace)-60)
		trace = trace[len(trace)-60:]
	}
	for _, l := range trace {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	return b.String()
}

func loopRefsText(res *loopResource) string {
	var parts []string
	for _, ref := range res.refs {
		to := ref.target
		if to == "" {
			to = ref.external.key().String()
		}
		if ref.deliberatelyWithoutNamespace {
			to += " (without its namespace)"
		}
		parts = append(parts, ref.via+" "+to)
	}
	if len(res.finalizers) > 0 {
		parts = append(parts, "finalizers "+strings.Join(res.finalizers, ","))
	}
	if res.ready {
		parts = append(parts, "ready")
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, "; ") + "]"
}

func loopJSON(m map[string]any) string {
	if m == nil {
		return "none"
	}
	b, err := structpb.NewStruct(m)
	if err != nil {
		return err.Error()
	}
	j, _ := b.MarshalJSON()
	return string(j)
}

// loopRunComposition runs the composition's life and teardown.
func loopRunComposition(f *Function, c *loopComposition, seed uint64) *loopRun {
	r := &loopRun{c: c, in: oracle.ReadInput(c.input).WithDefaults(), protected: map[[2]string]loopOrdered{}, presence: map[string]int{}, usageName: map[string]string{},
		usageOfName: map[string][2]string{}, reached: map[string]int{}}
	xr := xpComposite{apiVersion: "example.org/v1alpha1", kind: "XApp", name: c.xrName, namespace: c.xrNamespace(), uid: "uid-" + c.xrName}
	r.m = newXPModel(rand.New(rand.NewPCG(seed^0x5bd1e995, uint64(c.index))), xr, c.delay, r.violate)
	r.m.atProvider = func(name string) map[string]any { return c.atProvider[name] }
	if c.slowRemoteDeletion {
		r.m.remoteDeletion = func() int { return 1 }
	}
	for _, e := range c.externals {
		if !e.missing {
			r.m.addExternal(e.apiVersion, e.kind, e.namespace, e.name)
		}
	}
	for _, e := range c.externals {
		if o, owner := r.m.objects[e.key()], e.controller; o != nil && owner != nil && r.m.objects[owner.key()] != nil {
			maps.Copy(o.labels, e.labels)
			o.controllerUID = r.m.objects[owner.key()].uid
			o.ownerUIDs = append(o.ownerUIDs, o.controllerUID)
		}
	}
	r.live(f)
	if r.converged {
		r.teardown()
	}
	return r
}

// A loopOrdered edge was protected by the function at some reconcile, between
// two objects: from then on its dependency must not be deleted before its
// dependent.
type loopOrdered struct {
	edge                    string
	dependentUID, targetUID string
	inferred                bool
}

// loopInferredBy names the inference rule of an inferred edge by the field
// that makes it: providerConfigRef is the ProviderConfigs rule's, a field
// and the writer's the credentials rule's, any other path the managed
// references rule's.
func loopInferredBy(via string) string {
	switch {
	case via == "spec.providerConfigRef":
		return oracle.InferProviderConfigs
	case strings.Contains(via, " → "):
		return oracle.InferCredentials
	default:
		return oracle.InferManagedReferences
	}
}

// reachIdentified counts the reference edges of issue 31: to one of
// several composed resources of one name, and by a field whose name doesn't
// name its target's kind.
func (r *loopRun) reachIdentified(p *oracle.Plan, e oracle.Edge) {
	if loopInferredBy(e.Via) != oracle.InferManagedReferences {
		return
	}
	target := p.Nodes[e.Target].Identity
	shared := 0
	for _, n := range p.Nodes {
		if n.Identity.Name == target.Name && n.Identity.Namespace == target.Namespace {
			shared++
		}
	}
	if shared > 2 { // The dependent, the target and another.
		r.reach("an edge inferred among shared names")
	}
	field := e.Via[strings.LastIndex(e.Via, ".")+1:]
	if !strings.Contains(strings.ToLower(field), strings.ToLower(target.Kind)) {
		r.reach("an edge inferred by a field that doesn't name its target's kind")
	}
}

// live reconciles the composite until its state stops changing, checking
// every reconcile, then checks the fixed point.
//
// Convergence is counted in reconciles from the last change of the
// composition (reconcile 1, or changeAt). Every hop of the graph that holds a
// resource back costs the reconciles its dependency takes: 1 to be named (the
// reconcile after its creation observes the name Crossplane generated), or,
// with WaitForReady, its readiness delay of 1 or 2. The check that each
// resource is held back exactly as the rules say, at every reconcile, makes
// each resource's creation come as early as those hops allow and no earlier,
// so the reconcile of the last creation, less the phase's first reconcile, is
// the graph's depth counted that way. After it, one reconcile observes the last
// UIDs, and declares their finalizers and Usages: desired state must change no
// more, so the reconcile after that sees it unchanged. From the phase's first
// reconcile to that one is depth + 3 reconciles, and no more are allowed.
//
// Besides creations, two things can change desired state late, and they
// restart the count the same way: a resource held back until a dependency
// was ready is released (in the function's output) at a reconcile that applies
// nothing, when a Usage blocks the reconcile; and an observed resource
// disappears (a user deleted it), which the next reconcile sees.
func (r *loopRun) live(f *Function) {
	m := r.m
	var input *structpb.Struct
	if r.c.input != nil {
		input = xpStruct(r.c.input)
	}
	start, last := 1, 1
	changedAt := 0
	var prevDesired []byte
	var prevNames, prevHeld map[string]bool
	var res xpResult
	var p *oracle.Plan
	for n := 1; ; n++ {
		r.n = n
		if n > loopMaxReconciles {
			r.violate(loopConverges, fmt.Sprintf("no fixed point after %d reconciles; desired state last changed at reconcile %d", loopMaxReconciles, changedAt))
			return
		}
		if n == r.c.changeAt {
			start, last = n, n
			r.trace = append(r.trace, fmt.Sprintf("r%d: the composition changes", n))
		}
		if n == r.c.switchAt {
			// Switching what protects the edges is a change of the
			// composition: the count starts again.
			start, last = n, n
			input = xpStruct(r.c.switched)
			// What one protection dropped the other may declare again:
			// flapping is within one input.
			clear(r.presence)
			clear(m.finalizerSeen)
			r.trace = append(r.trace, fmt.Sprintf("r%d: the input changes to %s", n, loopJSON(r.c.switched)))
		}
		phase := r.c.phaseAt(n)
		byFunction := map[string]bool{}
		for name, k := range m.xr.refs {
			if o := m.objects[k]; o != nil && o.byFunction {
				byFunction[name] = true
			}
		}
		world := m.composed(n)
		m.changed = false
		res = m.reconcile(f, n, func() map[string]*fnv1.Resource { return r.c.desired(phase) }, input)
		if res.err != nil {
			r.violate(loopApplies, fmt.Sprintf("RunFunction returned an error: %v", res.err))
			return
		}
		// What the rules say the function answers to the request of the
		// reconcile's last call: the one Crossplane applies.
		p = oracle.Expect(oracle.FromRequest(res.req))
		observedUIDs := map[string]bool{}
		for _, nd := range p.Nodes {
			if nd.UID != "" {
				observedUIDs[nd.UID] = true
			}
		}
		r.check(res, p, world)
		r.checkNoGap(p)
		r.fatal = r.fatal || res.fatal
		for _, l := range p.LeftOut {
			r.reachLeftOut(p, l)
		}

		names, held := map[string]bool{}, map[string]bool{}
		released := 0
		for name := range res.req.GetDesired().GetResources() {
			held[name] = res.rsp.GetDesired().GetResources()[name] == nil
		}
		for name := range res.rsp.GetDesired().GetResources() {
			names[name] = true
			if res.req.GetDesired().GetResources()[name] != nil && res.req.GetObserved().GetResources()[name] == nil && !prevNames[name] {
				last = n // Released.
				if prevHeld[name] {
					released++
				}
			}
		}
		if released > 1 {
			r.reach("a fan-out released in one pass")
		}
		prevHeld = held
		if res.requirements > 0 {
			r.reach("a call for required resources")
		}
		prevNames = names
		for _, name := range res.created {
			if !byFunction[name] && res.req.GetDesired().GetResources()[name] != nil {
				last = n
			}
		}
		desired, err := proto.MarshalOptions{Deterministic: true}.Marshal(&fnv1.State{Resources: res.rsp.GetDesired().GetResources()})
		if err != nil {
			panic(err)
		}
		if !bytes.Equal(desired, prevDesired) {
			changedAt = n
		}
		prevDesired = desired
		applied := m.takeNotes()

		for _, d := range r.c.userDeletes {
			if d.after != n {
				continue
			}
			var o *xpObject
			if d.external != nil {
				o = m.objects[d.external.key()]
			} else if k, ok := m.xr.refs[d.name]; ok {
				o = m.objects[k]
			}
			if o != nil {
				m.delete(o, "a user")
				r.reach("a user deleting an object while the composite lives")
				last = max(last, n+1) // The next reconcile observes the deletion: a change from outside, as a new composition is.
			}
		}
		m.settle(n)
		for uid := range observedUIDs {
			if m.byUID[uid] == nil {
				last = max(last, n+1) // The next reconcile no longer observes it.
			}
		}
		r.trace = append(r.trace, r.traceLine(n, res, p, applied, m.takeNotes()))
		if res.blocked != "" {
			r.reach("a reconcile a Usage blocked")
		}

		pending := n < r.c.changeAt || n < r.c.switchAt || len(m.replays) > 0
		for _, d := range r.c.userDeletes {
			pending = pending || d.after > n
		}
		for _, o := range m.objects {
			pending = pending || o.readyAt > n || (o.remoteDeleting && o.remoteGoneStep > n)
		}
		if !m.changed && !pending {
			break // The next reconcile would see the same request.
		}
	}
	r.converged = true
	r.reconciles = r.n
	r.depth = last - start
	r.took = changedAt + 1 - start + 1
	r.total = changedAt + 1
	// With protection: Usages a finalizer the target carries (the
	// provider's own) stays declared until the edge's Usage is in force,
	// which the reconcile after the Usage's creation observes: giving way
	// then costs one reconcile more.
	slack := 0
	if p.Input.ObjectEdges() == "Usages" {
		slack = 1
	}
	if changedAt > last+1+slack {
		r.violate(loopConverges, fmt.Sprintf("desired state last changed at reconcile %d, so it took %d reconciles from reconcile %d; the graph's depth is %d (the last creation or release at reconcile %d), so the bound is %d",
			changedAt, r.took, start, r.depth, last, r.depth+3+slack))
	}
	r.final = p
	r.unmanaged = map[string]bool{}
	for name, n := range p.Nodes {
		if n.Object && r.neverManaged(n) {
			r.unmanaged[name] = true
		}
	}
	r.checkFixedPoint(p)
	r.checkSilence(res, p)
}

// withoutInfer returns the composition with infer removed from its input,
// every other field shared, or nil when it has no infer to remove.
func (c *loopComposition) withoutInfer() *loopComposition {
	if len(asList(c.input["infer"])) == 0 && len(asList(c.switched["infer"])) == 0 {
		return nil
	}
	without := *c
	without.input, without.switched = maps.Clone(c.input), maps.Clone(c.switched)
	delete(without.input, "infer")
	delete(without.switched, "infer")
	return &without
}

// compareWithInferOff checks that inference is never worse than none, from
// the run of the same composition with infer off: no reconcile fails the
// step unless one does without infer; the run converges wherever that one
// does; and its fixed point declares every reference finalizer, and keeps
// every Usage (the function's, or one the composition composes itself), that
// protects a live edge between composed resources at the other's, all of
// them declared edges, unless the edge's reference finalizer is on its
// target, which a Usage of it then adds nothing to. The run with infer off
// is checked by every other property as well.
func (r *loopRun) compareWithInferOff(off *loopRun) {
	r.offReconciles = off.reconciles
	r.reach("a composition run again with infer off")
	for _, v := range off.violations {
		r.violations = append(r.violations, loopViolation{v.property, "with infer off: " + v.detail, v.reconcile})
	}
	never := func(format string, args ...any) {
		r.violations = append(r.violations, loopViolation{loopNeverWorse, fmt.Sprintf(format, args...), r.reconciles})
	}
	if r.fatal && !off.fatal {
		never("a reconcile failed the step, and none does with infer off")
	}
	if off.fatal {
		r.reach("a Fatal result with infer off")
	}
	if !off.converged {
		return
	}
	if !r.converged {
		never("no fixed point, though the run with infer off reaches one at reconcile %d", off.reconciles)
		return
	}
	// A Usage of an inferred edge may refuse Crossplane the deletion of a
	// resource the composition removed while its user remains: Crossplane
	// then applies nothing, so a resource the composition added is never
	// created. That is what a Usage is for; the edges of what exists are
	// protected all the same.
	exists := func(name string) bool { n := r.final.Nodes[name]; return n != nil && n.Observed }
	// unmanagedByTiming tells whether the model's timing leaves an Object
	// unmanaged with infer on but not off (see exempt).
	unmanagedByTiming := func(name string) bool { return r.unmanaged[name] && !off.unmanaged[name] }
	// stalled tells whether a resource is held back at the fixed point
	// with infer on only because what it waits for, with creation:
	// WaitForReady, is such an Object, never ready since never managed, or
	// held back itself for the same cause. Inferred edges hold nothing
	// back (the oracle checks every hold), so such a hold is the timing's:
	// with infer off the same Object was managed, got ready, and its
	// dependent was created and protected.
	var stalled func(name string, depth int) bool
	stalled = func(name string, depth int) bool {
		h, held := r.final.HeldBack[name]
		if !held || len(h.Unnamed) > 0 || len(h.NotReady) == 0 || depth > len(r.final.Nodes) {
			return false
		}
		for _, t := range h.NotReady {
			if !unmanagedByTiming(t) && !stalled(t, depth+1) {
				return false
			}
		}
		return true
	}
	exempt := func(dependent, target string) bool {
		switch {
		case r.blocked && !off.blocked && (!exists(dependent) || !exists(target)):
			r.reach("an edge with infer off whose end a Usage of an inferred edge keeps from being created")
			return true
		case unmanagedByTiming(dependent):
			// The model draws when a remote object goes from one sequence
			// of random numbers, which the inferred edges' Usages shift: an
			// Object created after what it references went is never
			// managed, so no finalizer can be declared for it.
			r.reach("an edge with infer off whose Object the model's timing leaves unmanaged with infer on")
			return true
		case stalled(dependent, 0) || stalled(target, 0):
			// The same draw, one step on: a resource that waits to be
			// created until such an Object is ready is never created, so
			// no Usage can name it.
			r.reach("an edge with infer off whose end waits for an Object the model's timing leaves unmanaged with infer on")
			return true
		}
		return false
	}
	type pair struct{ dependent, target string }
	declared, used, held := map[pair]bool{}, map[pair]bool{}, map[pair]bool{}
	for _, e := range r.final.Edges {
		declared[pair{e.Dependent, e.Target}] = e.Declared
		held[pair{e.Dependent, e.Target}] = e.Protection == oracle.ByFinalizer && e.State == oracle.Protected
	}
	for _, u := range r.final.Usages {
		used[pair{u.Dependent, u.Target}] = true
	}
	// A Usage the composition composes itself protects its edge as the
	// function's would, and the function then writes none of its own (issue
	// 31, point 5), so the plan's Usages, the function's alone, lack it in
	// both runs. It counts at the fixed point with infer on only in force
	// (observed) wherever it is in force with infer off: the composition
	// desires it in both runs alike, so what inference could cost it is
	// its creation, held back or blocked.
	composed := map[pair]bool{}
	for k, observed := range r.final.Composed {
		composed[pair{k[0], k[1]}] = observed
	}
	for _, e := range off.final.Edges {
		// What protects a live edge (its dependent exists and stays, its
		// target stays in the composition), in force or on its way. A
		// finalizer or Usage kept for a dependent on its way out, or the
		// Usage of a target already being deleted, protects nothing, and
		// the model's timing of deletions is its own in each run.
		live := off.final.Nodes[e.Dependent].Live() && off.final.Nodes[e.Target].Desired
		if !live || e.State != oracle.Protected && e.State != oracle.Declared || exempt(e.Dependent, e.Target) {
			continue
		}
		if e.Declared && !declared[pair{e.Dependent, e.Target}] {
			never("the fixed point doesn't declare %s's reference finalizer on %s, which it declares with infer off", e.Dependent, e.Target)
		}
		if e.Protection != oracle.ByUsage || used[pair{e.Dependent, e.Target}] {
			continue
		}
		if held[pair{e.Dependent, e.Target}] {
			// With protection: Finalizers an Object's edge keeps its Usage
			// only until the reference finalizer is on the target, and the
			// provider adds its reference finalizers once, losing some to
			// the race of provider-kubernetes #371. Which it loses the model
			// draws from one sequence of random numbers, which the inferred
			// edges' Usages shift: one run may keep the Usage of an edge
			// whose finalizer the other has in force. Either protects it;
			// only a finalizer on the target, observed, stands for the
			// Usage, as it does for the function.
			r.reach("a declared edge a Usage protects with infer off, its reference finalizer in force with infer on")
			continue
		}
		observed, ok := composed[pair{e.Dependent, e.Target}]
		switch {
		case !ok:
			never("the fixed point has no Usage of %s by %s, which protects that edge with infer off", e.Target, e.Dependent)
		case !observed && off.final.Composed[[2]string{e.Dependent, e.Target}]:
			never("the composition's own Usage of %s by %s is not in force at the fixed point, which it is with infer off", e.Target, e.Dependent)
		default:
			r.reach("a declared edge the composition's own Usage protects, with infer on and off")
		}
	}
}

// reachLeftOut counts an inferred edge left out by what its cycle is made
// of: declared edges with it, or inferred ones only.
func (r *loopRun) reachLeftOut(p *oracle.Plan, l oracle.LeftOut) {
	declared := false
	for i := 1; i+1 < len(l.Cycle); i++ {
		if slices.ContainsFunc(p.Edges, func(e oracle.Edge) bool {
			return e.Dependent == l.Cycle[i] && e.Target == l.Cycle[i+1] && e.Origin != oracle.OriginInferred
		}) {
			declared = true
		}
	}
	if declared {
		r.reach("an inferred edge left out, on a cycle with declared edges")
	} else {
		r.reach("an inferred edge left out, on a cycle of inferred edges")
	}
	if len(p.Cycles) > 0 {
		r.reach("an inferred edge left out beside a cycle of declared edges")
	}
}

// checkSilence checks that a fixed point with nothing wrong gets no result
// of any severity: Crossplane turns each into an event on every reconcile.
// Nothing is wrong when DeletionOrdered is True (every live edge between
// composed resources protected) and there is no cycle, no reference that
// can't be read, no inferred edge left out, no object composed under two
// names, no dependency of the input that matches nothing, no edge no
// Usage can protect, no stale finalizer, nothing held back, no reference
// that can't be what was meant, and, in Report mode, nothing Enforce would
// change. References to objects outside the composition are no problem by
// themselves.
func (r *loopRun) checkSilence(res xpResult, p *oracle.Plan) {
	if !p.Condition.Status || len(p.Cycles) > 0 || len(p.LeftOut) > 0 || len(p.Shared) > 0 || len(p.Problems) > 0 || len(p.Unmatched) > 0 ||
		len(p.Impossible) > 0 || len(p.Stale) > 0 || len(p.HeldBack) > 0 || len(p.SuspectReferences()) > 0 || p.Changes() {
		return
	}
	r.silent = true
	if len(p.External) > 0 {
		r.reach("a composite with nothing wrong and external references at its fixed point")
	}
	for _, result := range res.rsp.GetResults() {
		r.violate(loopSilent, fmt.Sprintf("%s %s: %s", result.GetSeverity(), result.GetReason(), result.GetMessage()))
	}
}

func (r *loopRun) traceLine(n int, res xpResult, p *oracle.Plan, applied, settled string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "r%d:", n)
	if res.fatal {
		b.WriteString(" FATAL (nothing applied);")
	}
	var held, added []string
	for name := range res.req.GetDesired().GetResources() {
		if res.rsp.GetDesired().GetResources()[name] == nil {
			held = append(held, name)
		}
	}
	for name := range res.rsp.GetDesired().GetResources() {
		if res.req.GetDesired().GetResources()[name] == nil {
			added = append(added, name)
		}
	}
	declared := 0
	for name, d := range res.rsp.GetDesired().GetResources() {
		declared += len(loopStrings(loopMeta(d.GetResource())["finalizers"])) - len(loopStrings(loopMeta(res.req.GetDesired().GetResources()[name].GetResource())["finalizers"]))
	}
	slices.Sort(held)
	slices.Sort(added)
	fmt.Fprintf(&b, " %d observed, %d desired", len(res.req.GetObserved().GetResources()), len(res.rsp.GetDesired().GetResources()))
	if len(held) > 0 {
		fmt.Fprintf(&b, ", held %v", held)
	}
	if declared > 0 {
		fmt.Fprintf(&b, ", %d finalizers added", declared)
	}
	if len(added) > 0 {
		fmt.Fprintf(&b, ", adds %v", added)
	}
	for _, c := range res.rsp.GetConditions() {
		if c.GetType() == "DeletionOrdered" {
			fmt.Fprintf(&b, ", %s %s (rules: %s)", c.GetStatus().String()[len("STATUS_CONDITION_"):], c.GetReason(), p.Condition.Reason)
		}
	}
	var warnings []string
	for _, rs := range res.rsp.GetResults() {
		if rs.GetSeverity() != fnv1.Severity_SEVERITY_NORMAL && !slices.Contains(warnings, rs.GetReason()) {
			warnings = append(warnings, rs.GetReason())
		}
	}
	if len(warnings) > 0 {
		fmt.Fprintf(&b, ", warns %v", warnings)
	}
	if res.requirements > 0 {
		fmt.Fprintf(&b, ", %d calls for requirements", res.requirements)
	}
	if res.blocked != "" {
		fmt.Fprintf(&b, "; blocked: %s", res.blocked)
	}
	if applied != "" {
		fmt.Fprintf(&b, "; apply: %s", applied)
	}
	if settled != "" {
		fmt.Fprintf(&b, "; then: %s", settled)
	}
	s := b.String()
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return s
}

func loopMeta(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	md, _ := s.AsMap()["metadata"].(map[string]any)
	return md
}

// composed returns every object of the composite as the API server holds it
// when reconcile n begins, whether Crossplane still observes it or not: what
// the function would see if Crossplane dropped nothing from observed state.
func (m *xpModel) composed(n int) []map[string]any {
	var out []map[string]any
	for _, o := range m.sorted() {
		if o.composedAs != "" && slices.Contains(o.ownerUIDs, m.xr.uid) {
			out = append(out, m.observedJSON(o, n))
		}
	}
	return out
}

// check checks one reconcile's answer against what the rules say the
// function answers to its request.
func (r *loopRun) check(res xpResult, p *oracle.Plan, world []map[string]any) {
	req, rsp := res.req, res.rsp
	earlier := req.GetDesired().GetResources()
	desired := rsp.GetDesired().GetResources()
	r.reachInput(p)

	if fatal := p.CyclesFatal() && len(p.Cycles) > 0; res.fatal != fatal {
		r.violate(loopFatal, fmt.Sprintf("fatal %v, but the rules say %v (cycles %q, onCycle %s)", res.fatal, fatal, p.CyclePaths(), p.Input.OnCycle))
	}
	switch cond := findCondition(rsp); {
	case cond == nil:
		r.violate(loopCondition, "no DeletionOrdered condition, or two")
	case cond.GetReason() != p.Condition.Reason || (cond.GetStatus() == fnv1.Status_STATUS_CONDITION_TRUE) != p.Condition.Status:
		r.violate(loopCondition, fmt.Sprintf("%s %s (%s), but the rules say %v %s: edges %s", cond.GetStatus(), cond.GetReason(), cond.GetMessage(),
			p.Condition.Status, p.Condition.Reason, loopStates(p)))
	}
	r.checkResults(rsp, p)
	summaries := 0
	for _, rs := range rsp.GetResults() {
		switch rs.GetReason() {
		case "Summary":
			summaries++
			for _, problem := range checkSummary(p, rs.GetMessage()) {
				r.violate(loopSummary, problem)
			}
		case "StaleFinalizer":
			r.reach("a StaleFinalizer warning")
			r.checkStale(rs.GetMessage(), req, p, world)
		}
	}
	if summaries == 0 {
		r.reach("a reconcile without one")
	} else {
		r.reach("a reconcile with a Summary result")
	}
	for _, problem := range checkGraph(p, rsp) {
		r.violate(loopGraph, problem)
	}
	if want := map[bool]int{true: 1}[p.Changes()]; summaries != want {
		r.violate(loopSummary, fmt.Sprintf("%d Summary results, want %d: one only when the function changes what is observed", summaries, want))
	}
	if cond := findCondition(rsp); cond != nil && !strings.HasSuffix(cond.GetMessage(), ". "+p.SummaryMessage()) {
		r.violate(loopSummary, fmt.Sprintf("condition message %q doesn't end with the summary %q", cond.GetMessage(), p.SummaryMessage()))
	}
	if len(p.Stale) > 0 && !slices.ContainsFunc(rsp.GetResults(), func(rs *fnv1.Result) bool { return rs.GetReason() == "StaleFinalizer" }) {
		r.violate(loopStaleRules, fmt.Sprintf("no StaleFinalizer warning, but the rules call %v stale", p.Stale))
	}
	for _, problem := range checkRequirements(req, rsp, p) {
		r.violate(loopRequirements, problem)
	}
	for _, a := range p.Asks {
		if a.Label != "" {
			r.reach("an ask for the composite's Objects by label")
		} else {
			r.reach("an ask by name")
		}
	}
	for _, n := range p.Nodes {
		if n.Observed && req.GetObserved().GetResources()[n.Name] == nil {
			r.reach("a required resource read as observed")
		}
	}
	if len(desired) > len(earlier)+len(p.Edges)+len(p.External) {
		r.violate(loopBounded, fmt.Sprintf("%d desired resources for %d composed ones and %d edges", len(desired), len(earlier), len(p.Edges)+len(p.External)))
	}
	r.flaps(res, p)

	if !p.Writes() {
		// Report mode, and a cycle that fails the step: desired state as
		// the earlier steps left it.
		if diff := cmp.Diff(earlier, desired, loopProtoCmp, cmpopts.EquateEmpty()); diff != "" {
			r.violate(loopPassThrough, fmt.Sprintf("desired state changed although the rules leave it as it is (mode %s, cycles %q): -earlier +desired:\n%s", p.Input.Mode, p.CyclePaths(), diff))
		}
		return
	}
	for _, name := range slices.Sorted(maps.Keys(earlier)) {
		want, got := earlier[name], desired[name]
		hold, isHeld := p.HeldBack[name]
		switch {
		case isHeld && got != nil:
			r.violate(loopCreationOrder, fmt.Sprintf("%s is released, but the rules hold it back: it %s", name, hold))
			continue
		case isHeld:
			continue
		case got == nil && req.GetObserved().GetResources()[name] != nil:
			r.violate(loopPassThrough, name+" exists and is dropped from desired state")
			continue
		case got == nil:
			r.violate(loopCreationOrder, name+" is held back, but nothing in the rules holds it")
			continue
		}
		r.checkResource(name, want, got, p)
	}
	for _, hold := range p.HeldBack {
		if len(hold.Unnamed) > 0 {
			r.reach("a resource held back until a dependency is named")
		} else {
			r.reach("a resource held back until a dependency is ready")
		}
	}
	if strings.Contains(p.SummaryMessage(), " references not inferred: ") {
		r.reach("a reference not inferred: nothing singles out its target")
	}
	unprotected := p.UnprotectedDependencies()
	if len(unprotected) > 0 {
		r.reach("a dependency declared and left unprotected")
	}
	for _, e := range p.Edges {
		r.reach("an edge " + e.State.String())
		if _, ok := p.Composed[[2]string{e.Dependent, e.Target}]; ok {
			r.reach("an edge a composed Usage protects, " + e.State.String())
		}
		if e.Origin == oracle.OriginInferred {
			r.reach("an inferred edge " + e.State.String())
			r.reach("an edge inferred by " + loopInferredBy(e.Via))
			r.reachIdentified(p, e)
		}
		d, t := p.Nodes[e.Dependent], p.Nodes[e.Target]
		switch {
		case e.State == oracle.Protected:
			r.protected[[2]string{d.UID, t.UID}] = loopOrdered{e.String(), d.UID, t.UID, e.Origin == oracle.OriginInferred}
		case slices.Contains(unprotected, e.String()):
			// An input that no longer writes Usages leaves a declared edge
			// of a resource that is no Object unprotected, and says so:
			// its order is the user's to keep.
			delete(r.protected, [2]string{d.UID, t.UID})
		}
	}
	// An inferred edge whose reference no longer singles out its target (a
	// resource of the target's name composed since, its provider not having
	// resolved the field) is no edge any more: the function withdraws its
	// Usage and the summary counts the field, as the README says. Its order
	// is the user's to declare.
	names := map[string]string{}
	for name, n := range p.Nodes {
		names[n.UID] = name
	}
	for k, o := range r.protected {
		d, t := names[o.dependentUID], names[o.targetUID]
		if o.inferred && !slices.ContainsFunc(p.Edges, func(e oracle.Edge) bool { return e.Dependent == d && e.Target == t }) && p.Unidentified(d, t) {
			delete(r.protected, k)
			r.reach("an inferred edge a resource of its target's name composed since leaves unidentified")
		}
	}
	for _, e := range p.External {
		r.reach("an external edge " + e.State.String())
		// The function can't see an object outside the composition: one
		// whose deletion began before its Usage was applied (a resource the
		// composition just removed, say) goes first, as no Usage can undo
		// a deletion the API server accepted.
		o := r.m.objects[loopKey(e.Target.Identity)]
		switch d := p.Nodes[e.Dependent]; {
		case o == nil:
		case e.State == oracle.Protected && !o.deleting:
			r.protected[[2]string{d.UID, o.uid}] = loopOrdered{loopExternalEdge(e), d.UID, o.uid, false}
		case e.Protection == oracle.Unprotected:
			// An input switched to protection: Finalizers writes no Usage,
			// and leaves the references outside the composite unprotected,
			// counted in the summary: their order is the user's to keep.
			delete(r.protected, [2]string{d.UID, o.uid})
		}
	}
	r.checkUsages(earlier, desired, p)
}

// checkNoGap checks, after the reconcile's apply, that every edge the
// function protected before and still protects, both of its ends live, is
// protected in the cluster: its target carries the dependent's finalizer, or
// a Usage of it by the dependent is in force (the Usage controller labelled
// the target in use, which is what the webhook sees). Switching from
// finalizers to Usages and back must hand each edge over without a gap.
func (r *loopRun) checkNoGap(p *oracle.Plan) {
	if !p.Writes() {
		return
	}
	for _, e := range p.Edges {
		d, t := p.Nodes[e.Dependent], p.Nodes[e.Target]
		if _, ok := r.protected[[2]string{d.UID, t.UID}]; !ok || e.Protection == oracle.Unprotected || (e.State != oracle.Protected && e.State != oracle.Declared) {
			continue
		}
		do, to := r.m.byUID[d.UID], r.m.byUID[t.UID]
		if do == nil || to == nil || do.deleting || to.deleting {
			continue
		}
		if to.has(oracle.FinalizerPrefix + d.UID) {
			r.reach("an edge protected by its finalizer")
			continue
		}
		inForce := false
		for _, u := range r.m.usagesOf(to) {
			if _, by, hasBy, _ := usageRefs(u); hasBy && by == do.key && !u.deleting && to.labels[xpInUseLabel] == "true" {
				inForce = true
			}
		}
		if !inForce {
			r.violate(loopNoGap, fmt.Sprintf("%s was protected, and after the apply neither its finalizer nor a Usage in force protects it", e))
			continue
		}
		r.reach("an edge protected by a Usage in force")
	}
}

// checkResults checks that the step reports exactly the results the rules
// give, by severity and reason, each once.
func (r *loopRun) checkResults(rsp *fnv1.RunFunctionResponse, p *oracle.Plan) {
	severity := map[fnv1.Severity]string{fnv1.Severity_SEVERITY_NORMAL: oracle.Normal, fnv1.Severity_SEVERITY_WARNING: oracle.Warning, fnv1.Severity_SEVERITY_FATAL: oracle.Fatal}
	var got, want []string
	for _, rs := range rsp.GetResults() {
		k := severity[rs.GetSeverity()] + " " + rs.GetReason()
		if slices.Contains(got, k) {
			r.violate(loopResults, "two results "+k)
		}
		got = append(got, k)
	}
	for _, rs := range p.Results() {
		want = append(want, rs.Severity+" "+rs.Reason)
	}
	slices.Sort(got)
	if got = slices.Compact(got); !slices.Equal(got, want) {
		r.violate(loopResults, fmt.Sprintf("results %q, but the rules give %q: edges %s", got, want, loopStates(p)))
	}
}

// checkStale checks a StaleFinalizer warning, which names "<resource>
// <finalizer>" pairs, the first ten and how many more. It must name the
// finalizers the rules call stale. And it must name no finalizer of an
// Object that still exists and references the resource, in a way the
// function follows: the rules, told of every composed resource the world
// holds, must call it stale too. Issue 13's bug 6 is that a dependent
// removed from the composition is named while it is still being deleted,
// because Crossplane no longer observes it; the function asks for it, and
// the rules read what it is given as observed. Report mode writes no label
// to find a removed dependent by, so there one may look stale.
func (r *loopRun) checkStale(message string, req *fnv1.RunFunctionRequest, p *oracle.Plan, world []map[string]any) {
	var got, want []string
	for _, pair := range loopStalePairs.FindAllStringSubmatch(message, -1) {
		got = append(got, pair[1]+" "+oracle.FinalizerPrefix+pair[2])
	}
	for _, s := range p.Stale {
		want = append(want, s.Resource+" "+s.Finalizer)
	}
	more := 0
	if m := loopStaleMore.FindStringSubmatch(message); m != nil {
		more, _ = strconv.Atoi(m[1])
	}
	for i, pair := range got {
		if !slices.Contains(want, pair) || slices.Contains(got[:i], pair) {
			r.violate(loopStaleRules, fmt.Sprintf("it names %s, but the rules call stale only %q (%q)", pair, want, message))
		}
	}
	if len(got)+more != len(want) || (more > 0 && len(got) != 10) {
		r.violate(loopStaleRules, fmt.Sprintf("it names %d finalizers and %d more, but the rules call %d stale: %q (%q)", len(got), more, len(want), want, message))
	}

	if !p.Enforce() {
		return
	}
	s := oracle.FromRequest(req)
	s.Required = world
	all := oracle.Expect(s)
	for _, pair := range got {
		resource, f, _ := strings.Cut(pair, " ")
		if slices.Contains(all.Stale, oracle.Stale{Resource: resource, Finalizer: f}) {
			continue
		}
		d, unasked := "?", false
		for _, n := range all.Nodes {
			if n.Finalizer() == f {
				d = fmt.Sprintf("%s (%s, being deleted %v, desired %v)", n.Name, n.UID, n.Deleting, n.Desired)
				// The README's limit: the function asks for the Object groups
				// the composition still composes and the composite's own,
				// never a group whose CRD may not be installed (a cluster
				// composite's last namespaced Object, removed).
				g, _ := oracle.GroupOf(n.APIVersion)
				unasked = !slices.Contains(p.ObjectGroups, g)
			}
		}
		if unasked {
			r.reach("a removed Object of a group the function does not ask for")
			continue
		}
		r.violate(loopStale, fmt.Sprintf("it names %s's finalizer of Object %s, which exists and references it (%q)", resource, d, message))
	}
}

var (
	loopStalePairs = regexp.MustCompile(`([a-z0-9][a-z0-9.-]*) ` + regexp.QuoteMeta(oracle.FinalizerPrefix) + `([0-9a-f-]+)`)
	loopStaleMore  = regexp.MustCompile(` and (\d+) more$`)
)

// loopProtoCmp compares protobuf messages in cmp.Diff.
var loopProtoCmp = cmp.Comparer(proto.Equal)

// loopStrip returns a desired resource's body without metadata.finalizers,
// the labels given and, for an Object, spec.references, leaving out the maps
// the function had to create to hold them.
func loopStrip(s *structpb.Struct, object bool, labels map[string]string) map[string]any {
	m := s.AsMap()
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "finalizers")
		if l, ok := md["labels"].(map[string]any); ok {
			for k := range labels {
				delete(l, k)
			}
			if len(l) == 0 {
				delete(md, "labels")
			}
		}
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
	if spec, ok := m["spec"].(map[string]any); ok && object {
		delete(spec, "references")
		if len(spec) == 0 {
			delete(m, "spec")
		}
	}
	return m
}

// checkResource checks a desired resource the function keeps: what it
// changes (finalizers, labels, references) is what the rules say, and
// nothing else changes.
func (r *loopRun) checkResource(name string, want, got *fnv1.Resource, p *oracle.Plan) {
	nd := p.Nodes[name]
	if want.GetReady() != got.GetReady() || !maps.EqualFunc(want.GetConnectionDetails(), got.GetConnectionDetails(), bytes.Equal) {
		r.violate(loopPassThrough, name+": readiness or connection details changed")
	}
	for k, v := range p.Labels[name] {
		if l := loopText(got.GetResource().AsMap(), "metadata", "labels", k); l != v {
			r.violate(loopLabels, fmt.Sprintf("%s: label %s is %q, the rules say %q", name, k, l, v))
		}
	}
	if diff := cmp.Diff(loopStrip(want.GetResource(), nd.Object, p.Labels[name]), loopStrip(got.GetResource(), nd.Object, p.Labels[name])); diff != "" {
		r.violate(loopPassThrough, fmt.Sprintf("%s changed beyond metadata.finalizers, spec.references and the labels the rules add %v: -earlier +desired:\n%s", name, p.Labels[name], diff))
	}
	before := loopStrings(loopMeta(want.GetResource())["finalizers"])
	after := loopStrings(loopMeta(got.GetResource())["finalizers"])
	if len(after) < len(before) || !slices.Equal(before, after[:len(before)]) {
		r.violate(loopPassThrough, fmt.Sprintf("%s: finalizers %v don't start with the earlier steps' %v", name, after, before))
		return
	}
	if slices.Contains(after[len(before):], oracle.ObjectFinalizer) {
		r.violate(loopOwnFinalizer, fmt.Sprintf("%s declares %s", name, oracle.ObjectFinalizer))
	}
	if !slices.Equal(after, p.Finalizers[name]) {
		r.violate(loopFinalizers, fmt.Sprintf("%s: the function declares finalizers %v, the rules %v: edges %s", name, after, p.Finalizers[name], loopStates(p)))
	}
	if len(after) > len(before) {
		r.reach("a finalizer declared")
	}
	if !nd.Object {
		return
	}
	refs := func(s *structpb.Struct) []any {
		spec, _ := s.AsMap()["spec"].(map[string]any)
		return asList(spec["references"])
	}
	wantRefs, gotRefs := refs(want.GetResource()), refs(got.GetResource())
	if len(gotRefs) < len(wantRefs) || (len(wantRefs) > 0 && cmp.Diff(wantRefs, gotRefs[:len(wantRefs)]) != "") {
		r.violate(loopPassThrough, fmt.Sprintf("%s: spec.references %v don't start with the earlier steps' %v", name, gotRefs, wantRefs))
		return
	}
	var wantAdded []any
	for _, ref := range p.References[name] {
		wantAdded = append(wantAdded, ref.DependsOn())
	}
	if diff := cmp.Diff(wantAdded, gotRefs[len(wantRefs):], cmpopts.EquateEmpty()); diff != "" {
		r.violate(loopReferences, fmt.Sprintf("%s: the references the function writes differ from the rules': -rules +function:\n%s", name, diff))
	}
	if len(gotRefs) > len(wantRefs) {
		r.reach("a reference written")
	}
}

// checkUsages checks the resources the function adds: each must be the one
// Usage the rules give an edge, as they say it, and its names must stay its
// own.
func (r *loopRun) checkUsages(earlier, desired map[string]*fnv1.Resource, p *oracle.Plan) {
	found, problems := matchUsages(earlier, desired, p)
	for _, problem := range problems {
		r.violate(loopUsages, problem)
	}
	for _, name := range slices.Sorted(maps.Keys(found)) {
		u := found[name]
		edge := u.Dependent + " → " + u.Dependency
		if u.ObservedAs != "" && u.ObservedAs != name {
			r.violate(loopUsageNames, fmt.Sprintf("edge %s's Usage is observed as %s, and the function emits it as %s", edge, u.ObservedAs, name))
		}
		body := desired[name].GetResource().AsMap()
		ns := loopText(body, "metadata", "namespace")
		r.usageNames(edge, body, name, ns+"/"+loopText(body, "metadata", "name"))
		r.reach("a Usage emitted: " + u.APIVersion + " " + u.Kind)
	}
}

// matchUsages pairs each resource the function adds to the earlier steps'
// desired state with the Usage the rules give its edge, by the objects it
// joins: what it found, by composition resource name, and the problems. Each
// must be that Usage, as the rules say it but for metadata.name, which is
// the function's to choose, and every Usage the rules give must be there,
// once.
func matchUsages(earlier, desired map[string]*fnv1.Resource, p *oracle.Plan) (map[string]oracle.Usage, []string) {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	type ends [2]xpKey
	wanted := map[ends]oracle.Usage{}
	for _, u := range p.Usages {
		of, by, _, _ := xpUsageRefs(u.Manifest(), u.Namespace)
		if other, dup := wanted[ends{of, by}]; dup {
			problem("the rules give edges %s → %s and %s → %s one Usage of %s by %s", other.Dependent, other.Dependency, u.Dependent, u.Dependency, of, by)
		}
		wanted[ends{of, by}] = u
	}
	found := map[string]oracle.Usage{}
	byEnds := map[ends]string{}
	for _, name := range slices.Sorted(maps.Keys(desired)) {
		if earlier[name] != nil {
			continue
		}
		body := desired[name].GetResource().AsMap()
		of, by, _, _ := xpUsageRefs(body, loopText(body, "metadata", "namespace"))
		u, ok := wanted[ends{of, by}]
		if !ok {
			problem("the function adds %s (%s %s, of %s by %s), which is no Usage the rules give an edge", name, loopText(body, "apiVersion"), loopText(body, "kind"), of, by)
			continue
		}
		edge := u.Dependent + " → " + u.Dependency
		if other, dup := byEnds[ends{of, by}]; dup {
			problem("edge %s has two Usages: %s and %s", edge, other, name)
		}
		byEnds[ends{of, by}] = name
		found[name] = u
		says := desired[name].GetResource().AsMap()
		if md, _ := says["metadata"].(map[string]any); md != nil {
			delete(md, "name")
		}
		emitted, ready := u.Emitted()
		if diff := cmp.Diff(emitted, says, cmpopts.EquateEmpty()); diff != "" {
			problem("%s for edge %s differs from the rules' Usage: -rules +function:\n%s", name, edge, diff)
		}
		if (desired[name].GetReady() == fnv1.Ready_READY_TRUE) != ready {
			problem("%s is ready %s, the rules say ready %v", name, desired[name].GetReady(), ready)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(wanted), func(a, b ends) int { return strings.Compare(a[0].String()+a[1].String(), b[0].String()+b[1].String()) }) {
		if _, ok := byEnds[k]; !ok {
			u := wanted[k]
			problem("edge %s → %s has no Usage (of %s by %s)", u.Dependent, u.Dependency, k[0], k[1])
		}
	}
	return found, problems
}

// reachInput counts what a request covers.
func (r *loopRun) reachInput(p *oracle.Plan) {
	if r.n != 1 {
		if r.n == r.c.changeAt {
			r.reach("a composition change")
		}
		return
	}
	in := r.in
	r.reach("mode " + in.Mode)
	r.reach("onCycle " + in.OnCycle)
	r.reach("references " + in.References)
	r.reach("protection " + in.ObjectEdges())
	r.reach("usageAPI " + in.UsageAPI)
	r.reach("creation " + in.Creation)
	r.reach("graph " + in.Graph)
	for _, rule := range in.Infer {
		r.reach("infer " + rule)
	}
	if r.c.input == nil {
		r.reach("no input")
	}
	if r.c.namespaced {
		r.reach("a namespaced composite")
	} else {
		r.reach("a cluster-scoped composite")
	}
	for feature := range r.c.features {
		r.reach(feature)
	}
	for _, d := range in.Dependencies {
		for _, entry := range append([]string{d.Resource}, d.DependsOn...) {
			switch {
			case entry == ".*":
				r.reach("the pattern .*")
			case entry == "usage-.*":
				r.reach("the pattern usage-.*")
			case slices.ContainsFunc(r.c.phases[0], func(res *loopResource) bool { return res.name == entry }):
				r.reach("a dependency by name")
			default:
				r.reach("a dependency by pattern")
			}
		}
	}
	for _, phase := range r.c.phases {
		for _, res := range phase {
			r.reach("a composed " + res.apiVersion + " " + res.kind.kind)
			if res.objName == "" {
				r.reach("a generated name")
			}
			for _, ref := range res.refs {
				r.reach("a reference by " + ref.via)
				if ref.external != nil {
					r.reach("an external reference")
					if ref.external.missing {
						r.reach("a reference to an object that doesn't exist")
					}
				}
			}
			if res.ready {
				r.reach("ready: True from an earlier step")
			}
			if len(res.finalizers) > 0 {
				r.reach("an earlier step's finalizer")
			}
		}
	}
	if len(p.Cycles) > 0 {
		r.reach("a cycle, onCycle " + in.OnCycle)
	}
	if r.c.deleteExternals {
		r.reach("external objects deleted on teardown")
	}
}

// loopStats are the figures of a run.
type loopStats struct {
	compositions, reconciles, teardowns, maxTook, maxTotal, atBound, maxDepth int
	fixedTrue, blocked, providerDeadlocks, silent                             int
	offRuns, offReconciles                                                    int
	reached                                                                   map[string]int
}

func (s *loopStats) add(r *loopRun) {
	if s.reached == nil {
		s.reached = map[string]int{}
		for _, name := range []string{
			"mode Enforce", "mode Report", "onCycle Fatal", "onCycle Warning", "references Infer", "references Ignore",
			"protection Finalizers", "usageAPI protection.crossplane.io/v1beta1",
			"usageAPI apiextensions.crossplane.io/v1beta1", "creation Immediate", "creation WaitForReady", "graph None", "graph Context", "no input",
			"a reconcile with a Summary result", "a reconcile without one",
			"a namespaced composite", "a cluster-scoped composite", "the pattern .*", "the pattern usage-.*",
			"a dependency by name", "a dependency by pattern", "a generated name", "a reference by dependsOn",
			"a reference by patchesFrom", "an external reference", "a reference to an object that doesn't exist",
			"ready: True from an earlier step", "an earlier step's finalizer", "a cycle, onCycle Fatal", "a cycle, onCycle Warning",
			"a composition change", "a resource removed", "a resource added", "a dependent removed", "a dependency removed", "wide patterns",
			"edges whose Usages' names could collide", "a dependency the Object already references", "one Object under two names",
			"a user deleting an object while the composite lives", "a finalizer declared", "a reference written",
			"a resource held back until a dependency is named", "a resource held back until a dependency is ready",
			"a fan-out released in one pass", "a StaleFinalizer warning", "a deletion a Usage refused", "a deletion replayed",
			"an edge pending", "an edge declared", "an edge protected", "an edge releasing", "an edge target removed",
			"an edge target deleting", "an edge cyclic", "an edge exposed", "an external edge pending",
			"an external edge declared", "an external edge protected", "an external edge exposed",
			"a Usage emitted: protection.crossplane.io/v1beta1 Usage", "a Usage emitted: protection.crossplane.io/v1beta1 ClusterUsage",
			"a Usage emitted: apiextensions.crossplane.io/v1beta1 Usage", "a reconcile a Usage blocked",
			"a teardown ordering protected edges", "external objects deleted on teardown",
			"a composed kubernetes.crossplane.io/v1alpha1 Object", "a composed kubernetes.crossplane.io/v1alpha2 Object",
			"a composed kubernetes.m.crossplane.io/v1alpha1 Object", "a composed v1 ConfigMap", "a composed v1 Secret",
			"a composed apps/v1 Deployment", "a composed v1 Namespace", "a composed s3.example.org/v1beta1 Bucket",
			"DeletionOrdered True at the fixed point", "a call for required resources", "an ask for the composite's Objects by label",
			"an ask by name", "a required resource read as observed", "an edge pending for good: its Object's references never resolve",
			"a composite with nothing wrong and external references at its fixed point",
			"an edge protected by a Usage in force", "an edge protected by its finalizer",
			"protection Usages", "protection Both",
			"protection switched from Finalizers to Usages", "protection switched from Usages to Finalizers",
			"infer ProviderConfigs", "infer Credentials", "infer ManagedReferences", "inference shapes without infer",
			"an edge inferred by ProviderConfigs", "an edge inferred by Credentials", "an edge inferred by ManagedReferences",
			"an inferred edge pending", "an inferred edge declared", "an inferred edge protected", "an inferred edge exposed",
			"an inferred edge target deleting", "an inferred cycle", "an inference resource removed",
			"an inferred edge left out, on a cycle with declared edges", "an inferred edge left out, on a cycle of inferred edges",
			"an inferred edge left out beside a cycle of declared edges", "a declared dependency against inferred ones",
			"a composition run again with infer off", "a Fatal result with infer off",
			"an edge with infer off whose end a Usage of an inferred edge keeps from being created",
			"a declared edge the composition's own Usage protects, with infer on and off",
			"a user deleting a ProviderConfig", "a teardown ordering inferred edges",
			"a composed kubernetes.crossplane.io/v1alpha1 ProviderConfig", "a composed kubernetes.m.crossplane.io/v1alpha1 ProviderConfig",
			"a composed kubernetes.m.crossplane.io/v1alpha1 ClusterProviderConfig",
			"shared names", "shared names: a reference resolved", "shared names: a reference not resolved yet",
			"shared names: a Route and a RouteTable of one name",
			"shared names: a field that doesn't name its target's kind, the only one of its name",
			"an edge inferred among shared names", "an edge inferred by a field that doesn't name its target's kind",
			"a reference not inferred: nothing singles out its target",
			"a composed Usage by name", "a composed Usage by selector", "a composed Usage whose selector selects several",
			"an edge a composed Usage protects, protected", "an edge a composed Usage protects, declared",
			"a dependency declared and left unprotected",
			loopOnAnotherComposite, loopClusterWaits,
		} {
			s.reached[name] = 0
		}
	}
	s.compositions++
	s.reconciles += r.reconciles
	if r.offReconciles > 0 {
		s.offRuns++
		s.offReconciles += r.offReconciles
	}
	if r.converged {
		s.maxTook = max(s.maxTook, r.took)
		s.maxTotal = max(s.maxTotal, r.total)
		s.maxDepth = max(s.maxDepth, r.depth)
		if r.took == r.depth+3 {
			s.atBound++
		}
	}
	if r.tornDown {
		s.teardowns++
	}
	if r.fixedTrue {
		s.fixedTrue++
		r.reach("DeletionOrdered True at the fixed point")
	}
	if r.blocked {
		s.blocked++
	}
	if r.silent {
		s.silent++
	}
	if r.providerDeadlock {
		s.providerDeadlocks++
	}
	if r.m.refused > 0 {
		r.reach("a deletion a Usage refused")
	}
	if r.m.replayed > 0 {
		r.reach("a deletion replayed")
	}
	for k, v := range r.reached {
		s.reached[k] += v
	}
}

func (s loopStats) String() string {
	return fmt.Sprintf("%d reconciles; the most any composition needed to converge: %d from its last change (depth %d at most; %d converged exactly at depth + 3), %d from its first reconcile; "+
		"%d teardowns checked (%d deadlocked by provider-kubernetes' own finalizers on a cycle); DeletionOrdered True at %d fixed points; %d fixed points with nothing wrong checked to have no result; %d blocked by a Usage; "+
		"%d compositions with infer run again without it (%d reconciles more)",
		s.reconciles, s.maxTook, s.maxDepth, s.atBound, s.maxTotal, s.teardowns, s.providerDeadlocks, s.fixedTrue, s.silent, s.blocked, s.offRuns, s.offReconciles)
}
