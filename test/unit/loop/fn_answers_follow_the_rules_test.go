package loop

import (
	stdcmp "cmp"
	"encoding/json"
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
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// The property test runs the function on random requests and checks every
// answer against the rules of docs/rules.md, as test/lib/oracle works them out from the
// request alone: this file uses none of the function's own packages. The
// suite runs a fixed number of requests from a fixed seed; longer runs take
// flags:
//
//	go test -run TestEveryAnswerFollowsTheRules -fd.property.n=100000 -fd.property.seed=7 ./test/loop
//
// A failure names its request; -fd.property.first=i -fd.property.n=1 runs it
// alone.
var (
	propertyN     = flag.Int("fd.property.n", 2000, "how many random requests TestEveryAnswerFollowsTheRules tries")
	propertySeed  = flag.Uint64("fd.property.seed", 371, "the seed of TestEveryAnswerFollowsTheRules' random requests; request i uses the seeds (seed, i)")
	propertyFirst = flag.Int("fd.property.first", 0, "the index of TestEveryAnswerFollowsTheRules' first request")
)

// TestEveryAnswerFollowsTheRules checks, on random requests, every invariant of issue 7:
// nothing dropped or added and nothing changed but metadata.finalizers; the
// Object's own finalizer never declared; no finalizer added to a deleting
// object that lacks it; no released dependent's finalizer added back; every
// live dependent's finalizer declared outside cycles; the same answer whatever
// the map order, and no change on the function's own output; Report mode and
// fatal cycles leave desired state as it was; every cycle reported with its
// exact path. It also checks the whole expected desired state, the condition,
// the results and what the function asks Crossplane for against the rules.
func TestEveryAnswerFollowsTheRules(t *testing.T) {
	f := function(t)
	start := time.Now()
	var stats propertyStats
	failed := 0
	for i := *propertyFirst; i < *propertyFirst+*propertyN; i++ {
		req := genRequest(rngChooser{rand.New(rand.NewPCG(*propertySeed, uint64(i)))})
		problems := checkRequest(f, req, &stats)
		if len(problems) == 0 {
			continue
		}
		failed++
		t.Errorf("request %d (-fd.property.seed=%d -fd.property.first=%d -fd.property.n=1) breaks the rules:\n  %s\nrequest:\n%s",
			i, *propertySeed, i, strings.Join(problems, "\n  "), requestJSON(req))
		if failed >= 3 {
			t.Fatalf("stopping after %d failing requests", failed)
		}
	}
	t.Logf("%d random requests in %s: %s", *propertyN, time.Since(start).Round(time.Millisecond), stats)
	// The generator must reach every case the rules distinguish, or the
	// test proves less than it seems to.
	if *propertyN >= 1000 {
		for name, n := range stats.reached() {
			if n == 0 {
				t.Errorf("no request reached %s: the generator needs to produce it", name)
			}
		}
	}
}

// propertyStats counts what the random requests covered.
type propertyStats struct {
	requests, resources, edges, declaredAdded int
	cyclesFatal, cyclesWarned, report         int
	states                                    map[oracle.EdgeState]int
	external, stale, invalid, bothSet         int
	namespacedXR, duplicateIdentity, asks     int
	// inferred counts the inferred edges by rule and state.
	inferred map[string]int
	// notInferred counts the requests with a reference inference found no
	// single target for.
	notInferred int
}

func (s propertyStats) String() string {
	return fmt.Sprintf("%d resources, %d edges (pending %d, cyclic %d, releasing %d, target removed %d, target deleting %d, protected %d, declared %d), "+
		"%d finalizers added, %d fatal and %d warned cycles, %d in Report mode, %d with external references, %d with stale finalizers, "+
		"%d with invalid references, %d setting both dependsOn and patchesFrom, %d namespaced composites, %d with duplicate identities, %d asking for Objects",
		s.resources, s.edges, s.states[oracle.Pending], s.states[oracle.Cyclic], s.states[oracle.Releasing], s.states[oracle.TargetRemoved],
		s.states[oracle.TargetDeleting], s.states[oracle.Protected], s.states[oracle.Declared], s.declaredAdded, s.cyclesFatal, s.cyclesWarned,
		s.report, s.external, s.stale, s.invalid, s.bothSet, s.namespacedXR, s.duplicateIdentity, s.asks) +
		fmt.Sprintf("; inferred edges: %d by ProviderConfigs, %d by Credentials, %d by ManagedReferences", s.inferred[oracle.InferProviderConfigs],
			s.inferred[oracle.InferCredentials], s.inferred[oracle.InferManagedReferences])
}

func (s propertyStats) reached() map[string]int {
	return map[string]int{
		"a pending edge": s.states[oracle.Pending], "a cyclic edge": s.states[oracle.Cyclic], "a releasing edge": s.states[oracle.Releasing],
		"an edge to a removed resource": s.states[oracle.TargetRemoved], "an edge to a deleting resource": s.states[oracle.TargetDeleting],
		"a protected edge": s.states[oracle.Protected], "a declared edge": s.states[oracle.Declared], "an added finalizer": s.declaredAdded,
		"a fatal cycle": s.cyclesFatal, "a warned cycle": s.cyclesWarned, "Report mode": s.report, "an external reference": s.external,
		"a stale finalizer": s.stale, "an invalid reference": s.invalid, "a reference setting both dependsOn and patchesFrom": s.bothSet,
		"a namespaced composite": s.namespacedXR, "two resources with one identity": s.duplicateIdentity,
		"a request that asks for Objects":     s.asks,
		"an edge inferred by ProviderConfigs": s.inferred[oracle.InferProviderConfigs], "an edge inferred by Credentials": s.inferred[oracle.InferCredentials],
		"an edge inferred by ManagedReferences": s.inferred[oracle.InferManagedReferences], "an inferred edge declared": s.inferred[oracle.Declared.String()],
		"an inferred edge protected": s.inferred[oracle.Protected.String()], "an inferred edge exposed": s.inferred[oracle.Exposed.String()],
		"a reference not inferred": s.notInferred, "an inferred edge left out on a cycle": s.inferred["left out"],
	}
}

func requestJSON(req *fnv1.RunFunctionRequest) string {
	return protojson.Format(req)
}

// checkRequest runs the function on the request and returns every rule the
// answer breaks.
func checkRequest(f *Function, req *fnv1.RunFunctionRequest, stats *propertyStats) []string {
	rsp, err := f.run(req)
	if err != nil {
		return []string{fmt.Sprintf("RunFunction returned an error: %v", err)}
	}
	exp := expectFor(req)
	if stats != nil {
		stats.add(exp, req)
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// Determinism: Go ranges over maps in a new random order every time,
	// and a request decoded again holds maps built in another order.
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return []string{err.Error()}
	}
	{
		again := &fnv1.RunFunctionRequest{}
		if err := proto.Unmarshal(wire, again); err != nil {
			return []string{err.Error()}
		}
		rsp2, err := f.run(again)
		if err != nil || !proto.Equal(rsp, rsp2) {
			problem("the same request gave another answer (error %v): -first +again:\n%s", err, cmp.Diff(rsp, rsp2, protocmp.Transform()))
		}
	}

	problems = append(problems, checkPassThrough(req, rsp, exp)...)
	problems = append(problems, checkInvariants(req, rsp, exp)...)
	problems = append(problems, checkExpected(req, rsp, exp)...)

	// Idempotence: the function's own output as the next step's input
	// changes nothing, and answers the same. The Usages it adds are left
	// out: an earlier step's resources are the composition's, Usages or
	// not, so the function would count them in its graph.
	own := proto.Clone(req).(*fnv1.RunFunctionRequest)
	own.Desired = proto.Clone(rsp.GetDesired()).(*fnv1.State)
	if own.Desired == nil && req.Desired != nil {
		own.Desired = &fnv1.State{}
	}
	for name := range own.GetDesired().GetResources() {
		if req.GetDesired().GetResources()[name] == nil {
			delete(own.Desired.Resources, name)
		}
	}
	rsp3, err := f.run(own)
	switch {
	case err != nil:
		problem("RunFunction on its own output: %v", err)
	case !proto.Equal(rsp, rsp3):
		problem("RunFunction on its own output answers differently: -first +second:\n%s", cmp.Diff(rsp, rsp3, protocmp.Transform()))
	}
	return problems
}

func (s *propertyStats) add(e *oracle.Plan, req *fnv1.RunFunctionRequest) {
	if s.states == nil {
		s.states = map[oracle.EdgeState]int{}
	}
	s.requests++
	s.resources += len(e.Nodes)
	s.edges += len(e.Edges)
	if s.inferred == nil {
		s.inferred = map[string]int{}
	}
	if strings.Contains(e.SummaryMessage(), " references not inferred: ") {
		s.notInferred++
	}
	for _, ed := range e.Edges {
		s.states[ed.State]++
		if ed.Origin == oracle.OriginInferred {
			s.inferred[loopInferredBy(ed.Via)]++
			s.inferred[ed.State.String()]++
		}
	}
	s.inferred["left out"] += len(e.LeftOut)
	if e.Writes() {
		for _, a := range e.Missing {
			s.declaredAdded += len(a)
		}
	}
	if len(e.Cycles) > 0 {
		if e.CyclesFatal() {
			s.cyclesFatal++
		} else {
			s.cyclesWarned++
		}
	}
	count := func(b bool, n *int) {
		if b {
			*n++
		}
	}
	identities := map[oracle.Identity]int{}
	for _, n := range e.Nodes {
		if n.Identity.Name != "" {
			identities[n.Identity]++
		}
	}
	count(!e.Enforce(), &s.report)
	count(len(e.External) > 0, &s.external)
	count(len(e.Stale) > 0, &s.stale)
	count(len(e.Problems) > 0, &s.invalid)
	count(slices.ContainsFunc(e.Problems, func(p oracle.Problem) bool { return p.Both }), &s.bothSet)
	count(harness.String(req.GetObserved().GetComposite().GetResource().AsMap(), "metadata", "namespace") != "", &s.namespacedXR)
	count(slices.ContainsFunc(slices.Collect(maps.Values(identities)), func(n int) bool { return n > 1 }), &s.duplicateIdentity)
	count(e.AsksForObjects(), &s.asks)
}

// checkPassThrough checks what the function must hand on untouched: the
// tag, the context, the desired composite, every desired resource's
// connection details and readiness, and every field but metadata.finalizers
// and the labels the oracle says it adds, which it checks too.
func checkPassThrough(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, e *oracle.Plan) []string {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if rsp.GetMeta().GetTag() != req.GetMeta().GetTag() {
		problem("tag %q, want the request's %q", rsp.GetMeta().GetTag(), req.GetMeta().GetTag())
	}
	// The function adds its graph to the context, and changes nothing else
	// there.
	for k, v := range req.GetContext().GetFields() {
		if k != protocol.GraphContextKey && !proto.Equal(v, rsp.GetContext().GetFields()[k]) {
			problem("context key %q changed", k)
		}
	}
	for k := range rsp.GetContext().GetFields() {
		if _, ok := req.GetContext().GetFields()[k]; !ok && k != protocol.GraphContextKey {
			problem("context key %q added", k)
		}
	}
	if !proto.Equal(rsp.GetDesired().GetComposite(), req.GetDesired().GetComposite()) {
		problem("the desired composite changed")
	}
	if rsp.GetOutput() != nil {
		problem("the response has output")
	}
	// What the function adds are the Usages the rules give, when it writes.
	added := map[string]oracle.Usage{}
	if e.Writes() {
		var usageProblems []string
		added, usageProblems = matchUsages(req.GetDesired().GetResources(), rsp.GetDesired().GetResources(), e)
		problems = append(problems, usageProblems...)
	}
	reqNames := slices.Sorted(maps.Keys(req.GetDesired().GetResources()))
	rspNames := slices.DeleteFunc(slices.Sorted(maps.Keys(rsp.GetDesired().GetResources())), func(name string) bool { _, ok := added[name]; return ok })
	if !slices.Equal(reqNames, rspNames) {
		problem("desired resources %v, want the request's %v: a resource was dropped or added", rspNames, reqNames)
	}
	for name, want := range req.GetDesired().GetResources() {
		got := rsp.GetDesired().GetResources()[name]
		if got == nil {
			continue
		}
		for key, value := range e.Labels[name] {
			if l := harness.String(got.GetResource().AsMap(), "metadata", "labels", key); l != value {
				problem("desired %q: label %s is %q, want %q", name, key, l, value)
			}
			got = withoutLabel(got, key)
		}
		if !proto.Equal(want, got) && !proto.Equal(withoutFinalizers(want), withoutFinalizers(got)) {
			problem("desired %q changed beyond metadata.finalizers: -request +response:\n%s", name,
				cmp.Diff(withoutFinalizers(want), withoutFinalizers(got), protocmp.Transform()))
		}
		before := listOf(want.GetResource(), "metadata", "finalizers")
		after := listOf(got.GetResource(), "metadata", "finalizers")
		if len(after) < len(before) || !slices.EqualFunc(before, after[:len(before)], func(a, b *structpb.Value) bool { return proto.Equal(a, b) }) {
			problem("desired %q: metadata.finalizers %v don't start with the request's %v", name, after, before)
		}
	}
	return problems
}

// without is a copy of the resource without the field at the path, and
// without the objects on the path that held nothing else: those the function
// had to create to hold it.
func without(r *fnv1.Resource, path ...string) *fnv1.Resource {
	c := proto.Clone(r).(*fnv1.Resource)
	// holders[i] is the object that holds path[i].
	holders := []*structpb.Struct{c.GetResource()}
	for _, k := range path[:len(path)-1] {
		s := holders[len(holders)-1].GetFields()[k].GetStructValue()
		if s == nil {
			return c
		}
		holders = append(holders, s)
	}
	for i := len(holders) - 1; i >= 0; i-- {
		delete(holders[i].GetFields(), path[i])
		if i == 0 || len(holders[i].GetFields()) != 0 {
			break
		}
	}
	return c
}

// withoutFinalizers is a copy of the resource without metadata.finalizers,
// and without the metadata the function had to create to hold them.
func withoutFinalizers(r *fnv1.Resource) *fnv1.Resource {
	c := without(r, "metadata", "finalizers")
	if c.GetResource() != nil && len(c.GetResource().GetFields()) == 0 {
		c.Resource = nil
	}
	return c
}

// withoutLabel is a copy of the resource without the label, and without
// the labels and metadata the function had to create to hold it.
func withoutLabel(r *fnv1.Resource, key string) *fnv1.Resource {
	return without(r, "metadata", "labels", key)
}

func listOf(s *structpb.Struct, path ...string) []*structpb.Value {
	var v *structpb.Value
	for _, k := range path {
		v = s.GetFields()[k]
		s = v.GetStructValue()
	}
	return v.GetListValue().GetValues()
}

// added returns the strings the response's desired resource lists in
// metadata.finalizers after the request's entries.
func added(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, name string) []string {
	before := listOf(req.GetDesired().GetResources()[name].GetResource(), "metadata", "finalizers")
	after := listOf(rsp.GetDesired().GetResources()[name].GetResource(), "metadata", "finalizers")
	if len(after) <= len(before) {
		return nil
	}
	var out []string
	for _, v := range after[len(before):] {
		out = append(out, v.GetStringValue())
	}
	return out
}

// checkInvariants checks the invariants issue 7 lists, each on its own so
// that a failure names the one it breaks.
func checkInvariants(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, e *oracle.Plan) []string {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	fatalCycle := e.CyclesFatal() && len(e.Cycles) > 0
	if !e.Enforce() || fatalCycle {
		if !proto.Equal(req.GetDesired(), rsp.GetDesired()) {
			problem("desired state changed in Report mode or with a fatal cycle: -request +response:\n%s",
				cmp.Diff(req.GetDesired(), rsp.GetDesired(), protocmp.Transform()))
		}
	}
	problems = append(problems, checkRequirements(req, rsp, e)...)
	for _, name := range slices.Sorted(maps.Keys(rsp.GetDesired().GetResources())) {
		adds := added(req, rsp, name)
		n := e.Nodes[name]
		var had []string
		if n != nil {
			had = n.DesiredFinalizers
		}
		for i, a := range adds {
			switch {
			case a == objectFinalizerName:
				problem("desired %q declares %s", name, objectFinalizerName)
			case !strings.HasPrefix(a, refFinalizerPrefix):
				problem("desired %q declares %q, which is no reference finalizer", name, a)
			case slices.Contains(had, a) || slices.Contains(adds[:i], a):
				problem("desired %q declares %q twice", name, a)
			}
			if n != nil && n.Observed && n.Deleting && !n.Carries(a) {
				problem("desired %q is being deleted and lacks %q, which is declared anyway: the API server rejects it", name, a)
			}
			for _, d := range e.Nodes {
				if d.Finalizer() == a && (d.Deleting || !d.Desired) && n != nil && !n.Carries(a) {
					problem("desired %q declares %q again after the provider removed it: %q is being deleted or removed", name, a, d.Name)
				}
			}
		}
	}
	// Every live dependent's finalizer on every referenced composed object
	// outside a cycle, unless the object is being deleted without it or is
	// no longer desired.
	if e.Enforce() && !fatalCycle {
		for _, ed := range e.Edges {
			d, t := e.Nodes[ed.Dependent], e.Nodes[ed.Target]
			if ed.Protection != oracle.ByFinalizer || !d.Live() || !t.Desired || e.SameCycle(ed.Dependent, ed.Target) {
				continue
			}
			fin := d.Finalizer()
			if t.Deleting && !t.Carries(fin) {
				continue
			}
			if !slices.ContainsFunc(listOf(rsp.GetDesired().GetResources()[ed.Target].GetResource(), "metadata", "finalizers"),
				func(v *structpb.Value) bool { return v.GetStringValue() == fin }) {
				problem("desired %q lacks the finalizer %q of its live dependent %q", ed.Target, fin, ed.Dependent)
			}
		}
	}
	// Every cycle, with its exact path.
	if len(e.Cycles) > 0 {
		paths := oracle.List(e.CyclePaths())
		c := findCondition(rsp)
		if want := "references form a cycle: " + paths + ". " + e.SummaryMessage(); c == nil || c.GetReason() != "Cycle" || c.GetMessage() != want {
			problem("condition %v, want reason Cycle with message %q", c, want)
		}
		want := "cannot order deletion: references form a cycle: " + paths
		if !e.CyclesFatal() {
			want = "references form a cycle, so nothing protects its edges and no dependsOn is written on them: " + paths
		}
		if !slices.ContainsFunc(rsp.GetResults(), func(r *fnv1.Result) bool { return r.GetMessage() == want }) {
			problem("no result says %q", want)
		}
	}
	return problems
}

// checkRequirements checks what the function asks Crossplane for: the
// composite's Objects, one selector per Object API group the composition
// uses, by the label Crossplane puts on composed resources, when a reference
// finalizer names an Object observed state lacks (one Crossplane may be
// deleting); else nothing.
func checkRequirements(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, e *oracle.Plan) []string {
	var got []string
	for _, key := range slices.Sorted(maps.Keys(rsp.GetRequirements().GetResources())) {
		sel := rsp.GetRequirements().GetResources()[key]
		a := oracle.Ask{Kind: sel.GetKind(), Namespace: sel.GetNamespace()}
		if l := sel.GetMatchLabels().GetLabels(); l != nil {
			a.Group, _ = oracle.GroupOf(sel.GetApiVersion())
			a.Label = l[oracle.DependentLabel]
			// Any version the composition uses for the group, or the
			// group's default.
			if !slices.ContainsFunc(composedVersions(req), func(v string) bool { return v == sel.GetApiVersion() }) &&
				sel.GetApiVersion() != a.Group+"/v1alpha2" && sel.GetApiVersion() != a.Group+"/v1alpha1" {
				got = append(got, "a version the composition doesn't use: "+sel.GetApiVersion())
			}
		} else {
			a.APIVersion, a.Name = sel.GetApiVersion(), sel.GetMatchName()
		}
		got = append(got, a.String())
	}
	var want []string
	for _, a := range e.Asks {
		want = append(want, a.String())
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return []string{fmt.Sprintf("the response asks for %q, want %q (reference finalizers name the unseen UIDs %q)", got, want, e.Unseen)}
	}
	return nil
}

// composedVersions are the apiVersions of the request's composed resources.
func composedVersions(req *fnv1.RunFunctionRequest) []string {
	var out []string
	for _, state := range []*fnv1.State{req.GetObserved(), req.GetDesired()} {
		for _, r := range state.GetResources() {
			out = append(out, harness.String(r.GetResource().AsMap(), "apiVersion"))
		}
	}
	return out
}

// checkExpected compares the whole answer with the oracle's: every desired
// resource's added finalizers, the condition, and which results are
// reported.
func checkExpected(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, e *oracle.Plan) []string {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	changes := e.Writes()
	for _, name := range slices.Sorted(maps.Keys(req.GetDesired().GetResources())) {
		var want []string
		if changes {
			want = e.Missing[name]
		}
		if got := added(req, rsp, name); !slices.Equal(got, want) {
			problem("desired %q: added finalizers %q, want %q", name, got, want)
		}
	}

	problems = append(problems, checkGraph(e, rsp)...)

	c := findCondition(rsp)
	if c == nil {
		return append(problems, "no DeletionOrdered condition")
	}
	want := e.Condition
	wantStatus := fnv1.Status_STATUS_CONDITION_FALSE
	if want.Status {
		wantStatus = fnv1.Status_STATUS_CONDITION_TRUE
	}
	// The message names the edges in any order; one that names none is
	// exact.
	prefix := want.Prefix()
	msg, summarized := strings.CutSuffix(c.GetMessage(), ". "+e.SummaryMessage())
	if !summarized {
		problem("condition message %q doesn't end with the summary %q", c.GetMessage(), e.SummaryMessage())
	}
	switch {
	case c.GetStatus() != wantStatus || c.GetReason() != want.Reason:
		problem("condition %s %s, want %s %s (message %q)", c.GetStatus(), c.GetReason(), wantStatus, want.Reason, msg)
	case want.Edges == nil && msg != prefix:
		problem("condition message %q, want %q", msg, prefix)
	case !strings.HasPrefix(msg, prefix):
		problem("condition message %q, want it to start with %q", msg, prefix)
	case want.Edges != nil:
		if p := checkListed(strings.TrimPrefix(msg, prefix), want.Edges); p != "" {
			problem("condition message %q: %s", msg, p)
		}
	}
	if c.GetTarget() != fnv1.Target_TARGET_COMPOSITE {
		problem("condition target %s, want the composite", c.GetTarget())
	}

	severities := map[string]fnv1.Severity{oracle.Normal: fnv1.Severity_SEVERITY_NORMAL, oracle.Warning: fnv1.Severity_SEVERITY_WARNING, oracle.Fatal: fnv1.Severity_SEVERITY_FATAL}
	type key struct {
		severity fnv1.Severity
		reason   string
	}
	wantResults := map[key]bool{}
	for _, r := range e.Results() {
		wantResults[key{severities[r.Severity], r.Reason}] = true
	}
	got := map[key]bool{}
	for _, r := range rsp.GetResults() {
		k := key{r.GetSeverity(), r.GetReason()}
		if got[k] {
			problem("two results %v", k)
		}
		got[k] = true
		if !wantResults[k] {
			problem("unexpected result %s %s: %s", r.GetSeverity(), r.GetReason(), r.GetMessage())
		}
		if r.GetTarget() != fnv1.Target_TARGET_COMPOSITE {
			problem("result %s targets %s, want the composite", r.GetReason(), r.GetTarget())
		}
		if k.reason == "Summary" {
			problems = append(problems, checkSummary(e, r.GetMessage())...)
		}
	}
	for k := range wantResults {
		if !got[k] {
			problem("no result %s %s", k.severity, k.reason)
		}
	}
	return problems
}

// checkGraph checks the graph the function writes to the context: a node
// for every composed resource, and exactly the edges between composed
// resources that the rules find, each with its origin and, for an inferred
// one, the field it comes from.
func checkGraph(e *oracle.Plan, rsp *fnv1.RunFunctionResponse) []string {
	v, written := rsp.GetContext().GetFields()[protocol.GraphContextKey]
	if written != e.WritesGraph() {
		return []string{fmt.Sprintf("the context has a graph under %q: %t, want %t (graph: %s)", protocol.GraphContextKey, written, e.WritesGraph(), e.Input.Graph)}
	}
	if !written {
		return nil
	}
	g, ok := v.AsInterface().(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("the context has no graph under %q", protocol.GraphContextKey)}
	}
	var problems []string
	names := map[string]bool{}
	nodes, _ := g["nodes"].([]any)
	for _, n := range nodes {
		names[harness.String(asObject(n), "name")] = true
	}
	for _, name := range e.Names {
		if !names[name] {
			problems = append(problems, fmt.Sprintf("the graph has no node %q", name))
		}
	}
	var got, want []string
	edges, _ := g["edges"].([]any)
	for _, ed := range edges {
		from, to := harness.String(asObject(ed), "from"), harness.String(asObject(ed), "to")
		if e.Nodes[to] != nil {
			got = append(got, graphEdge(from+" → "+to, harness.String(asObject(ed), "origin"), harness.String(asObject(ed), "via")))
		}
	}
	for _, ed := range e.Edges {
		want = append(want, graphEdge(ed.String(), ed.Origin, ed.Via))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		problems = append(problems, fmt.Sprintf("the graph's edges between composed resources are %q, want %q", got, want))
	}
	return problems
}

