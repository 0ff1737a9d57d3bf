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
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
)

// Function declares, on every referenced composed resource, the reference
// finalizer of every live provider-kubernetes Object that references it.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

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

	resources, invalid := composedResources(req)
	plan := protection.Make(resources, protection.Options{BreakCycles: in.OnCycle == v1beta1.CycleWarning})
	facts := report.Facts{
		Plan:        plan,
		Invalid:     invalid,
		Enforce:     in.Mode == v1beta1.ModeEnforce,
		CyclesFatal: in.OnCycle == v1beta1.CycleFatal,
	}
	log.Debug("Planned reference finalizers", "resources", plan.Resources, "edges", len(plan.Edges),
		"external", len(plan.External), "declared", plan.Declared, "changed", len(plan.Additions), "cycles", len(plan.Cycles))

	condition, results := report.Make(facts)

	// A fatal cycle fails the step, and Report mode only reports: in both,
	// desired state stays as the earlier steps left it.
	failed := facts.CyclesFatal && len(plan.Cycles) > 0
	if facts.Enforce && !failed {
		for _, name := range slices.Sorted(maps.Keys(plan.Additions)) {
			if err := declareFinalizers(rsp.GetDesired().GetResources()[name], plan.Additions[name]); err != nil {
				// Leaving the resource as it is is the only way not to damage it.
				err = errors.Wrapf(err, "cannot declare reference finalizers on composed resource %q", name)
				results = append(results, report.Result{Severity: report.Warning, Reason: report.ReasonInvalidResource, Message: err.Error()})
				continue
			}
			log.Debug("Declared reference finalizers", "composed-resource-name", name, "finalizers", plan.Additions[name])
		}
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
	return rsp, nil
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
