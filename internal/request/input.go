package request

import (
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
)

// Input is the step's input, decoded for the step: with every default, or
// an error that names the field.
func Input(req *fnv1.RunFunctionRequest, step v1beta1.Step) (*v1beta1.Input, error) {
	var data []byte
	if req.GetInput() != nil {
		var err error
		if data, err = protojson.Marshal(req.GetInput()); err != nil {
			return nil, errors.Wrap(err, "cannot encode the input as JSON")
		}
	}
	return v1beta1.DecodeFor(data, step)
}
