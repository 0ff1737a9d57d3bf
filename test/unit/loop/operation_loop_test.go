package loop

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

// TestOperationsKeepEveryLiveReferenceProtected runs the function as
// Crossplane Operations do, wave after wave, in the world of
// crossplane_model_test.go without a composite: Objects applied directly (by
// Argo CD, say), created, resolved by provider-kubernetes (which loses
// reference finalizers, #371), and deleted by users at random, while
// WatchOperations run for every Object that changed, CronOperations sweep
// every few waves, or both. Each Operation is core's operation reconciler: the
// function called until its requirements stop changing (at most five times
// more), then every desired resource applied with server-side apply as a
// field manager of its own, nothing deleted; and sometimes a target is
// deleted between the Operation's read and its apply.
//
//	go test -run TestOperationsKeepEveryLiveReferenceProtected -fd.ops.n=5000 ./test/loop
var (
	opsN    = flag.Int("fd.ops.n", 300, "how many random clusters TestOperationsKeepEveryLiveReferenceProtected runs")
	opsSeed = flag.Uint64("fd.ops.seed", 5, "the seed of its clusters; cluster i uses the seeds (seed, i)")
)

// The properties every cluster is checked for.
const (
	opsStabilises  = "the requirements stabilise within Crossplane's five extra calls"
	opsPartial     = "each desired resource is a partial object: apiVersion, kind and metadata name, namespace, uid and finalizers"
	opsOnlyMissing = "an Operation declares only finalizers a target lacks, so managedFields stay bounded"
	opsRules       = "every finalizer declared names a live, managed Object, not being deleted, that references the target"
	opsNoDeleting  = "no finalizer is declared on an object being deleted"
	opsNoRecreate  = "a target deleted after the read is never created again"
	opsProtected   = "once a wave has run on a quiet cluster, every live reference is protected"
	opsIdle        = "on a quiet, protected cluster an Operation declares no finalizer"
	opsOrder       = "on teardown every referenced object is deleted after all its dependents"
	opsClean       = "on teardown nothing is left stuck"
	opsOutput      = "the output lists exactly what was declared, and no finalizer of a live referencing Object as stale"
	opsNudge       = "a teardown nudge goes only on an object being deleted, only its own label or annotation, and only when its value changes"
)

func TestOperationsKeepEveryLiveReferenceProtected(t *testing.T) {
	f := function(t)
	broken := map[string][]string{}
	reached := map[string]int{}
	for i := 0; i < *opsN; i++ {
		c := newOpsCluster(i, rand.New(rand.NewPCG(*opsSeed, uint64(i))))
		c.run(f)
		for p, detail := range c.broken {
			broken[p] = append(broken[p], fmt.Sprintf("cluster %d (-fd.ops.seed=%d): %s\n%s", i, *opsSeed, detail, strings.Join(c.trace, "\n")))
		}
		for k, v := range c.reached {
			reached[k] += v
		}
	}
	for _, p := range slices.Sorted(maps.Keys(broken)) {
		t.Errorf("%q broken by %d of %d clusters; the first:\n%s", p, len(broken[p]), *opsN, broken[p][0])
	}
	if *opsN >= 100 {
		for _, what := range []string{"a missing finalizer repaired", "a sweep", "a watched Object", "a deleting dependent skipped",
			"a deleting target skipped", "a missing target skipped", "a target deleted before the apply", "a teardown"} {
			if reached[what] == 0 {
				t.Errorf("no cluster reached %s: the generator needs to produce it", what)
			}
		}
	}
	t.Logf("%d clusters: %v", *opsN, reached)
}

