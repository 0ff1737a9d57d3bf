package loop

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// The random compositions of the reconcile-loop tier (reconcile_loop_test.go):
// what the earlier pipeline steps desire, reconcile after reconcile, and the
// function's input, over every input field.

// A loopKind is a kind of composed resource.
type loopKind struct {
	apiVersions []string
	kind        string
	namespaced  bool
}

func (k *loopKind) object() bool { return xpIsObject(xpGroup(k.apiVersions[0]), k.kind) }

var (
	loopClusterObject    = &loopKind{[]string{"kubernetes.crossplane.io/v1alpha2", "kubernetes.crossplane.io/v1alpha1"}, "Object", false}
	loopNamespacedObject = &loopKind{[]string{"kubernetes.m.crossplane.io/v1alpha1"}, "Object", true}
	loopConfigMap        = &loopKind{[]string{"v1"}, "ConfigMap", true}
	loopSecret           = &loopKind{[]string{"v1"}, "Secret", true}
	loopDeployment       = &loopKind{[]string{"apps/v1"}, "Deployment", true}
	loopNamespace        = &loopKind{[]string{"v1"}, "Namespace", false}
	loopBucket           = &loopKind{[]string{"s3.example.org/v1beta1"}, "Bucket", false}
)

// A loopResource is one resource the earlier pipeline steps desire.
type loopResource struct {
	name       string // composition resource name
	kind       *loopKind
	apiVersion string
	objName    string // metadata.name; "" lets Crossplane generate it
	namespace  string // metadata.namespace; "" leaves it out
	refs       []loopRef
	ready      bool     // an earlier step says it is ready
	finalizers []string // an earlier step's
	// fields are set in the body by dotted path, over what the kind's body
	// holds: what the inference rules read (loopInference).
	fields map[string]any
}

// set sets a field of the body by its dotted path.
func (r *loopResource) set(path string, v any) {
	if r.fields == nil {
		r.fields = map[string]any{}
	}
	r.fields[path] = v
}

// A loopRef is one spec.references entry of an Object.
type loopRef struct {
	via                          string // dependsOn or patchesFrom
	apiVersion, kind, namespace  string // "" leaves the field out
	name                         string
	target                       string // the composition resource name it means, "" for an external one
	external                     *loopExternal
	deliberatelyWithoutNamespace bool
}

// A loopExternal is an object the composite doesn't compose.
type loopExternal struct {
	apiVersion, kind, namespace, name string
	missing                           bool // it doesn't exist
	// labels are its labels, and controller the external object that is
	// its controller, if any: another composite that composes it.
	labels     map[string]string
	controller *loopExternal
}

func (e *loopExternal) key() xpKey { return xpKey{xpGroup(e.apiVersion), e.kind, e.namespace, e.name} }

// A loopUserDelete is someone deleting an object, after the apply of a
// reconcile: a composed resource by its composition resource name, or an
// external object.
type loopUserDelete struct {
	after    int
	name     string
	external *loopExternal
}

// A loopComposition is a composite, its input and what the earlier steps
// desire, from reconcile 1 and, when the composition changes, from changeAt.
type loopComposition struct {
	index      int
	namespaced bool
	xrName     string
	input      map[string]any // nil: the step has no input
	phases     [][]*loopResource
	changeAt   int // 0: never
	// switched is the input from switchAt on, which protects the edges
	// otherwise (0: never).
	switchAt    int
	switched    map[string]any
	externals   []*loopExternal
	userDeletes []loopUserDelete
	// deleteExternals has a user delete every external object when the
	// composite is deleted, to see that Usages hold them back.
	deleteExternals bool
	delays          map[string]int
	// atProvider is what the providers observe of the managed resources
	// they manage, by composition resource name: see xpModel.atProvider.
	atProvider map[string]map[string]any
	features   map[string]bool
	// slowRemoteDeletion makes every Object's remote object take a step to
	// go, rather than none or one at random.
	slowRemoteDeletion bool
	// acyclic: the generator kept the composition free of cycles.
	acyclic bool
}

