//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane-contrib/function-dependencies/test/harness"
)

// What the function's input can say, and what Crossplane's Usages are.
const (
	usagesDisabled = "Disabled"
	usagesExternal = "External"
	usagesAll      = "All"
	waitForReady   = "WaitForReady"
	usageAPI       = "protection.crossplane.io/v1beta1"
	maxUsageName   = 63
	maxListed      = 10 // How many items a condition or result message names.
)

// input is function-dependencies' input as an example's composition gives
// it. Decoding it rejects a field this file doesn't know, so that an example
// can't use a feature the checks don't model without the test saying so.
type input struct {
	APIVersion   string       `json:"apiVersion"`
	Kind         string       `json:"kind"`
	Mode         string       `json:"mode"`
	OnCycle      string       `json:"onCycle"`
	References   string       `json:"references"`
	Usages       string       `json:"usages"`
	UsageAPI     string       `json:"usageAPI"`
	Creation     string       `json:"creation"`
	Dependencies []dependency `json:"dependencies"`
}

type dependency struct {
	Resource  string   `json:"resource"`
	DependsOn []string `json:"dependsOn"`
}

// readInput decodes a pipeline step's input and fails the test on a value
// whose behaviour the checks don't model: Report mode, references Ignore,
// Crossplane v1's Usages.
func readInput(t *testing.T, example string, raw any) input {
	t.Helper()
	in := input{Usages: usagesDisabled}
	if raw != nil {
		b, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(&in); err != nil {
			t.Fatalf("example %s: the render tests don't model the input of %s: %v", example, fnDependencies, err)
		}
	}
	for _, unmodelled := range []struct{ field, value, modelled string }{
		{"mode", in.Mode, "Enforce"},
		{"references", in.References, "Infer"},
		{"usageAPI", in.UsageAPI, usageAPI},
	} {
		if unmodelled.value != "" && unmodelled.value != unmodelled.modelled {
			t.Fatalf("example %s: the render tests model %s %s only, not %q", example, unmodelled.field, unmodelled.modelled, unmodelled.value)
		}
	}
	if in.Usages == "" {
		in.Usages = usagesDisabled
	}
	if !slices.Contains([]string{usagesDisabled, usagesExternal, usagesAll}, in.Usages) {
		t.Fatalf("example %s: usages %q", example, in.Usages)
	}
	if in.Creation != "" && in.Creation != "Immediate" && in.Creation != waitForReady {
		t.Fatalf("example %s: creation %q", example, in.Creation)
	}
	return in
}

// An edge is a dependency of a dependent composed Object on a composed
// resource, both named by composition resource name, and the finalizer
// provider-kubernetes puts on the target for the dependent: empty while the
// dependent doesn't exist yet.
type edge struct {
	dependent, target, finalizer string
	// explicit is true for an edge the input's dependencies declare, which
	// the function writes into the dependent as a dependsOn reference.
	explicit bool
}

func (e edge) String() string { return e.dependent + " → " + e.target }

// An external reference is one to an object no composed resource is.
type external struct {
	dependent string
	field     string // Where the reference is, such as spec.references[0].patchesFrom.
	target    objectKey
	// apiVersion is the target's as the reference gives it, or defaulted.
	apiVersion string
}

// objectKey is how provider-kubernetes finds a referenced object: API group
// (any version), kind, namespace, name.
type objectKey struct{ group, kind, namespace, name string }

// describe names an object as kubectl does, and as the function's messages
// do: kind.group, then namespace/name.
func (k objectKey) describe() string {
	kind := k.kind
	if k.group != "" {
		kind += "." + k.group
	}
	if k.namespace != "" {
		return kind + " " + k.namespace + "/" + k.name
	}
	return kind + " " + k.name
}

// graph is every dependency between the composed resources of an example.
type graph struct {
	// live are the edges whose dependent exists: observed, with a UID, not
	// being deleted and still desired. Their finalizer goes on the target.
	live []edge
	// pending are the edges whose dependent doesn't exist yet.
	pending []edge
	// external are the references to objects outside the composition.
	external []external
	// identity is how references find each composed resource.
	identity map[string]objectKey
}