// An opsCluster is one random cluster and its history.
type opsCluster struct {
	m     *xpModel
	rng   *rand.Rand
	watch bool // WatchOperations run for every Object that changed.
	sweep int  // A CronOperation sweeps every sweep waves; 0 for none.
	// born and dies are the waves at which each dependent Object is created
	// and a user deletes it (0: never); dies of the targets too.
	dependents []opsObject
	targets    []opsObject
	// seen is each Object as the last wave saw it, for the watch.
	seen map[xpKey]string
	ops  int
	// idle is set while the cluster is quiet and protected.
	idle bool

	broken  map[string]string
	reached map[string]int
	trace   []string
	// operationOwned holds, by UID and finalizer, the Operations that own
	// it; it is reset when the finalizer goes.
	operationOwned map[string]map[string]map[int]bool
}

type opsObject struct {
	key        xpKey
	apiVersion string
	refs       []xpKey
	born, dies int
}

const opsWaves = 12

func newOpsCluster(i int, rng *rand.Rand) *opsCluster {
	c := &opsCluster{
		m: newXPModel(rng, xpComposite{}, func(string) int { return 1 }, nil), rng: rng,
		seen: map[xpKey]string{}, broken: map[string]string{}, reached: map[string]int{},
		operationOwned: map[string]map[string]map[int]bool{},
	}
	c.m.violate = func(property, detail string) { c.violate(property, detail) }
	switch i % 3 {
	case 0:
		c.watch = true
	case 1:
		c.sweep = 1 + rng.IntN(3)
	default:
		c.watch, c.sweep = true, 2+rng.IntN(4)
	}
	// Targets: the shared Object of the bug report, a Namespace, ConfigMaps
	// in it, and a namespaced Object; some created late, some never, some
	// deleted by a user while their dependents live.
	c.targets = []opsObject{
		{key: xpKey{"kubernetes.crossplane.io", "Object", "", "shared"}, apiVersion: "kubernetes.crossplane.io/v1alpha2"},
		{key: xpKey{"", "Namespace", "", "team"}, apiVersion: "v1"},
		{key: xpKey{"kubernetes.m.crossplane.io", "Object", "team", "settings"}, apiVersion: "kubernetes.m.crossplane.io/v1alpha1"},
	}
	for j := range 1 + rng.IntN(3) {
		c.targets = append(c.targets, opsObject{key: xpKey{"", "ConfigMap", "team", fmt.Sprintf("config-%d", j)}, apiVersion: "v1"})
	}
	for j := range c.targets {
		switch rng.IntN(8) {
		case 0:
			c.targets[j].born = -1 // Never created.
		case 1:
			c.targets[j].born = 1 + rng.IntN(opsWaves/2)
		}
		if rng.IntN(8) == 0 {
			c.targets[j].dies = 1 + rng.IntN(opsWaves)
		}
	}
	for j := range 1 + rng.IntN(10) {
		d := opsObject{key: xpKey{"kubernetes.crossplane.io", "Object", "", fmt.Sprintf("dependent-%d", j)}, apiVersion: "kubernetes.crossplane.io/v1alpha2"}
		if rng.IntN(3) == 0 {
			d.key = xpKey{"kubernetes.m.crossplane.io", "Object", "team", fmt.Sprintf("dependent-%d", j)}
			d.apiVersion = "kubernetes.m.crossplane.io/v1alpha1"
		}
		// References point at targets and at earlier dependents only: a
		// cycle of Objects never deletes with or without the function.
		for range 1 + rng.IntN(3) {
			if j > 0 && rng.IntN(4) == 0 {
				d.refs = append(d.refs, c.dependents[rng.IntN(j)].key)
			} else {
				d.refs = append(d.refs, c.targets[rng.IntN(len(c.targets))].key)
			}
		}
		if rng.IntN(3) == 0 {
			d.born = 1 + rng.IntN(opsWaves/2)
		}
		if rng.IntN(6) == 0 {
			d.dies = 1 + rng.IntN(opsWaves)
		}
		c.dependents = append(c.dependents, d)
	}
	return c
}

func (c *opsCluster) violate(property, detail string) {
	if _, ok := c.broken[property]; !ok {
		c.broken[property] = detail
	}
}

func (c *opsCluster) note(format string, args ...any) {
	c.trace = append(c.trace, "  "+fmt.Sprintf(format, args...))
}

