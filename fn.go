package main

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
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
// writes the dependency graph as JSON, for later steps to read.
const GraphContextKey = "dependencies.fn.crossplane.io/graph"

// RunFunction runs the Function.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	in, err := readInput(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "invalid function input"))
		return rsp, nil
	}
	xr := req.GetObserved().GetComposite().GetResource()
	log := f.log.WithValues("xr-apiversion", text(xr, "apiVersion"), "xr-kind", text(xr, "kind"), "xr-name", text(xr, "metadata", "name"))

	resources, invalid := composedResources(req, in.References == v1beta1.ReferencesInfer)
	unmatched := dependOn(resources, in.Dependencies)
	plan := protection.Make(resources, options(in))
	usages, unusable := usage.Write(string(in.UsageAPI), refOf(xr), usageEdges(plan, resources))
	for _, u := range unusable {
		plan.Unprotect(u.Edge.Key)
	}
	facts := report.Facts{
		Plan:        plan,
		Invalid:     invalid,
		Unmatched:   unmatched,
		Unusable:    unusable,
		Enforce:     in.Mode == v1beta1.ModeEnforce,
		CyclesFatal: in.OnCycle == v1beta1.CycleFatal,
	}
	log.Debug("Planned dependencies", "resources", plan.Resources, "edges", len(plan.Edges), "external", len(plan.External),
		"declared", plan.Declared, "held-back", len(plan.HeldBack), "usages", len(usages), "cycles", len(plan.Cycles))

	condition, results := report.Make(facts)

	// A fatal cycle fails the step, and Report mode only reports: in both,
	// desired state stays as the earlier steps left it.
	failed := facts.CyclesFatal && len(plan.Cycles) > 0
	if facts.Enforce && !failed {
		results = append(results, write(rsp.GetDesired(), plan, usages, log)...)
	}

	setCondition(rsp, condition)
	for _, r := range results {
		rsp.Results = append(rsp.Results, &fnv1.Result{
			Severity: severities[r.Severity],
			Reason:   &r.Reason,
			Message:  r.Message,
			Target:   fnv1.Target_TARGET_COMPOSITE.Enum(),
		})
	}
	response.SetContextKey(rsp, GraphContextKey, graphValue(view.Of(plan, resources, facts.Enforce)))
	return rsp, nil
}

