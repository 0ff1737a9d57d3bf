package main

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/order"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// Function declares, on every referenced composed resource, the reference
// finalizer of every live provider-kubernetes Object that references it.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// GraphContextKey is the pipeline context key under which the function
// writes the dependency graph as JSON, with graph: Context.
const GraphContextKey = "dependencies.fn.crossplane.io/graph"

// RunFunction runs the Function.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	in, err := readInput(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "invalid function input"))
		return rsp, nil
	}
	if req.GetObserved().GetComposite() == nil {
		// Only an Operation calls with no composite.
		f.runOperation(req, rsp, in)
		return rsp, nil
	}
	xr := req.GetObserved().GetComposite().GetResource()
	log := f.log.WithValues("xr-apiversion", text(xr, "apiVersion"), "xr-kind", text(xr, "kind"), "xr-name", text(xr, "metadata", "name"))

	c := composedResources(req, in.References == v1beta1.ReferencesInfer, len(in.Dependencies) > 0)
	rsp.Requirements = c.lookout.requirements(xr)
	p := decide(in, refOf(xr), c)
	log.Debug("Planned dependencies", "summary", p.report.Summary, "held-back", len(p.heldBack), "usages", len(p.usages.Usages))
	p.writeTo(rsp, log)
	return rsp, nil
}

// A plan is everything the function decided about one request.
type plan struct {
	input      *v1beta1.Input
	xrUID      string
	graph      *graph.Graph
	finalizers finalizer.Plan
	usages     usage.Plan
	references explicit.References
	heldBack   map[string]string
	report     report.Report

	// xrNamespaced tells whether the composite is namespaced: Objects of
	// the other group are remembered on what they depend on.
	xrNamespaced bool
}

// decide decides, from the composed resources alone, in this order: the graph
// of their dependencies, the finalizers that protect its edges, the Usages
// that protect those no finalizer can, which resources are not created yet,
// and what to report. No step changes what an earlier one decided.
func decide(in *v1beta1.Input, xr compositeRef, c composition) plan {
	resources, unmatched := dependOn(c.resources, in.Dependencies)
	g := graph.New(resources, graph.Options{
		// The references are read all the same, so that a dependency the
		// input declares is not written twice.
		IgnoreReferences: in.References == v1beta1.ReferencesIgnore,
		BreakCycles:      in.OnCycle == v1beta1.CycleWarning,
	})
	fin, use := protect(g, in, xr.Ref, c.usages)
	refs := explicit.Referencing(g)
	held := order.HeldBack(g, refs.Unnamed, in.Creation == v1beta1.CreationWaitForReady)
	rep := report.Of(report.Facts{
		Graph: g, Finalizers: fin, Usages: use, References: refs, HeldBack: held,
		Invalid: c.invalid, Unmatched: unmatched,
		Enforce: in.Mode == v1beta1.ModeEnforce, CyclesFatal: in.OnCycle == v1beta1.CycleFatal,
	})
	return plan{input: in, xrUID: xr.UID, xrNamespaced: xr.Namespace != "", graph: g, finalizers: fin, usages: use, references: refs, heldBack: held, report: rep}
}

// protect decides what protects each edge: the finalizers, and the Usages.
// Where Usages replace finalizers (protection: Usages), an edge's finalizer
// gives way once its Usage is in force; where finalizers replace Usages,
// an edge's Usage stays until its finalizer is carried. Either way, switching
// a live composite from one to the other leaves no edge unprotected.
func protect(g *graph.Graph, in *v1beta1.Input, xr objectref.Ref, observed map[string]map[string]any) (finalizer.Plan, usage.Plan) {
	o := usage.Options{Policy: usagePolicies[in.Usages], API: string(in.UsageAPI), Owner: xr, Observed: observed}
	switch in.ObjectEdges() {
	case v1beta1.ProtectionUsages:
		o.Objects = usage.Instead
		use := usage.Decide(g, o)
		fin := finalizer.Declare(g, func(i int) finalizer.Yield {
			s, ok := use.States[i]
			switch {
			case !ok:
				return finalizer.Keep // No Usage can express the edge.
			case s == graph.Protected && g.Resources[g.Edges[i].To].Observed.InUse:
				return finalizer.Yielded
			default:
				return finalizer.HandOver
			}
		})
		return fin, use
	case v1beta1.ProtectionBoth:
		o.Objects = usage.Too
		return finalizer.Declare(g, nil), usage.Decide(g, o)
	default:
		fin := finalizer.Declare(g, nil)
		o.HandOver = func(i int) bool { return fin.States[i] != graph.Protected }
		return fin, usage.Decide(g, o)
	}
}

var usagePolicies = map[v1beta1.UsagePolicy]usage.Policy{
	v1beta1.UsagesDisabled: usage.None, v1beta1.UsagesExternal: usage.External, v1beta1.UsagesAll: usage.All,
	v1beta1.UsagesEvery: usage.All,
}