// create makes an object as a user's tool applies it: an Object with its
// references, in the form provider-kubernetes' CRD defaults.
func (c *opsCluster) create(o opsObject) {
	c.m.addExternal(o.apiVersion, o.key.kind, o.key.namespace, o.key.name)
	if len(o.refs) == 0 {
		return
	}
	refs := make([]any, len(o.refs))
	for i, k := range o.refs {
		apiVersion := "v1"
		switch k.group {
		case "":
		case "kubernetes.crossplane.io":
			apiVersion = k.group + "/v1alpha2"
		default:
			apiVersion = k.group + "/v1alpha1"
		}
		target := map[string]any{"apiVersion": apiVersion, "kind": k.kind, "name": k.name}
		if k.namespace != "" {
			target["namespace"] = k.namespace
		}
		refs[i] = map[string]any{"dependsOn": target}
	}
	c.m.objects[o.key].body = map[string]any{"spec": map[string]any{"references": refs}}
}

func (c *opsCluster) run(f *Function) {
	m := c.m
	wave := 0
	step := func(events bool) {
		wave++
		m.changed = false
		if events {
			for _, o := range append(slices.Clone(c.targets), c.dependents...) {
				if o.born == wave || (wave == 1 && o.born == 0) {
					c.create(o)
					c.note("w%d: %s created", wave, o.key)
				}
				if o.dies == wave && m.objects[o.key] != nil {
					m.delete(m.objects[o.key], "a user")
				}
			}
		}
		m.settle(wave)
		c.operations(f, wave)
		c.trace = append(c.trace, fmt.Sprintf("w%d: %s", wave, m.takeNotes()))
	}
	for range opsWaves {
		step(true)
	}
	// A quiet cluster: the provider has nothing left to do, and a wave of
	// Operations has run since.
	for range 3 {
		step(false)
	}
	if c.sweep > 0 && (!c.watch || wave%c.sweep != 0) {
		c.operate(f, wave, nil) // A sweep after the last change, if none ran.
	}
	c.checkProtected()
	c.idle = len(c.broken) == 0
	for range 3 {
		before := c.ops
		c.touchAll()
		step(false)
		if c.ops == before && c.watch && slices.ContainsFunc(m.sorted(), func(o *xpObject) bool { return xpIsObject(o.key.group, o.key.kind) }) {
			c.violate(opsIdle, "touching every Object made no Operation")
		}
	}

	c.idle = false

	// Teardown: a user deletes everything at once; the Operations keep
	// running until it is gone.
	c.reached["a teardown"]++
	protectedAtStart := map[[2]string]bool{}
	for _, o := range m.sorted() {
		for _, k := range xpReferences(o) {
			if t := m.objects[k]; t != nil && t.has(xpRefFinalizerPrefix+o.uid) {
				protectedAtStart[[2]string{o.uid, t.uid}] = true
			}
		}
	}
	for _, o := range m.sorted() {
		m.delete(o, "a user")
	}
	for quiet := 0; quiet < 3 && wave < 300; {
		step(false)
		if m.changed {
			quiet = 0
		} else {
			quiet++
		}
	}
	if len(m.objects) > 0 {
		var left []string
		for _, o := range m.sorted() {
			left = append(left, fmt.Sprintf("%s %v", o.key, o.finalizers))
		}
		c.violate(opsClean, "left: "+strings.Join(left, ", "))
	}
	for pair := range protectedAtStart {
		d, t := pair[0], pair[1]
		if c.m.deletionStart[t] <= c.m.deletionEnd[d] {
			c.violate(opsOrder, fmt.Sprintf("an object (uid %s) began to go at tick %d, before its dependent (uid %s) was gone at tick %d", t, c.m.deletionStart[t], d, c.m.deletionEnd[d]))
		}
	}
}

// touchAll changes every Object, as a label a user adds would: each makes a
// watch event.
func (c *opsCluster) touchAll() {
	for k := range c.seen {
		c.seen[k] = ""
	}
}

