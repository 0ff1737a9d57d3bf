package composition

// The step's output: the condition and results on the composite, and the
// graph in the pipeline's context.

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// writeTo writes the plan into the response: desired state, the condition,
// the results and, when asked for, the graph in the context. A fatal cycle
// fails the step, and Report mode only reports: in both, desired state stays
// as the earlier steps left it. It returns the context's error when the call
// is cancelled.
func (p Plan) writeTo(ctx context.Context, rsp *fnv1.RunFunctionResponse, lim protocol.Limits, log logging.Logger) error {
	results := p.Report.Results
	failed := p.input.OnCycle == v1beta1.CycleFatal && len(p.Graph.Cycles) > 0
	if p.input.Mode == v1beta1.ModeEnforce && !failed {
		if err := p.fits(ctx, rsp, lim.ResponseBytes); err != nil {
			if ctx.Err() != nil {
				return err
			}
			response.Fatal(rsp, err)
			return nil
		}
		written, err := p.write(ctx, desiredStateOf(rsp.GetDesired()), log)
		if err != nil {
			return err
		}
		results = append(results, written...)
	}
	setCondition(rsp, p.Report.Condition)
	request.AddResults(rsp, results, true)
	if p.input.Graph == v1beta1.GraphContext {
		edges, external := report.EdgesOf(p.Graph, p.Protection)
		v, err := jsonValue(view.Of(p.Graph, edges, external, p.HeldBack, p.input.Mode == v1beta1.ModeEnforce))
		if err != nil {
			response.Warning(rsp, errors.Wrap(err, "cannot write the graph")).TargetComposite()
			return nil
		}
		response.SetContextKey(rsp, protocol.GraphContextKey, v)
	}
	return nil
}

// checkedAdditions is how many bytes the function may plan to add to desired
// state before it measures the response: measuring walks every field of
// desired state, and a composition that Crossplane's 4 MiB holds gets far
// less from the function (about 200 bytes a composed resource).
const checkedAdditions = 1 << 20

// fits returns an error when what the plan writes would make the response
// larger than Crossplane reads: Crossplane would refuse it with an error
// that names neither the function nor the cause, after the function had
// spent the memory. Nothing is written yet, so desired state stays as it
// came.
//
// A response larger than the limit before the function writes a byte, by
// desired state alone, is not the function's doing: only a Crossplane that
// reads more than --max-response-size says takes it, and the function
// passes it on. What the function adds is held to the limit all the same,
// on its own: it never adds more to a large response than it may to an
// empty one, where measuring against the response alone would let it add
// without bound.
func (p Plan) fits(ctx context.Context, rsp *fnv1.RunFunctionResponse, limit int) error {
	added := p.addedBytes()
	if added <= checkedAdditions {
		return nil
	}
	base, err := request.ResponseSize(ctx, rsp)
	if err != nil {
		return err
	}
	if base > limit {
		if added <= limit {
			return nil
		}
		return errors.Errorf("the references, finalizers, Usages and labels the function would add are about %d bytes, more than the %d Crossplane reads, to a response already %d bytes: declare fewer dependencies, or split the composite", added, limit, base)
	}
	size := base + added
	if size <= limit {
		return nil
	}
	return errors.Errorf("the response would be about %d bytes, more than the %d Crossplane reads, %d of them the references, finalizers, Usages and labels the function would add: declare fewer dependencies, or split the composite", size, limit, added)
}

// addedBytes is about how many bytes, encoded, writing the plan adds to
// desired state: each reference, finalizer, Usage and label with what
// encodes it.
func (p Plan) addedBytes() int {
	n := 0
	for _, refs := range p.References.Write {
		for _, r := range refs {
			n += len(r.APIVersion) + len(r.Kind) + len(r.Name) + len(r.Namespace) + 64
		}
	}
	for _, fs := range p.Protection.Additions {
		for _, f := range fs {
			n += len(f) + 8
		}
	}
	n += len(p.Protection.Usages) * 1024
	n += (len(p.Graph.Edges) + len(p.Graph.External)) * 96
	return n
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
