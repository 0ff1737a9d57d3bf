package composition

// The step's output: the condition and results on the composite, and the
// graph in the pipeline's context.

import (
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/output/report"
	"github.com/crossplane-contrib/function-dependencies/internal/output/view"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

// writeTo writes the plan into the response: desired state, the condition,
// the results and, when asked for, the graph in the context. A fatal cycle
// fails the step, and Report mode only reports: in both, desired state stays
// as the earlier steps left it.
func (p Plan) writeTo(rsp *fnv1.RunFunctionResponse, log logging.Logger) {
	results := p.Report.Results
	failed := p.input.OnCycle == v1beta1.CycleFatal && len(p.Graph.Cycles) > 0
	if p.input.Mode == v1beta1.ModeEnforce && !failed {
		results = append(results, p.write(desiredStateOf(rsp.GetDesired()), log)...)
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
		v, err := jsonValue(view.Of(p.Graph, edges, external, p.HeldBack, p.input.Mode == v1beta1.ModeEnforce))
		if err != nil {
			response.Warning(rsp, errors.Wrap(err, "cannot write the graph")).TargetComposite()
			return
		}
		response.SetContextKey(rsp, protocol.GraphContextKey, v)
	}
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

// jsonValue encodes v, such as the graph, as its JSON form, for the pipeline's
// context or an Operation's output.
func jsonValue(v any) (*structpb.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode as JSON")
	}
	out := &structpb.Value{}
	if err := protojson.Unmarshal(b, out); err != nil {
		return nil, errors.Wrap(err, "cannot decode the JSON")
	}
	return out, nil
}