// graphEdge names an edge of the graph with its origin, and its field
// when it has one.
func graphEdge(edge, origin, via string) string {
	if via != "" {
		return fmt.Sprintf("%s (%s: %s)", edge, origin, via)
	}
	return fmt.Sprintf("%s (%s)", edge, origin)
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func findCondition(rsp *fnv1.RunFunctionResponse) *fnv1.Condition {
	var found *fnv1.Condition
	for _, c := range rsp.GetConditions() {
		if c.GetType() == "DeletionOrdered" {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// checkSummary checks the summary the condition ends with and the Summary
// result says: the counts the rules give, and the mode.
func checkSummary(e *oracle.Plan, msg string) []string {
	if want := e.SummaryMessage(); msg != want {
		return []string{fmt.Sprintf("summary %q, want %q", msg, want)}
	}
	return nil
}

// checkListed checks a list of items as messages write them: all of them,
// or the first ten and "and N more", in any order.
func checkListed(listed string, want []string) string {
	shown, more := listed, 0
	if m := regexp.MustCompile(` and (\d+) more$`).FindStringSubmatch(listed); m != nil {
		more, _ = strconv.Atoi(m[1])
		shown = strings.TrimSuffix(listed, m[0])
	}
	items := strings.Split(shown, ", ")
	if len(items)+more != len(want) || (more > 0 && len(items) != 10) {
		return fmt.Sprintf("lists %d items and %d more, want %d items", len(items), more, len(want))
	}
	remaining := map[string]int{}
	for _, w := range want {
		remaining[w]++
	}
	for _, it := range items {
		if remaining[it] == 0 {
			return fmt.Sprintf("lists %q, which it shouldn't", it)
		}
		remaining[it]--
	}
	return ""
}

// The rules of docs/rules.md are test/lib/oracle's; these are the names the other tests
// of this package use for its constants.
const (
	refFinalizerPrefix  = oracle.FinalizerPrefix
	objectFinalizerName = oracle.ObjectFinalizer
)

// expectFor works out, from the request alone, what the rules of docs/rules.md say
// the function answers.
func expectFor(req *fnv1.RunFunctionRequest) *oracle.Plan {
	return oracle.Expect(oracle.FromRequest(req))
}

// JSON helpers.

// The generator.

// A chooser makes the generator's choices: a seeded PRNG for the property
// test, the fuzzer's bytes for FuzzRandomGraph.
type chooser interface {
	// intn returns a number in [0, n).
	intn(n int) int
}

type rngChooser struct{ *rand.Rand }

func (c rngChooser) intn(n int) int { return c.IntN(n) }

// byteChooser reads choices from bytes; when they run out, every choice is
// the first.
type byteChooser struct{ data []byte }

func (c *byteChooser) intn(n int) int {
	if n <= 1 || len(c.data) == 0 {
		return 0
	}
	v := int(c.data[0])
	c.data = c.data[1:]
	if n > 256 && len(c.data) > 0 {
		v = v<<8 | int(c.data[0])
		c.data = c.data[1:]
	}
	return v % n
}

type reqGen struct{ c chooser }

func (g reqGen) chance(percent int) bool { return g.c.intn(100) < percent }

func pickOne[T any](g reqGen, items ...T) T { return items[g.c.intn(len(items))] }

// A genKind is a kind of composed resource the generator makes.
type genKind struct {
	apiVersions []string
	kind        string
	namespaced  bool
}

var (
	clusterObjectKind    = genKind{[]string{"kubernetes.crossplane.io/v1alpha2", "kubernetes.crossplane.io/v1alpha1"}, "Object", false}
	namespacedObjectKind = genKind{[]string{"kubernetes.m.crossplane.io/v1alpha1"}, "Object", true}
	otherKinds           = []genKind{
		{[]string{"v1"}, "ConfigMap", true},
		{[]string{"v1"}, "Namespace", false},
		{[]string{"s3.example.org/v1beta1", "s3.example.org/v1"}, "Bucket", false},
		{[]string{"example.org/v1"}, "Object", false}, // Not provider-kubernetes': its references mean nothing.
	}
)

// A genMember is one composed resource the generator makes.
type genMember struct {
	key                 string
	kind                genKind
	apiVersion          string
	name, namespace     string // desired metadata; "" leaves it out
	desired, observed   bool
	observedName, obsNS string
	uid                 string
	deleting            bool
	desiredRefs         any // spec.references; nil leaves it out
	observedRefs        any
	targetedBy          []int // members whose references aim here
	desiredFinalizers   []string
	observedFinalizers  []string
}

func (m *genMember) isObject() bool {
	return m.kind.kind == "Object" && (m.kind.apiVersions[0] == clusterObjectKind.apiVersions[0] || m.kind.apiVersions[0] == namespacedObjectKind.apiVersions[0])
}

func (m *genMember) group() string {
	g, _ := oracle.GroupOf(m.apiVersion)
	return g
}

// genRequest makes a random request: a cluster-scoped or namespaced
// composite with composed Objects of both groups and other resources;
// references that share targets, form chains and sometimes cycles, point
// outside, or are malformed; resources not created yet, without UID, being
// deleted or removed from the composition; finalizers the provider added or
// lost, stale ones, and earlier steps' own.
func genRequest(c chooser) *fnv1.RunFunctionRequest {
	g := reqGen{c}
	namespacedXR := g.chance(35)
	xrNamespace := ""
	if namespacedXR {
		xrNamespace = "team"
	}
	n := 1 + c.intn(20)
	if g.chance(10) {
		n += c.intn(50)
	}
	acyclic := g.chance(65)
	hubs := 1 + c.intn(3)
	ms := make([]*genMember, n)
	for i := range ms {
		m := &genMember{key: fmt.Sprintf("%c%02d", 'a'+rune(c.intn(26)), i)}
		switch r := c.intn(100); {
		case namespacedXR && r < 70, !namespacedXR && r >= 60 && r < 75:
			m.kind = namespacedObjectKind
		case r < 60:
			m.kind = clusterObjectKind
		default:
			m.kind = pickOne(g, otherKinds...)
		}
		m.apiVersion = pickOne(g, m.kind.apiVersions...)
		m.name = fmt.Sprintf("n%02d", i)
		if g.chance(4) {
			m.name = fmt.Sprintf("n%02d", c.intn(n)) // Maybe two resources of one identity.
		}
		if m.kind.namespaced {
			switch {
			case namespacedXR && g.chance(60):
			case namespacedXR:
				m.namespace = pickOne(g, "team", "team", "team", "other")
			default:
				m.namespace = pickOne(g, "ns-a", "ns-b")
			}
		}
		m.desired = i < hubs || g.chance(92)
		m.observed = !m.desired || g.chance(80)
		if m.desired && g.chance(8) {
			m.name = "" // Named by Crossplane.
		}
		if m.observed {
			m.observedName = m.name
			if m.observedName == "" {
				m.observedName = "gen-" + m.key
			}
			if m.kind.namespaced {
				m.obsNS = stdcmp.Or(m.namespace, xrNamespace)
			}
			if g.chance(95) {
				m.uid = "uid-" + m.key
			}
			m.deleting = g.chance(10)
		}
		ms[i] = m
	}
	refs := func(i int) any {
		if g.chance(1) {
			return pickOne[any](g, map[string]any{"dependsOn": map[string]any{"name": "n00"}}, "a string") // Not a list.
		}
		k := c.intn(4)
		if k == 0 && g.chance(50) {
			return nil
		}
		out := []any{}
		for range k {
			out = append(out, g.reference(ms, i, hubs, acyclic, xrNamespace))
		}
		return out
	}
	for i, m := range ms {
		if m.kind.kind != "Object" {
			if g.chance(5) {
				m.desiredRefs = refs(i) // Ignored: not an Object of provider-kubernetes.
			}
			continue
		}
		if m.desired {
			m.desiredRefs = refs(i)
		}
		if m.observed {
			if m.desired && g.chance(75) {
				m.observedRefs = m.desiredRefs
			} else {
				m.observedRefs = refs(i)
			}
		}
	}
	for j, m := range ms {
		if m.observed {
			if m.isObject() && g.chance(85) {
				m.observedFinalizers = append(m.observedFinalizers, objectFinalizerName)
			}
			for _, i := range m.targetedBy {
				if ms[i].uid != "" && g.chance(60) {
					m.observedFinalizers = append(m.observedFinalizers, refFinalizerPrefix+ms[i].uid)
				}
			}
			if g.chance(10) {
				m.observedFinalizers = append(m.observedFinalizers, fmt.Sprintf("%suid-gone-%d", refFinalizerPrefix, j))
			}
			if g.chance(5) {
				if o := ms[c.intn(n)]; o.uid != "" {
					m.observedFinalizers = append(m.observedFinalizers, refFinalizerPrefix+o.uid)
				}
			}
			if g.chance(10) {
				m.observedFinalizers = append(m.observedFinalizers, "example.org/protect")
			}
		}
		if m.desired {
			if g.chance(20) {
				m.desiredFinalizers = append(m.desiredFinalizers, "example.org/earlier-step")
			}
			if len(m.targetedBy) > 0 && g.chance(15) {
				if d := ms[m.targetedBy[c.intn(len(m.targetedBy))]]; d.uid != "" {
					m.desiredFinalizers = append(m.desiredFinalizers, refFinalizerPrefix+d.uid)
				}
			}
			if g.chance(3) {
				m.desiredFinalizers = append(m.desiredFinalizers, objectFinalizerName)
			}
			if g.chance(2) {
				m.desiredFinalizers = append(m.desiredFinalizers, "example.org/twice", "example.org/twice")
			}
		}
	}
	req := g.render(ms, xrNamespace)
	g.inferenceShapes(req, xrNamespace)
	return req
}

// reference makes one spec.references entry of member i.
func (g reqGen) reference(ms []*genMember, i, hubs int, acyclic bool, xrNamespace string) any {
	c := g.c
	d := ms[i]
	target := func() int {
		var j int
		switch r := c.intn(100); {
		case r < 40:
			j = c.intn(hubs)
		case r < 70:
			j = i - 1 + 2*c.intn(2)
		default:
			j = c.intn(len(ms))
		}
		if acyclic && j >= i {
			j = i - 1 - c.intn(i+1)
		}
		if j < 0 || j >= len(ms) {
			return -1
		}
		return j
	}
	toMember := func(field string) map[string]any {
		j := target()
		if j < 0 {
			return map[string]any{field: map[string]any{"name": "nowhere"}}
		}
		t := ms[j]
		t.targetedBy = append(t.targetedBy, i)
		ref := map[string]any{"name": stdcmp.Or(t.observedName, t.name, "unnamed")}
		if t.kind.kind != "Object" || t.group() != d.group() || g.chance(40) {
			// Any version matches.
			ref["apiVersion"] = pickOne(g, t.apiVersion, t.kind.apiVersions[0], strings.TrimSuffix(t.apiVersion, "v1alpha2")+"v1alpha2")
		} else if g.chance(10) {
			ref["apiVersion"] = ""
		}
		if t.kind.kind != "Object" || g.chance(40) {
			ref["kind"] = t.kind.kind
		}
		if ns := stdcmp.Or(t.obsNS, t.namespace); t.kind.namespaced || ns != "" {
			ns = stdcmp.Or(ns, xrNamespace)
			if ns != "" && g.chance(95) {
				ref["namespace"] = ns // Without it, the reference is external: the provider defaults no namespace.
			}
		}
		if field == "patchesFrom" {
			ref["fieldPath"] = "metadata.uid"
			return map[string]any{field: ref, "toFieldPath": "data.uid"}
		}
		return map[string]any{field: ref}
	}
	switch r := c.intn(100); {
	case r < 60:
		return toMember("dependsOn")
	case r < 78:
		return toMember("patchesFrom")
	case r < 86:
		return pickOne[any](g,
			map[string]any{"dependsOn": map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "external", "namespace": "default"}},
			map[string]any{"dependsOn": map[string]any{"name": "not-composed"}},
			map[string]any{"patchesFrom": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": "ns-a", "fieldPath": "data"}})
	case r < 92:
		if g.chance(50) {
			return toMember("dependsOn") // Malformed references are rarer.
		}
		return pickOne[any](g,
			"a string",
			map[string]any{},
			map[string]any{"dependsOn": nil},
			map[string]any{"dependsOn": "a string"},
			map[string]any{"dependsOn": map[string]any{"kind": "ConfigMap"}},
			map[string]any{"dependsOn": map[string]any{"name": ""}},
			map[string]any{"dependsOn": map[string]any{"name": 3.0}},
			map[string]any{"dependsOn": map[string]any{"name": "n00", "apiVersion": "a/b/c"}},
			map[string]any{"patchesFrom": map[string]any{"name": "n00", "namespace": true}},
			map[string]any{"patchesFrom": []any{"n00"}})
	case r < 94:
		// Both: the provider follows patchesFrom.
		ref := toMember("patchesFrom")
		ref["dependsOn"] = toMember("dependsOn")["dependsOn"]
		return ref
	default:
		return toMember("dependsOn")
	}
}

// render makes the request of the generated members.
func (g reqGen) render(ms []*genMember, xrNamespace string) *fnv1.RunFunctionRequest {
	xrMetadata := map[string]any{"name": "app", "uid": "uid-xr"}
	if xrNamespace != "" {
		xrMetadata["namespace"] = xrNamespace
	}
	req := &fnv1.RunFunctionRequest{
		Meta: &fnv1.RequestMeta{Tag: fmt.Sprintf("tag-%d", g.c.intn(1_000_000))},
		Observed: &fnv1.State{
			Composite: &fnv1.Resource{
				Resource:          requesttest.MustStruct(map[string]any{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "metadata": xrMetadata}),
				ConnectionDetails: map[string][]byte{"password": []byte("observed-secret")},
			},
			Resources: map[string]*fnv1.Resource{},
		},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	if g.chance(30) {
		req.Desired.Composite = &fnv1.Resource{
			Resource:          requesttest.MustStruct(map[string]any{"status": map[string]any{"ready": true}}),
			ConnectionDetails: map[string][]byte{"url": []byte("https://example.org")},
		}
	}
	if g.chance(20) {
		req.Context = requesttest.MustStruct(map[string]any{"apiextensions.crossplane.io/environment": map[string]any{"region": "eu"}})
	}
	if g.chance(65) {
		in := map[string]any{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"}
		if mode := pickOne(g, "", "Enforce", "Report"); mode != "" {
			in["mode"] = mode
		}
		if onCycle := pickOne(g, "", "Fatal", "Warning", "Warning"); onCycle != "" {
			in["onCycle"] = onCycle
		}
		if graph := pickOne(g, "", "None", "Context", "Context"); graph != "" {
			in["graph"] = graph
		}
		req.Input = requesttest.MustStruct(in)
	}
	references := func(refs any) string {
		if refs == nil {
			return ""
		}
		b, err := json.Marshal(refs)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	for _, m := range ms {
		if m.desired {
			r := requesttest.Obj{APIVersion: m.apiVersion, Kind: m.kind.kind, Name: m.name, Namespace: m.namespace,
				Finalizers: m.desiredFinalizers, References: references(m.desiredRefs)}.Resource()
			if g.chance(20) {
				r.ConnectionDetails = map[string][]byte{"token": []byte("desired-secret-" + m.key)}
			}
			r.Ready = fnv1.Ready(g.c.intn(3))
			req.Desired.Resources[m.key] = r
		}
		if m.observed {
			r := requesttest.Obj{APIVersion: m.apiVersion, Kind: m.kind.kind, Name: m.observedName, Namespace: m.obsNS, UID: m.uid,
				Deleting: m.deleting, Finalizers: m.observedFinalizers, References: references(m.observedRefs)}.Resource()
			if g.chance(20) {
				r.ConnectionDetails = map[string][]byte{"token": []byte("observed-secret-" + m.key)}
			}
			req.Observed.Resources[m.key] = r
		}
	}
	return req
}