// size measures a composition, to report the smallest that breaks a
// property: its resources, its dependencies and its users' deletions.
func (c *loopComposition) size() int {
	seen := map[string]bool{}
	for _, phase := range c.phases {
		for _, r := range phase {
			seen[r.name] = true
		}
	}
	return len(seen) + len(asList(c.input["dependencies"])) + len(c.userDeletes) + len(c.phases)
}

func (c *loopComposition) xrNamespace() string {
	if c.namespaced {
		return "team"
	}
	return ""
}

func (c *loopComposition) phaseAt(n int) []*loopResource {
	if c.changeAt > 0 && n >= c.changeAt {
		return c.phases[1]
	}
	return c.phases[0]
}

// delay is how many reconciles a resource takes to become ready after its
// creation: the composition's choice for its own resources, and a fixed one
// from the name for the function's.
func (c *loopComposition) delay(name string) int {
	if d, ok := c.delays[name]; ok {
		return d
	}
	return 1 + len(name)%2
}

// desired renders the earlier steps' desired state anew, as Crossplane starts
// every reconcile from an empty desired state that the earlier steps fill.
func (c *loopComposition) desired(phase []*loopResource) map[string]*fnv1.Resource {
	out := make(map[string]*fnv1.Resource, len(phase))
	for _, r := range phase {
		d := &fnv1.Resource{Resource: xpStruct(c.body(r))}
		if r.ready {
			d.Ready = fnv1.Ready_READY_TRUE
		}
		out[r.name] = d
	}
	return out
}

func (c *loopComposition) body(r *loopResource) map[string]any {
	md := map[string]any{}
	if r.objName != "" {
		md["name"] = r.objName
	}
	if r.namespace != "" {
		md["namespace"] = r.namespace
	}
	if len(r.finalizers) > 0 {
		fs := make([]any, len(r.finalizers))
		for i, f := range r.finalizers {
			fs[i] = f
		}
		md["finalizers"] = fs
	}
	b := map[string]any{"apiVersion": r.apiVersion, "kind": r.kind.kind, "metadata": md}
	switch r.kind.kind {
	case "Object":
		spec := map[string]any{"forProvider": map[string]any{"manifest": map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "default"},
			"data": map[string]any{"for": r.objName},
		}}}
		if len(r.refs) > 0 {
			refs := make([]any, len(r.refs))
			for i, ref := range r.refs {
				t := map[string]any{"name": ref.name}
				for k, v := range map[string]string{"apiVersion": ref.apiVersion, "kind": ref.kind, "namespace": ref.namespace} {
					if v != "" {
						t[k] = v
					}
				}
				if ref.via == "patchesFrom" {
					t["fieldPath"] = "metadata.uid"
					refs[i] = map[string]any{"patchesFrom": t, "toFieldPath": "data.uid"}
				} else {
					refs[i] = map[string]any{"dependsOn": t}
				}
			}
			spec["references"] = refs
		}
		b["spec"] = spec
	case "ConfigMap":
		b["data"] = map[string]any{"name": r.name}
	case "Secret":
		b["stringData"] = map[string]any{"name": r.name}
	case "Deployment":
		b["spec"] = map[string]any{"replicas": 1.0}
	case "Bucket":
		b["spec"] = map[string]any{"forProvider": map[string]any{"region": "eu-west-1"}}
	}
	for _, path := range slices.Sorted(maps.Keys(r.fields)) {
		harness.Set(b, r.fields[path], strings.Split(path, ".")...)
	}
	return b
}

// loopExternals are the objects a composite of the scope may reference
// without composing them; the Object of each doesn't exist.
func loopExternals(namespaced bool) []*loopExternal {
	if namespaced {
		return []*loopExternal{
			{apiVersion: "v1", kind: "Secret", namespace: "team", name: "credentials"},
			{apiVersion: "v1", kind: "ConfigMap", namespace: "other", name: "settings"},
			{apiVersion: "v1", kind: "Namespace", name: "shared"},
			{apiVersion: "kubernetes.m.crossplane.io/v1alpha1", kind: "Object", namespace: "team", name: "not-composed", missing: true},
		}
	}
	return []*loopExternal{
		{apiVersion: "v1", kind: "Secret", namespace: "default", name: "external"},
		{apiVersion: "v1", kind: "ConfigMap", namespace: "ns-a", name: "settings"},
		{apiVersion: "v1", kind: "Namespace", name: "shared"},
		{apiVersion: "kubernetes.crossplane.io/v1alpha2", kind: "Object", name: "not-composed", missing: true},
	}
}