// operations runs this wave's Operations: one per Object the watch saw
// change, and a sweep when one is due.
func (c *opsCluster) operations(f *Function, wave int) {
	if c.watch {
		for _, o := range c.m.sorted() {
			if !xpIsObject(o.key.group, o.key.kind) {
				continue
			}
			now := fmt.Sprint(c.m.observedJSON(o, wave))
			if c.seen[o.key] == now {
				continue
			}
			c.seen[o.key] = now
			c.operate(f, wave, o)
		}
	}
	if c.sweep > 0 && wave%c.sweep == 0 {
		c.operate(f, wave, nil)
	}
}

// operate runs one Operation: a WatchOperation's for the watched Object, or
// a sweep's when it is nil. Core runs a failed Operation again, from the
// start, up to its spec.retryLimit (5 by default).
func (c *opsCluster) operate(f *Function, wave int, watched *xpObject) {
	c.ops++
	var key *xpKey
	if watched != nil {
		key = &watched.key
		c.reached["a watched Object"]++
	} else {
		c.reached["a sweep"]++
	}
	for range 1 + 5 {
		if c.attempt(f, wave, key) {
			return
		}
		c.reached["an Operation retried"]++
	}
}

// attempt is one run of the Operation, of a WatchOperation when watched is
// set. It reports whether it succeeded.
func (c *opsCluster) attempt(f *Function, wave int, watched *xpKey) bool {
	m := c.m
	id := c.ops
	req := &fnv1.RunFunctionRequest{Desired: &fnv1.State{}}
	bootstrap := map[string]*fnv1.Resources{}
	if watched != nil {
		// Core fetches the watched object when the Operation runs: it may
		// be gone by then.
		bootstrap[protocol.WatchedResource] = &fnv1.Resources{}
		if o := m.objects[*watched]; o != nil {
			bootstrap[protocol.WatchedResource].Items = []*fnv1.Resource{{Resource: xpStruct(m.observedJSON(o, wave))}}
		}
	}
	req.RequiredResources = maps.Clone(bootstrap)
	var rsp *fnv1.RunFunctionResponse
	var last *fnv1.Requirements
	stable := false
	for i := 0; i <= 5; i++ {
		var err error
		if rsp, err = f.run(req); err != nil {
			c.violate(opsStabilises, err.Error())
			return true
		}
		if proto.Equal(rsp.GetRequirements(), last) {
			stable = true
			break
		}
		last = rsp.GetRequirements()
		next := maps.Clone(bootstrap)
		for name, sel := range rsp.GetRequirements().GetResources() {
			if got := m.fetch(sel, wave); len(got.GetItems()) > 0 {
				next[name] = got
			} else {
				next[name] = nil // Not found: the key, with nothing.
			}
		}
		req.RequiredResources = next
	}
	if !stable {
		c.violate(opsStabilises, "the requirements never stopped changing")
		return true
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			c.violate(opsStabilises, "a fatal result: "+r.GetMessage())
			return true
		}
	}
	c.checkOutput(rsp)
	// A teardown nudge may come late: what triggers an Operation for a
	// deleting Object is a change of an Object, and its target being
	// deleted may be none. opsNudge keeps each from being applied twice.
	var declaring []string
	for name, r := range rsp.GetDesired().GetResources() {
		if md, _ := r.GetResource().AsMap()["metadata"].(map[string]any); md["finalizers"] != nil {
			declaring = append(declaring, name)
		}
	}
	if c.idle && len(declaring) > 0 {
		slices.Sort(declaring)
		c.violate(opsIdle, fmt.Sprintf("an Operation declares finalizers on %d objects: %s", len(declaring), strings.Join(declaring, ", ")))
	}
	// Sometimes a user deletes a target that nothing holds between the
	// Operation's read and its apply.
	names := slices.Sorted(maps.Keys(rsp.GetDesired().GetResources()))
	if len(names) > 0 && c.rng.IntN(10) == 0 {
		body := rsp.GetDesired().GetResources()[names[0]].GetResource().AsMap()
		if k := opsKeyOf(body); m.objects[k] != nil && len(m.objects[k].finalizers) == 0 {
			m.delete(m.objects[k], "a user, during an Operation")
			c.reached["a target deleted before the apply"]++
		}
	}
	for _, name := range names {
		if !c.apply(id, name, rsp.GetDesired().GetResources()[name].GetResource().AsMap()) {
			return false // The Operation fails here.
		}
	}
	return true
}

