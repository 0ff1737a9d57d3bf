//go:build e2e

package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// What the function's input can say, and what Crossplane's Usages are.
const (
	waitForReady = "WaitForReady"
	maxUsageName = 63
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
	Protection   string       `json:"protection"`
	UsageAPI     string       `json:"usageAPI"`
	Creation     string       `json:"creation"`
	Graph        string       `json:"graph"`
	Infer        []string     `json:"infer"`
	Dependencies []dependency `json:"dependencies"`
}

type dependency struct {
	Resource  string   `json:"resource"`
	DependsOn []string `json:"dependsOn"`
}

// oracle is the input as test/lib/oracle reads it.
func (in input) oracle() oracle.Input {
	out := oracle.Input{Mode: in.Mode, OnCycle: in.OnCycle, References: in.References, Protection: in.Protection, UsageAPI: in.UsageAPI, Creation: in.Creation, Graph: in.Graph, Infer: in.Infer}
	for _, d := range in.Dependencies {
		out.Dependencies = append(out.Dependencies, oracle.Dependency{Resource: d.Resource, DependsOn: d.DependsOn})
	}
	return out
}

// readInput decodes a pipeline step's input and fails the test on a value
// whose behaviour the render checks don't model: Report mode and a cycle
// leave desired state alone, which checkChanges doesn't expect; references
// Ignore no example needs. The oracle writes the Usages of either API.
func readInput(t *testing.T, example string, raw any) input {
	t.Helper()
	var in input
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
	} {
		if unmodelled.value != "" && unmodelled.value != unmodelled.modelled {
			t.Fatalf("example %s: the render tests model %s %s only, not %q", example, unmodelled.field, unmodelled.modelled, unmodelled.value)
		}
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
}

func (e edge) String() string { return e.dependent + " → " + e.target }

// graph is every dependency between the composed resources of an example, as
// test/lib/oracle works it out from the rules of docs/rules.md.
type graph struct {
	// live are the edges whose dependent exists: observed, with a UID, not
	// being deleted and still desired.
	live []edge
	// declared are the live edges whose finalizer goes on the target: all
	// of them but those a Usage protects instead (protection: Usages).
	declared []edge
	// pending are the edges whose dependent doesn't exist yet.
	pending []edge
	// inferred are the edges an inference rule makes (infer), whose
	// dependent exists: a Usage protects each, never a finalizer, whatever
	// the dependent is.
	inferred []edge
	// external are the references to objects outside the composition.
	external []oracle.External
	// oracle is the whole of what the rules say of the example.
	oracle *oracle.Plan
}

// edgesOf resolves the dependencies between the composed resources that the
// steps before the function desire and those observed, as the function's
// input says (nil: the defaults, no dependencies). It fails the test on what
// the render checks don't model: a reference that can't be read; a dependent
// being deleted or removed (checkFinalizers expects exactly the live edges'
// finalizers); and an explicit dependency of a resource that is no Object.
// An inferred edge may have any dependent: its Usage protects it.
func edgesOf(t *testing.T, desired map[string]doc, observed, required []doc, xr doc, in *input) graph {
	t.Helper()
	// The function reads the request now, and an example's observed state
	// was taken long ago: what waits on a dependency that isn't ready has
	// waited too long.
	s := oracle.State{Desired: map[string]map[string]any{}, Observed: map[string]map[string]any{}, XR: xr, Required: required, Now: time.Now()}
	if in != nil {
		s.Input = in.oracle()
	}
	maps.Copy(s.Desired, desired)
	maps.Copy(s.Observed, observedByName(observed))
	p := oracle.Expect(s)
	if len(p.Problems) > 0 {
		t.Fatalf("references the render tests don't model, as they can't be read: %+v", p.Problems)
	}
	g := graph{external: p.External, oracle: p}
	for _, e := range p.Edges {
		d := p.Nodes[e.Dependent]
		switch {
		case e.Origin == oracle.OriginInferred && e.State == oracle.Releasing:
			t.Fatalf("%s is being deleted or removed: the render tests don't model the Usage of its inferred edge %s", e.Dependent, e)
		case e.Origin == oracle.OriginInferred && d.UID == "":
			g.pending = append(g.pending, edge{dependent: e.Dependent, target: e.Target})
		case e.Origin == oracle.OriginInferred:
			g.inferred = append(g.inferred, edge{dependent: e.Dependent, target: e.Target})
		case !d.Object:
			t.Fatalf("%s is no provider-kubernetes Object but the input says it depends on %s: the render tests don't model Usages between composed resources", e.Dependent, e.Target)
		case e.State == oracle.Releasing:
			t.Fatalf("%s is being deleted or removed: the render tests don't model the finalizer of its edge %s", e.Dependent, e)
		case d.UID == "":
			g.pending = append(g.pending, edge{dependent: e.Dependent, target: e.Target})
		case d.Live():
			g.live = append(g.live, edge{dependent: e.Dependent, target: e.Target, finalizer: e.Finalizer})
			if e.Declared {
				g.declared = append(g.declared, g.live[len(g.live)-1])
			}
		}
	}
	// The composite of a ProviderConfig outside the composite, which
	// Crossplane fetched for the step, is an inferred edge's target.
	for _, e := range p.External {
		if e.Inferred {
			g.inferred = append(g.inferred, edge{dependent: e.Dependent, target: e.Target.Describe()})
		}
	}
	return g
}