// fullReference is a dependsOn of an Object to the resource t, or to the
// external object "external:<name>" when t is nil, with every field set.
// The resource gets a name if it has none: references name objects.
func (c *loopComposition) fullReference(t *loopResource, to string) loopRef {
	ref := loopRef{via: "dependsOn"}
	if t == nil {
		i := slices.IndexFunc(c.externals, func(e *loopExternal) bool { return "external:"+e.name == to })
		e := c.externals[i]
		ref.external, ref.name, ref.namespace, ref.kind, ref.apiVersion = e, e.name, e.namespace, e.kind, e.apiVersion
		return ref
	}
	if t.objName == "" {
		t.objName = c.xrName + "-" + t.name
	}
	ref.target, ref.name, ref.kind, ref.apiVersion = t.name, t.objName, t.kind.kind, t.apiVersion
	if t.kind.namespaced {
		ref.namespace = cmp.Or(t.namespace, c.xrNamespace())
	}
	return ref
}

var loopNames = []string{"app", "db", "cache", "web-1", "web-2", "web-3", "ns", "config", "queue", "worker",
	"secret", "bucket", "gateway", "api", "dns", "cert", "store", "search", "mail", "auth"}

// loopGenerate makes a random composition. Compositions are small (a shared
// resource, chains and fan-outs of a few resources) so that each needs few
// reconciles, and thousands run in a minute; what they cover is counted in
// loopStats.reached.
func loopGenerate(index int, rng *rand.Rand, off map[string]bool) *loopComposition {
	chance := func(percent int) bool { return rng.IntN(100) < percent }
	c := &loopComposition{index: index, xrName: fmt.Sprintf("xr%d", index%1000), delays: map[string]int{}, features: map[string]bool{}}
	c.namespaced = chance(40)
	ns := c.xrNamespace()
	c.externals = loopExternals(c.namespaced)
	kinds := []*loopKind{loopClusterObject, loopClusterObject, loopClusterObject, loopNamespacedObject,
		loopConfigMap, loopSecret, loopDeployment, loopNamespace, loopBucket}
	if c.namespaced {
		kinds = []*loopKind{loopNamespacedObject, loopNamespacedObject, loopNamespacedObject, loopConfigMap, loopSecret, loopDeployment}
	}
	pool := slices.Clone(loopNames)
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	newResource := func(name string, kind *loopKind) *loopResource {
		r := &loopResource{name: name, kind: kind, apiVersion: kind.apiVersions[rng.IntN(len(kind.apiVersions))]}
		if chance(55) {
			r.objName = c.xrName + "-" + name
		}
		if kind.namespaced {
			switch {
			case c.namespaced && chance(60):
			case c.namespaced:
				r.namespace = ns
			default:
				r.namespace = []string{"ns-a", "ns-b"}[rng.IntN(2)]
			}
		}
		r.ready = chance(8)
		if chance(8) {
			r.finalizers = []string{xpOtherFinalizer}
		}
		c.delays[name] = 1 + rng.IntN(2)
		return r
	}
	n := 2 + rng.IntN(5)
	if chance(15) {
		n += rng.IntN(6)
	}
	acyclic := off["cycles"] || chance(80)
	c.acyclic = acyclic
	res := make([]*loopResource, n)
	for i := range res {
		res[i] = newResource(pool[i], kinds[rng.IntN(len(kinds))])
	}
	pool = pool[n:]
	// reference makes a reference of Object d to the resource t, or to an
	// external object when t is nil.
	externals := c.externals
	if off["missing-external"] {
		externals = slices.DeleteFunc(slices.Clone(externals), func(e *loopExternal) bool { return e.missing })
	}
	reference := func(d, t *loopResource) loopRef {
		to := ""
		if t == nil {
			to = "external:" + externals[rng.IntN(len(externals))].name
		}
		ref := c.fullReference(t, to)
		if chance(25) {
			ref.via = "patchesFrom"
		}
		dGroup, tGroup := xpGroup(d.apiVersion), xpGroup(ref.apiVersion)
		object := xpIsObject(tGroup, ref.kind)
		if t != nil {
			ref.apiVersion = t.kind.apiVersions[rng.IntN(len(t.kind.apiVersions))] // Any version matches.
		}
		switch {
		case object && tGroup == dGroup && chance(40):
			ref.apiVersion = "" // The CRD's default: the Object's group.
			if chance(50) {
				ref.kind = "" // The CRD's default: Object.
			}
		case object && chance(30):
			ref.kind = ""
		}
		if t != nil && t.kind.namespaced && !off["missing-external"] && chance(4) {
			// No default: the provider can't find it, and neither does
			// the function.
			ref.namespace, ref.deliberatelyWithoutNamespace = "", true
		}
		return ref
	}
	for i, d := range res {
		if !d.kind.object() {
			continue
		}
		for range rng.IntN(4) {
			var t *loopResource
			switch j := rng.IntN(100); {
			case j < 20:
			case j < 55 && i > 0:
				t = res[rng.IntN(min(i, 2))] // A shared resource: the #371 shape.
			default:
				k := rng.IntN(n)
				if acyclic && i > 0 {
					k = rng.IntN(i)
				}
				if k != i && (!acyclic || k < i) {
					t = res[k]
				}
			}
			ref := reference(d, t)
			if !slices.ContainsFunc(d.refs, func(r loopRef) bool { return r.target == ref.target && r.external == ref.external }) {
				d.refs = append(d.refs, ref)
			}
		}
	}

	in := map[string]any{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"}
	field := func(name string, values ...string) string {
		v := values[rng.IntN(len(values))]
		if chance(75) {
			in[name] = v
			return v
		}
		return values[0] // The default.
	}
	field("mode", "Enforce", "Enforce", "Enforce", "Report")
	field("onCycle", "Fatal", "Warning")
	references := field("references", "Infer", "Infer", "Ignore")
	usages := "Disabled"
	if !off["usages"] {
		// The draws of the input's former usages field are kept, so that a
		// seed makes the compositions it made before: what was External or
		// All, Usages of every edge no finalizer protects, is now
		// protection: Both, which loopProtection may draw over.
		usages = field("protection", "Finalizers", "Both", "Both", "Both")
	}
	field("usageAPI", "protection.crossplane.io/v1beta1", "apiextensions.crossplane.io/v1beta1")
	field("creation", "Immediate", "WaitForReady")
	// Whether the graph goes into the context changes nothing else the
	// function does: it is drawn apart, so that a seed makes the same
	// compositions as before the field existed.
	if graph := []string{"", "None", "Context", "Context"}[rand.New(rand.NewPCG(uint64(index), 0x9e3779b9)).IntN(4)]; graph != "" {
		in["graph"] = graph
	}

	var deps []any
	dep := func(resource string, dependsOn ...string) {
		list := make([]any, len(dependsOn))
		for i, d := range dependsOn {
			list[i] = d
		}
		deps = append(deps, map[string]any{"resource": resource, "dependsOn": list})
	}
	pattern := func(name string) string {
		if strings.HasPrefix(name, "web-") && chance(50) {
			return "web-.*"
		}
		return "(" + name + "|absent)"
	}
	if !off["explicit"] && chance(50) {
		for range 1 + rng.IntN(3) {
			j := rng.IntN(n)
			k := rng.IntN(n)
			if acyclic {
				if j == 0 {
					continue
				}
				k = rng.IntN(j)
			}
			if j == k {
				continue
			}
			dependent, dependency := res[j].name, res[k].name
			if chance(30) {
				dependent = pattern(dependent)
			}
			if chance(20) {
				dependency = pattern(dependency)
			}
			dep(dependent, dependency)
		}
		if !off["wide-patterns"] && chance(30) {
			switch rng.IntN(3) {
			case 0:
				// Everything depends on a root with no dependencies of
				// its own.
				res[0].refs = nil
				deps = slices.DeleteFunc(deps, func(d any) bool {
					return slices.Contains(oracle.Matching(d.(map[string]any)["resource"].(string), []string{res[0].name}), res[0].name)
				})
				dep(".*", res[0].name)
			case 1:
				dep("usage-.*", res[0].name)
			default:
				dep(res[n-1].name, "usage-.*")
			}
			c.features["wide patterns"] = true
		}
		if chance(8) {
			dep("absent", res[0].name)
		}
	}
	if references == "Ignore" && !off["ignore-duplicates"] && chance(40) {
		for _, d := range res {
			if i := slices.IndexFunc(d.refs, func(r loopRef) bool { return r.via == "dependsOn" && r.target != "" }); i >= 0 {
				dep(d.name, d.refs[i].target)
				c.features["a dependency the Object already references"] = true
				break
			}
		}
	}
	if usages == "Both" && !off["collisions"] && chance(25) {
		// Edges a → b-c and a-b → c, whose Usages' names the function
		// must still tell apart.
		for _, name := range []string{"x", "x-y", "y-z", "z"} {
			r := newResource(name, loopConfigMap)
			if !c.namespaced {
				r.namespace = "ns-a"
			}
			res = append(res, r)
		}
		dep("x", "y-z")
		dep("x-y", "z")
		c.features["edges whose Usages' names could collide"] = true
	}
	if len(deps) > 0 {
		in["dependencies"] = deps
	}
	if !off["duplicates"] && chance(4) {
		for _, d := range res {
			if d.kind.object() && d.objName != "" && len(d.refs) > 0 {
				copied := *d
				copied.name = d.name + "-copy"
				c.delays[copied.name] = c.delays[d.name]
				res = append(res, &copied)
				// One object under two names gets the same from the
				// function under both only without Usages and explicit
				// dependencies; else the two applies take turns.
				delete(in, "protection")
				delete(in, "dependencies")
				c.features["one Object under two names"] = true
				break
			}
		}
	}
	if chance(8) {
		c.input = nil // A step without input: every default.
	} else {
		c.input = in
	}
	// Two Objects of one object get two Usages of it, as with protection:
	// Both, which the generator leaves out for them.
	if !off["protection"] && c.input != nil && !c.features["one Object under two names"] {
		loopProtection(c, rand.New(rand.NewPCG(uint64(index), 0x7f4a7c15)))
	}
	c.phases = [][]*loopResource{res}

	if !off["changes"] && chance(45) {
		// The composition changes at some reconcile: resources removed,
		// resources added.
		c.changeAt = 2 + rng.IntN(6)
		dependents, dependencies := loopEnds(res, c.input)
		next := slices.Clone(res)
		for range rng.IntN(3) {
			i := rng.IntN(len(next))
			name := next[i].name
			if off["removed-dependents"] && dependents[name] || off["removed-dependencies"] && dependencies[name] {
				continue
			}
			if dependents[name] {
				c.features["a dependent removed"] = true
			}
			if dependencies[name] {
				c.features["a dependency removed"] = true
			}
			next = slices.Delete(next, i, i+1)
			c.features["a resource removed"] = true
		}
		for range rng.IntN(3) {
			if len(pool) == 0 {
				break
			}
			r := newResource(pool[0], kinds[rng.IntN(len(kinds))])
			pool = pool[1:]
			if r.kind.object() {
				for range rng.IntN(3) {
					var t *loopResource
					if k := rng.IntN(len(next) + 1); k < len(next) {
						t = next[k]
					}
					r.refs = append(r.refs, reference(r, t))
				}
			}
			next = append(next, r)
			c.features["a resource added"] = true
		}
		if slices.Equal(next, res) {
			c.changeAt = 0
		} else {
			c.phases = append(c.phases, next)
		}
	}
	if !off["user-deletes"] && chance(20) {
		// Mostly early, and mostly something others depend on: that is when
		// a dependency can be deleting before its dependent's finalizer is
		// on it.
		after := 1 + rng.IntN(2)
		if chance(40) {
			after = 1 + rng.IntN(6)
		}
		d := loopUserDelete{after: after}
		phase := c.phaseAt(after)
		_, dependencies := loopEnds(phase, c.input)
		var candidates, targets []*loopResource
		for _, r := range phase {
			// One with an earlier step's finalizer stays deleting while the
			// composite lives: its controller removes the finalizer only once
			// Crossplane stops applying it.
			candidates = append(candidates, r)
			if dependencies[r.name] {
				targets = append(targets, r)
			}
		}
		switch {
		case chance(25):
			d.external = c.externals[rng.IntN(len(c.externals))]
		case len(targets) > 0 && chance(60):
			d.name = targets[rng.IntN(len(targets))].name
		case len(candidates) > 0:
			d.name = candidates[rng.IntN(len(candidates))].name
		}
		if d.name != "" || d.external != nil {
			c.userDeletes = append(c.userDeletes, d)
		}
	}
	c.deleteExternals = chance(50)
	// Two Objects of one object would get two inferred Usages of what it
	// uses, as with protection: Both, which the generator leaves out for them.
	if !off["inference"] && !c.features["one Object under two names"] {
		loopInference(c, rand.New(rand.NewPCG(uint64(index), 0x3c6ef372)), off)
	}
	if !off["inference"] && !c.features["one Object under two names"] {
		loopOtherComposites(c, rand.New(rand.NewPCG(uint64(index), 0x510e527f)))
	}
	// Two names of one object take turns applying it: a Usage by it is no
	// fixed point.
	if !off["composed-usages"] && !c.features["one Object under two names"] {
		loopComposedUsages(c, rand.New(rand.NewPCG(uint64(index), 0xa54ff53a)))
	}
	return c
}

// loopProtection draws what protects the edges of Objects, and sometimes a
// switch to another protection while the composite lives, from an RNG of its
// own, so that a seed makes the same compositions as before the field
// existed.
func loopProtection(c *loopComposition, rng *rand.Rand) {
	protections := []string{"Finalizers", "Usages", "Both"}
	from := ""
	if rng.IntN(4) > 0 {
		from = protections[rng.IntN(3)]
	}
	if from != "" {
		c.input["protection"] = from
		c.features["protection "+from] = true
	}
	if rng.IntN(100) >= 35 {
		return
	}
	to := protections[rng.IntN(3)]
	if to == cmp.Or(from, "Finalizers") {
		return
	}
	c.switchAt = 2 + rng.IntN(6)
	c.switched = maps.Clone(c.input)
	c.switched["protection"] = to
	c.features["protection switched from "+cmp.Or(from, "Finalizers")+" to "+to] = true
}

// loopEnds returns the resources that depend on another, and those another
// depends on: by Objects' references, and by the input's dependencies.
func loopEnds(res []*loopResource, input map[string]any) (dependents, dependencies map[string]bool) {
	names := make([]string, len(res))
	dependents, dependencies = map[string]bool{}, map[string]bool{}
	for i, r := range res {
		names[i] = r.name
		for _, ref := range r.refs {
			if r.kind.object() && ref.target != "" {
				dependents[r.name], dependencies[ref.target] = true, true
			}
		}
	}
	for _, e := range loopDeclared(input, names) {
		dependents[e[0]], dependencies[e[1]] = true, true
	}
	return dependents, dependencies
}

// loopDeclared returns the edges the input's dependencies declare among the
// names, as [dependent, dependency] pairs, never from a name to itself.
func loopDeclared(input map[string]any, names []string) [][2]string {
	var edges [][2]string
	for _, d := range oracle.ReadInput(input).Dependencies {
		var targets []string
		for _, p := range d.DependsOn {
			targets = append(targets, oracle.Matching(p, names)...)
		}
		for _, name := range oracle.Matching(d.Resource, names) {
			for _, t := range targets {
				if t != name {
					edges = append(edges, [2]string{name, t})
				}
			}
		}
	}
	return edges
}