func opsKeyOf(body map[string]any) xpKey {
	md, _ := body["metadata"].(map[string]any)
	apiVersion, _ := body["apiVersion"].(string)
	kind, _ := body["kind"].(string)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return xpKey{xpGroup(apiVersion), kind, ns, name}
}

// apply is the API server's server-side apply of a partial object by the
// Operation's own field manager. It reports whether it was accepted.
func (c *opsCluster) apply(id int, name string, body map[string]any) bool {
	m := c.m
	md, _ := body["metadata"].(map[string]any)
	for k := range body {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			c.violate(opsPartial, fmt.Sprintf("desired %s has %s", name, k))
		}
	}
	for k := range md {
		if !slices.Contains([]string{"name", "namespace", "uid", "resourceVersion", "finalizers", "labels", "annotations"}, k) {
			c.violate(opsPartial, fmt.Sprintf("desired %s has metadata.%s", name, k))
		}
	}
	annotations, _ := md["annotations"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	k := opsKeyOf(body)
	uid, _ := md["uid"].(string)
	o := m.objects[k]
	if o == nil || o.uid != uid {
		if uid == "" {
			c.violate(opsNoRecreate, fmt.Sprintf("desired %s has no uid: its apply would create %s again", name, k))
		}
		c.note("the apply of %s is refused: uid %q, and no object of that uid", name, uid)
		return false
	}
	nudge := func(kind string, into map[string]string, key string, v any, ours bool) {
		value, _ := v.(string)
		switch {
		case !ours:
			c.violate(opsNudge, fmt.Sprintf("desired %s sets the %s %s", name, kind, key))
		case !o.deleting:
			c.violate(opsNudge, fmt.Sprintf("desired %s nudges %s, which is not being deleted", name, k))
		case into[key] == value:
			c.violate(opsNudge, fmt.Sprintf("desired %s nudges %s with %q again", name, k, value))
		default:
			into[key] = value
			m.changed = true
			c.note("%s nudged: %s=%s", k, key, value)
			c.reached["a teardown nudge"]++
		}
	}
	for key, v := range annotations {
		nudge("annotation", o.annotations, key, v, key == protocol.TeardownReleasedKey || key == protocol.TeardownGoneKey || strings.HasPrefix(key, protocol.TeardownHolderKey("")))
	}
	for key, v := range labels {
		nudge("label", o.labels, key, v, key == protocol.TeardownTargetLabel)
	}
	for _, v := range asList(md["finalizers"]) {
		f, _ := v.(string)
		if o.has(f) {
			c.violate(opsOnlyMissing, fmt.Sprintf("%s declares %s, which %s carries", name, f, k))
			continue
		}
		if o.deleting {
			c.violate(opsNoDeleting, fmt.Sprintf("%s declares %s on %s, which is being deleted", name, f, k))
			return false
		}
		d := m.byUID[strings.TrimPrefix(f, xpRefFinalizerPrefix)]
		if !strings.HasPrefix(f, xpRefFinalizerPrefix) || d == nil || d.deleting || !d.has(xpObjectFinalizer) || !slices.Contains(xpReferences(d), k) {
			c.violate(opsRules, fmt.Sprintf("%s declares %s on %s", name, f, k))
		}
		if o.owners[f]&xpByOperations == 0 {
			delete(c.operationOwned[o.uid], f)
		}
		m.addFinalizer(o, f, xpByOperations)
		if c.operationOwned[o.uid] == nil {
			c.operationOwned[o.uid] = map[string]map[int]bool{}
		}
		if c.operationOwned[o.uid][f] == nil {
			c.operationOwned[o.uid][f] = map[int]bool{}
		}
		c.operationOwned[o.uid][f][id] = true
		c.reached["a missing finalizer repaired"]++
	}
	// Each Operation is a manager of its own: the entries of managers that
	// own a finalizer the object still carries.
	managers := map[int]bool{}
	refs := 0
	for _, f := range o.finalizers {
		if strings.HasPrefix(f, xpRefFinalizerPrefix) {
			refs++
		}
		if o.owners[f]&xpByOperations != 0 {
			for op := range c.operationOwned[o.uid][f] {
				managers[op] = true
			}
		}
	}
	if len(managers) > refs {
		c.violate(opsOnlyMissing, fmt.Sprintf("%s has %d Operation managers for %d reference finalizers", k, len(managers), refs))
	}
	return true
}