// write changes desired state as the plan says: it holds resources back,
// writes the references Objects need, declares finalizers and adds Usages.
// A resource it can't change without damaging it is left as it is, with a
// warning.
func write(desired *fnv1.State, plan protection.Plan, usages map[string]map[string]any, log logging.Logger) []report.Result {
	var warnings []report.Result
	warn := func(err error, what, name string) {
		err = errors.Wrapf(err, "cannot %s composed resource %q", what, name)
		warnings = append(warnings, report.Result{Severity: report.Warning, Reason: report.ReasonInvalidResource, Message: err.Error()})
	}
	for _, name := range slices.Sorted(maps.Keys(plan.HeldBack)) {
		delete(desired.GetResources(), name)
		log.Debug("Held back", "composed-resource-name", name, "reason", plan.HeldBack[name])
	}
	// A held-back resource is written when it is released.
	for _, name := range slices.Sorted(maps.Keys(plan.References)) {
		if plan.HeldBack[name] != "" {
			continue
		}
		if err := writeReferences(desired.GetResources()[name], plan.References[name]); err != nil {
			warn(err, "write the references of", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(plan.Additions)) {
		if plan.HeldBack[name] != "" {
			continue
		}
		if err := declareFinalizers(desired.GetResources()[name], plan.Additions[name]); err != nil {
			warn(err, "declare reference finalizers on", name)
			continue
		}
		log.Debug("Declared reference finalizers", "composed-resource-name", name, "finalizers", plan.Additions[name])
	}
	for _, name := range slices.Sorted(maps.Keys(usages)) {
		if err := addUsage(desired, name, usages[name]); err != nil {
			warn(err, "add the Usage", name)
		}
	}
	return warnings
}

func options(in *v1beta1.Input) protection.Options {
	return protection.Options{
		BreakCycles:  in.OnCycle == v1beta1.CycleWarning,
		Usages:       map[v1beta1.UsagePolicy]protection.UsagePolicy{v1beta1.UsagesDisabled: protection.NoUsages, v1beta1.UsagesExternal: protection.ExternalUsages, v1beta1.UsagesAll: protection.AllUsages}[in.Usages],
		WaitForReady: in.Creation == v1beta1.CreationWaitForReady,
	}
}

// dependOn sets the dependencies the input declares on the resources, and
// returns the entries that match no resource.
func dependOn(resources []protection.Resource, dependencies []v1beta1.Dependency) []explicit.Unmatched {
	if len(dependencies) == 0 {
		return nil
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
	for i := range resources {
		resources[i].DependsOn = dependsOn[resources[i].Name]
	}
	return unmatched
}

// usageEdges returns the edges a Usage must protect now: those whose ends
// both exist.
func usageEdges(plan protection.Plan, resources []protection.Resource) []usage.Edge {
	byName := make(map[string]*protection.Resource, len(resources))
	for i := range resources {
		byName[resources[i].Name] = &resources[i]
	}
	ref := func(r *protection.Resource) usage.Ref {
		return usage.Ref{APIVersion: r.APIVersion, Kind: r.Identity.Kind, Namespace: r.Identity.Namespace, Name: r.Identity.Name}
	}
	exists := func(s protection.EdgeState) bool { return s == protection.Declared || s == protection.Protected }
	var edges []usage.Edge
	for _, e := range plan.Edges {
		if e.Protection == protection.ByUsage && exists(e.State) {
			edges = append(edges, usage.Edge{Key: e.Usage, Dependent: e.Dependent, Dependency: e.Target, By: ref(byName[e.Dependent]), Of: ref(byName[e.Target])})
		}
	}
	for _, e := range plan.External {
		if e.Protection == protection.ByUsage && exists(e.State) {
			t := e.Target
			of := usage.Ref{APIVersion: t.APIVersion, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name}
			edges = append(edges, usage.Edge{Key: e.Usage, Dependent: e.Dependent, Dependency: report.Describe(t), By: ref(byName[e.Dependent]), Of: of})
		}
	}
	return edges
}

// graphValue encodes the graph as its JSON form, for the context. It builds
// the struct directly: through json.Marshal and protojson.Unmarshal it took as
// long as the rest of RunFunction. TestGraphValue checks that both agree.
func graphValue(g view.Graph) *structpb.Value {
	str := structpb.NewStringValue
	object := func(fields map[string]*structpb.Value) *structpb.Value {
		return structpb.NewStructValue(&structpb.Struct{Fields: fields})
	}
	// JSON encodes a nil slice as null.
	list := func(values []*structpb.Value) *structpb.Value {
		if values == nil {
			return structpb.NewNullValue()
		}
		return structpb.NewListValue(&structpb.ListValue{Values: values})
	}
	var nodes, edges []*structpb.Value
	if g.Nodes != nil {
		nodes = make([]*structpb.Value, len(g.Nodes))
	}
	for i, n := range g.Nodes {
		nodes[i] = object(map[string]*structpb.Value{"name": str(n.Name), "kind": str(n.Kind), "scope": str(n.Scope), "state": str(n.State)})
	}
	if g.Edges != nil {
		edges = make([]*structpb.Value, len(g.Edges))
	}
	for i, e := range g.Edges {
		edges[i] = object(map[string]*structpb.Value{"from": str(e.From), "to": str(e.To), "origin": str(e.Origin), "protection": str(e.Protection), "state": str(e.State)})
	}
	return object(map[string]*structpb.Value{"nodes": list(nodes), "edges": list(edges)})
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
