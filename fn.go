package main

import (
	"context"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composition"
	"github.com/crossplane-contrib/function-dependencies/internal/operation"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// Function declares, on every referenced composed resource, the reference
// finalizer of every live provider-kubernetes Object that references it.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// RunFunction runs the Function: as a step of a Composition's pipeline, or,
// when the request has no observed composite, as an Operation, which is the
// only caller without one.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	step, run := v1beta1.StepComposition, composition.Run
	if req.GetObserved().GetComposite() == nil {
		step, run = v1beta1.StepOperation, operation.Run
	}
	in, err := request.Input(req, step)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "invalid function input"))
		return rsp, nil
	}
	run(in, req, rsp, f.log)
	return rsp, nil
}