// A plan is what function-dependencies must do to an example's render, worked
// out by test/lib/oracle from the example alone: its input, its observed resources
// and what the pipeline renders without the function.
type plan struct {
	graph
	// heldBack are the resources the function leaves out of desired state
	// until their dependencies allow, and why.
	heldBack map[string]oracle.Hold
	// references are the dependsOn references the function appends to each
	// desired Object's spec.references, for the input's dependencies.
	references map[string][]any
	// usages are the Usages the function adds, without metadata.name.
	usages []doc
	// missing are the declared edges whose finalizer the observed target
	// lacks.
	missing []edge
}

// planOf works out the plan of an example, given what the pipeline renders
// without the function (baseline) and the observed resources. The examples
// give patch-and-transform no readiness checks, so no earlier step says a
// resource is ready: the observed Ready condition decides.
func planOf(t *testing.T, ex example, baseline map[string]doc, observed []doc) plan {
	t.Helper()
	g := edgesOf(t, baseline, observed, ex.required, ex.xr, &ex.input)
	o := g.oracle
	// The render checks compare the step's results exactly, and model the
	// messages of the Normal ones and of WaitingTooLong only.
	for _, r := range o.Results() {
		if r.Severity != oracle.Normal && r.Reason != "WaitingTooLong" {
			t.Fatalf("example %s: the function must report %s %s, whose message the render tests don't model (external references %+v, stale finalizers %+v, problems %+v, unmatched %+v, impossible Usages %+v, cycles %v)",
				ex.name, r.Severity, r.Reason, o.External, o.Stale, o.Problems, o.Unmatched, o.Impossible, o.CyclePaths())
		}
	}
	if !o.Writes() {
		t.Fatalf("example %s: the function must leave desired state alone, which the render tests don't model", ex.name)
	}
	p := plan{graph: g, heldBack: o.HeldBack, references: map[string][]any{}}
	for name := range p.heldBack {
		if o.Nodes[name].Observed {
			t.Fatalf("the plan holds back %s, which exists: leaving it out would delete it", name)
		}
	}
	for name, refs := range o.References {
		for _, r := range refs {
			p.references[name] = append(p.references[name], r.DependsOn())
		}
	}
	for _, u := range o.Usages {
		p.usages = append(p.usages, u.Manifest())
	}
	for _, e := range g.declared {
		if !o.Nodes[e.target].Carries(e.finalizer) {
			p.missing = append(p.missing, e)
		}
	}
	return p
}

// results are the results the function's step must report, in order: the
// Summary when the function changes what is observed, then the held-back
// resources. planOf made sure there is no other.
func (p plan) results(step string) []result {
	var rs []result
	if p.oracle.Changes() {
		rs = append(rs, result{step: step, severity: severityNormal, reason: "Summary", message: p.oracle.SummaryMessage()})
	}
	if len(p.heldBack) > 0 {
		var items []string
		for _, name := range slices.Sorted(maps.Keys(p.heldBack)) {
			items = append(items, fmt.Sprintf("%s (%s)", name, p.heldBack[name]))
		}
		rs = append(rs, result{step: step, severity: severityNormal, reason: "HeldBack",
			message: "resources are held back from creation until their dependencies allow: " + oracle.List(items)})
	}
	if len(p.oracle.Waiting) > 0 {
		rs = append(rs, result{step: step, severity: severityWarning, reason: "WaitingTooLong", message: p.oracle.WaitingMessage()})
	}
	return rs
}

// condition is the XR's DeletionOrdered condition the rules give: pending
// while an observed target lacks a declared finalizer or a dependent doesn't
// exist yet, naming those edges; else protected.
func (p plan) condition() (status, reason, message string) {
	c := p.oracle.Condition
	status = "False"
	if c.Status {
		status = "True"
	}
	return status, c.Reason, p.oracle.ConditionMessage()
}
