// Package fn is the function as Crossplane calls it: it tells a Composition
// step's request from an Operation's, runs that mode, and bounds what one
// call may cost every other composite the same pod serves.
package fn

import (
	"context"

	"google.golang.org/grpc/status"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composition"
	"github.com/crossplane-contrib/function-dependencies/internal/operation"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// Function is function-dependencies as Crossplane calls it. As a step of a
// Composition's pipeline it protects each dependency between composed
// resources from deletion (reference finalizers, Usages), orders their
// creation and reports both on the composite; as an Operation it repairs the
// cluster's reference finalizers and wakes what a teardown waits for.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log    logging.Logger
	limits protocol.Limits
}

// New returns the function, logging to log, answering within Crossplane's
// limits.
func New(log logging.Logger) *Function { return &Function{log: log, limits: protocol.CrossplaneLimits} }

// WithLimits returns the function answering within the limits, for a
// Crossplane that reads more than its own.
func (f *Function) WithLimits(l protocol.Limits) *Function {
	f.limits = l
	return f
}

// A mode answers a request of one kind: composition.Run or operation.Run.
type mode func(context.Context, *v1beta1.Input, *fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse, protocol.Limits, logging.Logger) error

// RunFunction runs the Function: as a step of a Composition's pipeline, or
// as an Operation. Crossplane sends a Composition step the observed state of
// its composite; an Operation's request has no observed state at all. A
// cancelled call stops and returns the context's error as gRPC's status:
// nobody waits for its answer.
func (f *Function) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	f.log.Debug("Running function", "tag", req.GetMeta().GetTag())
	rsp := response.To(req, response.DefaultTTL)
	step, run := v1beta1.StepComposition, mode(composition.Run)
	switch {
	case req.GetObserved() == nil:
		step, run = v1beta1.StepOperation, operation.Run
	case req.GetObserved().GetComposite() == nil:
		response.Fatal(rsp, errors.New("the request has observed state without its composite (observed.composite): Crossplane sends a Composition step its composite, and an Operation no observed state at all"))
		return rsp, nil
	}
	in, err := request.Input(req, step)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "invalid function input"))
		return bounded(rsp), nil
	}
	if err := run(ctx, in, req, rsp, f.limits, f.log); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return bounded(rsp), nil
}
