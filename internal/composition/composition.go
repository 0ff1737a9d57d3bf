// Package composition is the function's Composition step: it reads the
// composed resources, builds the graph of their dependencies, decides by the
// rules what protects each edge, writes that into desired state, and
// reports.
package composition

import (
	"maps"
	"slices"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/infer"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/order"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// Run answers a Composition step's request into rsp.
func Run(in *v1beta1.Input, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, log logging.Logger) {
	c := request.ReadComposition(req)
	xr := c.Composite
	log = log.WithValues("xr-apiversion", xr.APIVersion(), "xr-kind", xr.Kind(), "xr-name", xr.Name())
	rd := readComposed(c, in)
	rsp.Requirements = rd.lookout.requirements(xr)
	p := decide(in, ownerOf(xr), rd)
	log.Debug("Planned dependencies", "summary", p.Report.Summary, "held-back", len(p.HeldBack), "usages", len(p.Usages.Usages))
	p.writeTo(rsp, log)
}

// A Plan is everything the step decided about one request.
type Plan struct {
	input      *v1beta1.Input
	xr         composite
	Graph      *graph.Graph
	Finalizers finalizer.Plan
	Usages     usage.Plan
	References explicit.References
	HeldBack   map[string]string
	Report     report.Report
	// Invalid are the references that could not be read.
	Invalid []report.InvalidReference
}

// Decide decides about a request's composed resources as the step does,
// without writing anything: what the graph doctor shows.
func Decide(in *v1beta1.Input, req *fnv1.RunFunctionRequest) Plan {
	c := request.ReadComposition(req)
	return decide(in, ownerOf(c.Composite), readComposed(c, in))
}

// decide decides, from the composed resources alone, in this order: the graph
// of their dependencies, the finalizers that protect its edges, the Usages
// that protect those no finalizer can, which resources are not created yet,
// and what to report. No step changes what an earlier one decided.
func decide(in *v1beta1.Input, xr composite, rd read) Plan {
	resources, unmatched := dependOn(rd.resources, in.Dependencies)
	resources, notInferred := inferred(resources, rd.inferFrom, in)
	g := graph.New(resources, graph.Options{
		// The references are read all the same, so that a dependency the
		// input declares is not written twice.
		IgnoreReferences: in.References == v1beta1.ReferencesIgnore,
		BreakCycles:      in.OnCycle == v1beta1.CycleWarning,
	})
	fin, use := protect(g, in, xr.Ref, rd.usages, usage.ComposedEdges(g, rd.composedUsages, rd.labelsOf(g)))
	refs := explicit.Referencing(g)
	held := order.HeldBack(g, refs.Unnamed, in.Creation == v1beta1.CreationWaitForReady)
	rep := report.Of(report.Facts{
		Graph: g, Finalizers: fin, Usages: use, References: refs, HeldBack: held,
		Invalid: rd.invalid, Unmatched: unmatched, NotInferred: notInferred,
		Enforce: in.Mode == v1beta1.ModeEnforce, CyclesFatal: in.OnCycle == v1beta1.CycleFatal,
	})
	return Plan{input: in, xr: xr, Graph: g, Finalizers: fin, Usages: use, References: refs, HeldBack: held, Report: rep, Invalid: rd.invalid}
}

// protect decides what protects each edge: the finalizers, and the Usages.
// Where Usages replace finalizers (protection: Usages), an edge's finalizer
// gives way once its Usage is in force; where finalizers replace Usages,
// an edge's Usage stays until its finalizer is carried. Either way, switching
// a live composite from one to the other leaves no edge unprotected.
func protect(g *graph.Graph, in *v1beta1.Input, xr objectref.Ref, observed map[string]map[string]any, composed map[usage.Ends]bool) (finalizer.Plan, usage.Plan) {
	o := usage.Options{Policy: usagePolicy(in), API: string(in.UsageAPI), Owner: xr, Observed: observed, Composed: composed}
	switch in.ObjectEdges() {
	case v1beta1.ProtectionUsages:
		o.Objects = usage.Instead
		use := usage.Decide(g, o)
		fin := finalizer.Declare(g, func(i int) finalizer.Yield {
			s, ok := use.States[i]
			switch {
			case !ok:
				return finalizer.Keep // No Usage can express the edge.
			case s.Holds() && g.Resources[g.Edges[i].To].Observed.InUse:
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
		o.HandOver = func(i int) bool { return !fin.States[i].Holds() }
		return fin, usage.Decide(g, o)
	}
}

// usagePolicy is which edges no finalizer protects the input has Usages
// protect. A step that writes Usages at all (infer, protection: Usages or
// Both, usages other than Disabled) protects with one every edge it declares
// that no finalizer can: there the user's stack is known to take Usages.
// Without, those edges stay unprotected and are reported: Usages by default
// would fail a composite that works today where the default usageAPI names
// a kind the cluster doesn't serve (Crossplane v1), or Crossplane's Usage
// webhook doesn't run.
func usagePolicy(in *v1beta1.Input) usage.Policy {
	switch {
	case in.Usages == v1beta1.UsagesExternal || in.Usages == v1beta1.UsagesAll || in.Usages == v1beta1.UsagesEvery:
		return usage.External
	case len(in.Infer) > 0 || in.ObjectEdges() == v1beta1.ProtectionUsages || in.ObjectEdges() == v1beta1.ProtectionBoth:
		return usage.Declared
	default:
		return usage.None
	}
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

// inferred returns the resources with the dependencies inference finds, of
// the kinds the input asks for, leaving those it is given as they are, and
// how many reference fields it found no single target for.
func inferred(resources []graph.Resource, from []infer.Resource, in *v1beta1.Input) ([]graph.Resource, int) {
	found := infer.Edges(from, infer.Kinds{
		ProviderConfigs:   in.Infers(v1beta1.InferProviderConfigs),
		Credentials:       in.Infers(v1beta1.InferCredentials),
		ManagedReferences: in.Infers(v1beta1.InferManagedReferences),
	})
	edges := found.Edges
	if len(edges) == 0 {
		return resources, len(found.Unidentified)
	}
	byName := make(map[string]int, len(resources))
	resources = slices.Clone(resources)
	for i, r := range resources {
		byName[r.Name] = i
	}
	for _, e := range edges {
		r := &resources[byName[e.Dependent]]
		r.Inferred = append(r.Inferred, graph.Inferred{Target: e.Target, Via: e.Via})
	}
	return resources, len(found.Unidentified)
}

// A composite names the composite: as the owner of its Usages, and by UID
// in the labels of its dependents.
type composite struct {
	objectref.Ref
	UID string
}

// ownerOf names the composite.
func ownerOf(xr request.Object) composite {
	return composite{Ref: objectref.Ref{APIVersion: xr.APIVersion(), Kind: xr.Kind(), Namespace: xr.Namespace(), Name: xr.Name()}, UID: xr.UID()}
}

// writeTo writes the plan into the response: desired state, the condition,
// the results and, when asked for, the graph in the context. A fatal cycle
// fails the step, and Report mode only reports: in both, desired state stays
// as the earlier steps left it.
func (p Plan) writeTo(rsp *fnv1.RunFunctionResponse, log logging.Logger) {
	results := p.Report.Results
	failed := p.input.OnCycle == v1beta1.CycleFatal && len(p.Graph.Cycles) > 0
	if p.input.Mode == v1beta1.ModeEnforce && !failed {
		results = append(results, p.write(request.DesiredOf(rsp.GetDesired()), log)...)
	}
	setCondition(rsp, p.Report.Condition)
	for _, r := range results {
		rsp.Results = append(rsp.Results, &fnv1.Result{
			Severity: severities[r.Severity],
			Reason:   &r.Reason,
			Message:  r.Message,
			Target:   fnv1.Target_TARGET_COMPOSITE.Enum(),
		})
	}
	if p.input.Graph == v1beta1.GraphContext {
		edges, external := report.EdgesOf(p.Graph, p.Finalizers, p.Usages)
		v, err := request.Value(view.Of(p.Graph, edges, external, p.HeldBack, p.input.Mode == v1beta1.ModeEnforce))
		if err != nil {
			response.Warning(rsp, errors.Wrap(err, "cannot write the graph")).TargetComposite()
			return
		}
		response.SetContextKey(rsp, protocol.GraphContextKey, v)
	}
}

// write changes desired state as the plan says: it holds resources back,
// writes the references Objects need, declares finalizers, adds Usages and
// labels the dependents. A resource it can't change without damaging it is
// left as it is, with a warning.
func (p Plan) write(desired request.Desired, log logging.Logger) []report.Result {
	var warnings []report.Result
	warn := func(err error) {
		warnings = append(warnings, report.Result{Severity: report.Warning, Reason: report.ReasonInvalidResource, Message: err.Error()})
	}
	for _, name := range slices.Sorted(maps.Keys(p.HeldBack)) {
		desired.Remove(name)
		log.Debug("Held back", "composed-resource-name", name, "reason", p.HeldBack[name])
	}
	// A held-back resource is written when it is released.
	for _, name := range slices.Sorted(maps.Keys(p.References.Write)) {
		if p.HeldBack[name] != "" {
			continue
		}
		if err := desired.WriteReferences(name, p.References.Write[name]); err != nil {
			warn(errors.Wrapf(err, "cannot write the references of composed resource %q", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Finalizers.Additions)) {
		if p.HeldBack[name] != "" {
			continue
		}
		if err := desired.DeclareFinalizers(name, p.Finalizers.Additions[name]); err != nil {
			warn(errors.Wrapf(err, "cannot declare reference finalizers on composed resource %q", name))
			continue
		}
		log.Debug("Declared reference finalizers", "composed-resource-name", name, "finalizers", p.Finalizers.Additions[name])
	}
	for _, name := range slices.Sorted(maps.Keys(p.Usages.Usages)) {
		if err := desired.Add(name, p.Usages.Usages[name]); err != nil {
			warn(errors.Wrapf(err, "cannot add the Usage %q", name))
		}
	}
	for _, err := range p.labelDependents(desired) {
		warn(err)
	}
	return warnings
}

// labelDependents labels every desired Object that depends on another, held
// back or not, with the composite's UID (protocol.DependentLabel), and every
// desired resource an Object of another group than the composite's own
// depends on with protocol.DependentGroupLabel. A resource it can't label is
// an error of its own: the others are labelled all the same. With
// protection: Usages, every Object with an edge to another composed resource
// gets protocol.ProtectionLabel too.
func (p Plan) labelDependents(desired request.Desired) []error {
	if p.xr.UID == "" {
		return nil
	}
	byUsages := p.input.ObjectEdges() == v1beta1.ProtectionUsages
	own := protocol.OwnObjectGroup(p.xr.Namespace != "")
	labels := map[string]map[string]string{}
	label := func(name, key, value string) {
		if labels[name] == nil {
			labels[name] = map[string]string{}
		}
		labels[name][key] = value
	}
	for _, e := range p.Graph.Edges {
		label(e.Dependent, protocol.DependentLabel, p.xr.UID)
		d := p.Graph.Resource(e.Dependent)
		if d.IsObject && d.Identity.Group != own {
			label(e.Target, protocol.DependentGroupLabel, d.Identity.Group)
		}
		if d.IsObject && byUsages {
			label(e.Dependent, protocol.ProtectionLabel, protocol.ProtectedByUsages)
		}
	}
	for _, e := range p.Graph.External {
		label(e.Dependent, protocol.DependentLabel, p.xr.UID)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		r := desired.Object(name)
		if !desired.Has(name) {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(labels[name])) {
			v := labels[name][key]
			if (key == protocol.DependentLabel && !r.IsObject()) || r.Label(key) == v {
				continue
			}
			if err := desired.SetLabel(name, key, v); err != nil {
				errs = append(errs, errors.Wrapf(err, "cannot label composed resource %q", name))
				break
			}
		}
	}
	return errs
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