// writeTo writes the plan into the response: desired state, the condition,
// the results and, when asked for, the graph in the context. A fatal cycle
// fails the step, and Report mode only reports: in both, desired state stays
// as the earlier steps left it.
func (p plan) writeTo(rsp *fnv1.RunFunctionResponse, log logging.Logger) {
	results := p.report.Results
	failed := p.input.OnCycle == v1beta1.CycleFatal && len(p.graph.Cycles) > 0
	if p.input.Mode == v1beta1.ModeEnforce && !failed {
		results = append(results, p.write(rsp.GetDesired(), log)...)
	}
	setCondition(rsp, p.report.Condition)
	for _, r := range results {
		rsp.Results = append(rsp.Results, &fnv1.Result{
			Severity: severities[r.Severity],
			Reason:   &r.Reason,
			Message:  r.Message,
			Target:   fnv1.Target_TARGET_COMPOSITE.Enum(),
		})
	}
	if p.input.Graph == v1beta1.GraphContext {
		edges, external := report.EdgesOf(p.graph, p.finalizers, p.usages)
		g := view.Of(p.graph, edges, external, p.heldBack, p.input.Mode == v1beta1.ModeEnforce)
		v, err := graphValue(g)
		if err != nil {
			response.Warning(rsp, err).TargetComposite()
			return
		}
		response.SetContextKey(rsp, GraphContextKey, v)
	}
}

// write changes desired state as the plan says: it holds resources back,
// writes the references Objects need, declares finalizers, adds Usages and
// labels the dependents. A resource it can't change without damaging it is
// left as it is, with a warning.
func (p plan) write(desired *fnv1.State, log logging.Logger) []report.Result {
	var warnings []report.Result
	warn := func(err error) {
		warnings = append(warnings, report.Result{Severity: report.Warning, Reason: report.ReasonInvalidResource, Message: err.Error()})
	}
	for _, name := range slices.Sorted(maps.Keys(p.heldBack)) {
		delete(desired.GetResources(), name)
		log.Debug("Held back", "composed-resource-name", name, "reason", p.heldBack[name])
	}
	// A held-back resource is written when it is released.
	for _, name := range slices.Sorted(maps.Keys(p.references.Write)) {
		if p.heldBack[name] != "" {
			continue
		}
		if err := writeReferences(desired.GetResources()[name], p.references.Write[name]); err != nil {
			warn(errors.Wrapf(err, "cannot write the references of composed resource %q", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.finalizers.Additions)) {
		if p.heldBack[name] != "" {
			continue
		}
		if err := declareFinalizers(desired.GetResources()[name], p.finalizers.Additions[name]); err != nil {
			warn(errors.Wrapf(err, "cannot declare reference finalizers on composed resource %q", name))
			continue
		}
		log.Debug("Declared reference finalizers", "composed-resource-name", name, "finalizers", p.finalizers.Additions[name])
	}
	for _, name := range slices.Sorted(maps.Keys(p.usages.Usages)) {
		if err := addUsage(desired, name, p.usages.Usages[name]); err != nil {
			warn(errors.Wrapf(err, "cannot add the Usage %q", name))
		}
	}
	for _, err := range labelDependents(desired, p.graph, p.xrUID, p.xrNamespaced, p.input.ObjectEdges() == v1beta1.ProtectionUsages) {
		warn(err)
	}
	return warnings
}

// dependOn returns the resources with the dependencies the input declares,
// leaving those it is given as they are, and the entries that match no
// resource.
func dependOn(resources []graph.Resource, dependencies []v1beta1.Dependency) ([]graph.Resource, []explicit.Unmatched) {
	if len(dependencies) == 0 {
		return resources, nil
	}
	rules := make([]explicit.Rule, len(dependencies))
	for i, d := range dependencies {
		rules[i] = explicit.Rule{Resource: d.Resource, DependsOn: d.DependsOn}
	}
	names := make([]string, len(resources))
	for i, r := range resources {
		names[i] = r.Name
	}
	dependsOn, unmatched := explicit.Resolve(rules, names)
	resources = slices.Clone(resources)
	for i := range resources {
		resources[i].DependsOn = dependsOn[resources[i].Name]
	}
	return resources, unmatched
}

// readInput decodes the step's input, which is optional.
func readInput(req *fnv1.RunFunctionRequest) (*v1beta1.Input, error) {
	var data []byte
	if req.GetInput() != nil {
		var err error
		if data, err = protojson.Marshal(req.GetInput()); err != nil {
			return nil, errors.Wrap(err, "cannot encode the input as JSON")
		}
	}
	return v1beta1.Decode(data)
}

var severities = map[report.Severity]fnv1.Severity{
	report.Normal:  fnv1.Severity_SEVERITY_NORMAL,
	report.Warning: fnv1.Severity_SEVERITY_WARNING,
	report.Fatal:   fnv1.Severity_SEVERITY_FATAL,
}

func setCondition(rsp *fnv1.RunFunctionResponse, c report.Condition) {
	set := response.ConditionFalse
	if c.Status {
		set = response.ConditionTrue
	}
	set(rsp, report.ConditionType, c.Reason).WithMessage(c.Message).TargetComposite()
}