// checkOutput checks the Operation's output against what the function
// declared and against the world it read.
func (c *opsCluster) checkOutput(rsp *fnv1.RunFunctionResponse) {
	out := rsp.GetOutput().AsMap()
	declared := map[string][]any{}
	for _, r := range asList(out["repaired"]) {
		rm, _ := r.(map[string]any)
		target, _ := rm["target"].(string)
		declared[target] = asList(rm["finalizers"])
	}
	nudged := map[string]bool{}
	for _, n := range asList(out["nudged"]) {
		name, _ := n.(string)
		nudged[name] = true
	}
	for name, r := range rsp.GetDesired().GetResources() {
		md, _ := r.GetResource().AsMap()["metadata"].(map[string]any)
		_, annotates := md["annotations"]
		_, labels := md["labels"]
		if nudge := annotates || labels; nudge != nudged[name] {
			c.violate(opsOutput, fmt.Sprintf("desired %s: labels %v, annotations %v, the output's nudged %v", name, md["labels"], md["annotations"], nudged[name]))
		}
		delete(nudged, name)
		if (annotates || labels) && md["finalizers"] == nil {
			continue
		}
		if fmt.Sprint(declared[name]) != fmt.Sprint(asList(md["finalizers"])) {
			c.violate(opsOutput, fmt.Sprintf("desired %s declares %v, the output says %v", name, md["finalizers"], declared[name]))
		}
		delete(declared, name)
	}
	if len(declared) > 0 {
		c.violate(opsOutput, fmt.Sprintf("the output lists repairs no desired resource makes: %v", declared))
	}
	for _, s := range asList(out["skipped"]) {
		sm, _ := s.(map[string]any)
		switch sm["reason"] {
		case "DependentDeleting":
			c.reached["a deleting dependent skipped"]++
		case "TargetDeleting":
			c.reached["a deleting target skipped"]++
		case "TargetNotFound":
			c.reached["a missing target skipped"]++
		}
	}
	for _, s := range asList(out["stale"]) {
		sm, _ := s.(map[string]any)
		f, _ := sm["finalizer"].(string)
		target, _ := sm["target"].(string)
		if d := c.m.byUID[strings.TrimPrefix(f, xpRefFinalizerPrefix)]; d != nil {
			for _, k := range xpReferences(d) {
				if k.String() == target {
					c.violate(opsOutput, fmt.Sprintf("%s on %s is called stale, but %s references it", f, target, d.key))
				}
			}
		}
	}
}

// checkProtected checks that every live reference of a live Object the
// provider manages is protected on a live target.
func (c *opsCluster) checkProtected() {
	for _, d := range c.m.sorted() {
		if !xpIsObject(d.key.group, d.key.kind) || d.deleting || !d.has(xpObjectFinalizer) {
			continue
		}
		for _, k := range xpReferences(d) {
			t := c.m.objects[k]
			if t == nil || t.deleting {
				continue
			}
			if !t.has(xpRefFinalizerPrefix + d.uid) {
				c.violate(opsProtected, fmt.Sprintf("%s lacks the finalizer of %s (watch %t, sweep every %d waves)", k, d.key, c.watch, c.sweep))
			}
		}
	}
}