// edgesOf resolves the dependencies between composed resources as
// provider-kubernetes and the function's documentation define them, without
// the function's code:
//
//   - every reference of every composed Object, by API group (any version),
//     kind, namespace and name, from patchesFrom when it is set, else
//     dependsOn, with the CRD's default apiVersion and kind and no default
//     namespace; from its desired state when it is desired, else from
//     observed; a reference that matches no composed resource is external;
//   - every pair the input's dependencies name, by composition resource name
//     or anchored RE2 pattern, unless the dependent references the target
//     already.
//
// A composed resource is found by its observed name and namespace, else its
// desired ones, else (namespace) the XR's, as Crossplane gives a namespaced
// XR's composed resources its namespace. desired holds what the pipeline
// steps before the function desire; each dependent's edges are sorted by
// target, and dependents by name.
func edgesOf(t *testing.T, desired map[string]doc, observed []doc, xrNamespace string, dependencies []dependency) graph {
	t.Helper()
	live := observedByName(observed)
	names := map[string]bool{}
	for name := range desired {
		names[name] = true
	}
	for name := range live {
		names[name] = true
	}
	sorted := slices.Sorted(maps.Keys(names))
	g := graph{identity: map[string]objectKey{}}
	byKey := map[objectKey][]string{}
	for _, name := range sorted {
		d, o := stateOf(desired, live, name)
		k := objectKey{groupOf(d), harness.String(d, "kind"),
			firstOf(harness.String(o, "metadata", "namespace"), harness.String(d, "metadata", "namespace"), xrNamespace),
			firstOf(harness.String(o, "metadata", "name"), harness.String(d, "metadata", "name"))}
		g.identity[name] = k
		if k.name != "" {
			byKey[k] = append(byKey[k], name)
		}
	}

	explicit := resolveDependencies(t, dependencies, sorted)
	for _, name := range sorted {
		d, o := stateOf(desired, live, name)
		object := isObject(d)
		if !object && len(explicit[name]) > 0 {
			t.Fatalf("%s is no provider-kubernetes Object but the input says it depends on %q: the render tests don't model Usages between composed resources", name, explicit[name])
		}
		var edges []edge
		seen := map[string]bool{}
		externals := map[objectKey]bool{}
		for i, ref := range harness.List(d, "spec", "references") {
			if !object {
				break
			}
			r, _ := ref.(doc)
			field := fmt.Sprintf("spec.references[%d].patchesFrom", i)
			target, _ := r["patchesFrom"].(doc)
			if target == nil {
				field = fmt.Sprintf("spec.references[%d].dependsOn", i)
				target, _ = r["dependsOn"].(doc)
			}
			apiVersion := firstOf(harness.String(target, "apiVersion"), groupOf(d)+"/"+defaultObjectVersion)
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, field, err)
			}
			k := objectKey{gv.Group, firstOf(harness.String(target, "kind"), objectKind), harness.String(target, "namespace"), harness.String(target, "name")}
			to := byKey[k]
			if len(to) == 0 {
				if !externals[k] {
					externals[k] = true
					g.external = append(g.external, external{dependent: name, field: field, target: k, apiVersion: apiVersion})
				}
				continue
			}
			for _, target := range to {
				if !seen[target] {
					seen[target] = true
					edges = append(edges, edge{dependent: name, target: target})
				}
			}
		}
		for _, target := range explicit[name] {
			if g.identity[target].name == "" {
				t.Fatalf("%s depends on %s, which has no name yet: the render tests don't model holding %s back until it has", name, target, name)
			}
			if !seen[target] {
				seen[target] = true
				edges = append(edges, edge{dependent: name, target: target, explicit: true})
			}
		}
		slices.SortFunc(edges, func(a, b edge) int { return strings.Compare(a.target, b.target) })

		_, isDesired := desired[name]
		switch {
		case o == nil || harness.String(o, "metadata", "uid") == "":
			g.pending = append(g.pending, edges...)
		case harness.String(o, "metadata", "deletionTimestamp") != "" || !isDesired:
			if len(edges) > 0 {
				t.Fatalf("%s is being deleted or removed: the render tests don't model the finalizers of its edges %v", name, edges)
			}
		default:
			for _, e := range edges {
				e.finalizer = referenceFinalizer + harness.String(o, "metadata", "uid")
				g.live = append(g.live, e)
			}
		}
	}
	return g
}

