package main

import (
	"context"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

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

	c := composedResources(req, in.References == v1beta1.ReferencesInfer, len(in.Dependencies) > 0)
	rsp.Requirements = c.lookout.requirements(xr)
	d := decide(in, refOf(xr), c)
	log.Debug("Planned dependencies", "resources", d.plan.Resources, "edges", len(d.plan.Edges), "external", len(d.plan.External),
		"declared", d.plan.Declared, "held-back", len(d.plan.HeldBack), "usages", len(d.usages), "cycles", len(d.plan.Cycles))
	d.writeTo(rsp, log)
	return rsp, nil
}

// A decision is everything the function decided about one request: the
// graph work, between reading the request and writing the response.
type decision struct {
	plan      protection.Plan
	usages    map[string]map[string]any
	condition report.Condition
	results   []report.Result
	// writeDesired is false when desired state must stay as the earlier
	// steps left it.
	writeDesired bool
	// The graph in the context shows the resources, and in Report mode
	// (enforce false) what the plan would declare as missing.
	resources []protection.Resource
	enforce   bool
	// xrUID labels the dependents, so that the function finds them while
	// Crossplane deletes them.
	xrUID string
}

// decide computes the dependency graph of the composed resources, in name
// order as composedResources returns them, the finalizers and Usages that
// protect its edges, and what to report. It reads only its arguments.
func decide(in *v1beta1.Input, xr usage.Ref, c composition) decision {
	resources := c.resources
	unmatched := dependOn(resources, in.Dependencies)
	o := options(in)
	o.ObservedUsages = c.usages
	plan := protection.Make(resources, o)
	// A resource read from what the function asked for is one Crossplane is
	// deleting: the function reports stale finalizers only on what the
	// composition observes.
	plan.Stale = slices.DeleteFunc(plan.Stale, func(s protection.Stale) bool { return c.going[s.Resource] })
	edges, late := usageEdges(plan, resources)
	usages, unusable := usage.Write(string(in.UsageAPI), xr, edges)
	for _, u := range unusable {
		plan.Unprotect(u.Edge.Key)
	}
	// An edge no Usage can express is reported so, even when its target is
	// being deleted; one that could be is too late for its Usage.
	for _, key := range late {
		delete(usages, key)
	}
	facts := report.Facts{
		Plan:        plan,
		Invalid:     c.invalid,
		Unmatched:   unmatched,
		Unusable:    unusable,
		Enforce:     in.Mode == v1beta1.ModeEnforce,
		CyclesFatal: in.OnCycle == v1beta1.CycleFatal,
	}
	condition, results := report.Make(facts)
	// A fatal cycle fails the step, and Report mode only reports: in both,
	// desired state stays as the earlier steps left it.
	failed := facts.CyclesFatal && len(plan.Cycles) > 0
	return decision{
		plan:         plan,
		usages:       usages,
		condition:    condition,
		results:      results,
		writeDesired: facts.Enforce && !failed,
		resources:    resources,
		enforce:      facts.Enforce,
		xrUID:        xr.UID,
	}
}

// writeTo writes the decision into the response: desired state, the
// condition, the results and the graph in the context.
func (d decision) writeTo(rsp *fnv1.RunFunctionResponse, log logging.Logger) {
	results := d.results
	if d.writeDesired {
		results = append(results, write(rsp.GetDesired(), d.plan, d.usages, log)...)
		if err := labelDependents(rsp.GetDesired(), d.plan, d.xrUID); err != nil {
			results = append(results, report.Result{Severity: report.Warning, Reason: report.ReasonInvalidResource, Message: err.Error()})
		}
	}
	setCondition(rsp, d.condition)
	for _, r := range results {
		rsp.Results = append(rsp.Results, &fnv1.Result{
			Severity: severities[r.Severity],
			Reason:   &r.Reason,
			Message:  r.Message,
			Target:   fnv1.Target_TARGET_COMPOSITE.Enum(),
		})
	}
	response.SetContextKey(rsp, GraphContextKey, graphValue(view.Of(d.plan, d.resources, d.enforce)))
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
		// The references are read all the same, so that a dependency the
		// input declares is not written twice.
		IgnoreReferences: in.References == v1beta1.ReferencesIgnore,
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
// both exist; and the keys of those among them whose target is being deleted
// already, too late for a Usage. The resources are in name order.
func usageEdges(plan protection.Plan, resources []protection.Resource) (edges []usage.Edge, late []string) {
	ref := func(name string) usage.Ref {
		i, _ := slices.BinarySearchFunc(resources, name, func(r protection.Resource, name string) int { return strings.Compare(r.Name, name) })
		r := resources[i]
		return usage.Ref{APIVersion: r.APIVersion, Kind: r.Identity.Kind, Namespace: r.Identity.Namespace, Name: r.Identity.Name}
	}
	exists := func(s protection.EdgeState) bool {
		return s == protection.Declared || s == protection.Protected || s == protection.TargetDeleting
	}
	for _, e := range plan.Edges {
		if e.Protection == protection.ByUsage && exists(e.State) {
			edges = append(edges, usage.Edge{Key: e.Usage, Dependent: e.Dependent, Dependency: e.Target, By: ref(e.Dependent), Of: ref(e.Target)})
			if e.State == protection.TargetDeleting {
				late = append(late, e.Usage)
			}
		}
	}
	for _, e := range plan.External {
		if e.Protection == protection.ByUsage && exists(e.State) {
			t := e.Target
			of := usage.Ref{APIVersion: t.APIVersion, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name}
			edges = append(edges, usage.Edge{Key: e.Usage, Dependent: e.Dependent, Dependency: report.Describe(t), By: ref(e.Dependent), Of: of})
		}
	}
	return edges, late
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