// resolveDependencies returns, for each dependent, the resources the input
// says it depends on, sorted, without itself. An entry is a composition
// resource name when it is one, else an anchored RE2 pattern. An entry that
// matches nothing would be a warning the render tests don't expect.
func resolveDependencies(t *testing.T, dependencies []dependency, names []string) map[string][]string {
	t.Helper()
	match := func(at, entry string) []string {
		if slices.Contains(names, entry) {
			return []string{entry}
		}
		re, err := regexp.Compile(`^(?:` + entry + `)$`)
		if err != nil {
			t.Fatalf("input %s: %v", at, err)
		}
		m := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !re.MatchString(n) })
		if len(m) == 0 {
			t.Fatalf("input %s %q matches no composed resource", at, entry)
		}
		return m
	}
	out := map[string][]string{}
	for i, d := range dependencies {
		var targets []string
		for j, p := range d.DependsOn {
			targets = append(targets, match(fmt.Sprintf("dependencies[%d].dependsOn[%d]", i, j), p)...)
		}
		for _, dependent := range match(fmt.Sprintf("dependencies[%d].resource", i), d.Resource) {
			for _, target := range targets {
				if target != dependent && !slices.Contains(out[dependent], target) {
					out[dependent] = append(out[dependent], target)
				}
			}
		}
	}
	for _, targets := range out {
		slices.Sort(targets)
	}
	return out
}

// A plan is what function-dependencies must do to an example's render, worked
// out from the example alone: its input, its observed resources and what the
// pipeline renders without the function.
type plan struct {
	graph
	// resources counts the composed resources the function sees: desired by
	// the steps before it, or observed.
	resources int
	// heldBack are the resources the function leaves out of desired state
	// until their dependencies are ready, with those that aren't.
	heldBack map[string][]string
	// references are the dependsOn references the function appends to each
	// desired Object's spec.references, for the input's dependencies.
	references map[string][]any
	// usages are the Usages the function adds, without metadata.name.
	usages []doc
	// missing are the live edges whose finalizer the observed target lacks.
	missing []edge
}

// planOf works out the plan of an example, given what the pipeline renders
// without the function (baseline) and the observed resources.
func planOf(t *testing.T, ex example, baseline map[string]doc, observed []doc) plan {
	t.Helper()
	live := observedByName(observed)
	g := edgesOf(t, baseline, observed, ex.xrNamespace, ex.input.Dependencies)
	p := plan{graph: g, resources: len(g.identity), heldBack: map[string][]string{}, references: map[string][]any{}}
	if len(g.external) > 0 && ex.input.Usages == usagesDisabled {
		t.Fatalf("example %s references objects outside its composition without usages, which the render tests don't model: %+v", ex.name, g.external)
	}

	// Creation order: a desired resource that doesn't exist yet waits while
	// one of its dependencies isn't observed with Ready=True. The examples
	// give patch-and-transform no readiness checks, so its desired ready is
	// the observed Ready condition.
	if ex.input.Creation == waitForReady {
		for _, e := range g.pending {
			if _, ok := baseline[e.dependent]; !ok || live[e.dependent] != nil {
				continue
			}
			if c := condition(live[e.target], "Ready"); c == nil || c["status"] != "True" {
				p.heldBack[e.dependent] = append(p.heldBack[e.dependent], e.target)
			}
		}
	}
	for name := range p.heldBack {
		if _, ok := live[name]; ok {
			t.Fatalf("the plan holds back %s, which exists: leaving it out would delete it", name)
		}
	}

	// An explicit edge of a desired Object becomes a dependsOn reference
	// to the target as it is named, unless the Object is held back.
	for _, e := range slices.Concat(g.live, g.pending) {
		if _, held := p.heldBack[e.dependent]; !e.explicit || held {
			continue
		}
		target, _ := stateOf(baseline, live, e.target)
		k := g.identity[e.target]
		ref := doc{"apiVersion": harness.String(target, "apiVersion"), "kind": k.kind, "name": k.name}
		if k.namespace != "" {
			ref["namespace"] = k.namespace
		}
		p.references[e.dependent] = append(p.references[e.dependent], doc{"dependsOn": ref})
	}

	// A Usage of each external object by each existing Object that
	// references it.
	for _, x := range g.external {
		dependent, o := stateOf(baseline, live, x.dependent)
		if o == nil {
			continue
		}
		by := g.identity[x.dependent]
		of := doc{"name": x.target.name}
		u := doc{"apiVersion": usageAPI, "kind": "Usage"}
		switch {
		case by.namespace != "" && x.target.namespace != "":
			u["metadata"] = doc{"namespace": by.namespace}
			if x.target.namespace != by.namespace {
				of["namespace"] = x.target.namespace
			}
		case by.namespace == "" && x.target.namespace == "":
			u["kind"] = "ClusterUsage"
			u["metadata"] = doc{}
		default:
			t.Fatalf("%s references %s across scopes: the render tests don't model that no Usage can protect it", x.dependent, x.target.describe())
		}
		u["spec"] = doc{
			"of":             doc{"apiVersion": x.apiVersion, "kind": x.target.kind, "resourceRef": of},
			"by":             doc{"apiVersion": harness.String(dependent, "apiVersion"), "kind": by.kind, "resourceRef": doc{"name": by.name}},
			"reason":         fmt.Sprintf("%s depends on %s (function-dependencies)", x.dependent, x.target.describe()),
			"replayDeletion": true,
		}
		p.usages = append(p.usages, u)
	}

	for _, e := range g.live {
		if !slices.Contains(finalizers(live[e.target]), e.finalizer) {
			p.missing = append(p.missing, e)
		}
	}
	return p
}

// results are the results the function's step must report, in order: the
// Summary, then the held-back resources. No warning: the examples have
// neither stale finalizers nor references the function can't protect.
func (p plan) results(step string) []result {
	rs := []result{{step: step, severity: severityNormal, reason: "Summary", message: fmt.Sprintf(
		"%d composed resources, %d references between them and %d to external objects; %d reference finalizers declared, %d pending until their Object exists",
		p.resources, len(p.live)+len(p.pending), len(p.external), len(p.live), len(p.pending))}}
	if len(p.heldBack) > 0 {
		var items []string
		for _, name := range slices.Sorted(maps.Keys(p.heldBack)) {
			items = append(items, fmt.Sprintf("%s (waits for %s to be ready)", name, strings.Join(p.heldBack[name], ", ")))
		}
		rs = append(rs, result{step: step, severity: severityNormal, reason: "HeldBack",
			message: "resources are held back from creation until their dependencies allow: " + listed(items)})
	}
	return rs
}

// condition is the XR's DeletionOrdered condition the plan makes: pending
// while an observed target lacks a declared finalizer or a dependent doesn't
// exist yet, naming those edges; else protected.
func (p plan) condition() (status, reason, message string) {
	var items []string
	for _, e := range slices.Concat(p.missing, p.pending) {
		items = append(items, e.String())
	}
	if len(items) > 0 {
		return "False", "FinalizersPending", "finalizers are declared but not yet applied, or wait for their Object to exist: " + listed(items)
	}
	return "True", "Protected", fmt.Sprintf("every live reference between composed resources is protected by a finalizer (%d)", len(p.live))
}

// listed joins items as the function's messages do, naming at most ten.
func listed(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// stateOf returns a composed resource's desired state, or its observed one
// when it isn't desired, and its observed state (nil when it doesn't exist).
func stateOf(desired, observed map[string]doc, name string) (doc, doc) {
	o := observed[name]
	if d, ok := desired[name]; ok {
		return d, o
	}
	return o, o
}

func isObject(d doc) bool {
	g := groupOf(d)
	return harness.String(d, "kind") == objectKind && (g == clusterObjectGroup || g == namespacedObjectGroup)
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
