package main

import (
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"

	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// graphValue encodes the graph as its JSON form, for the context.
func graphValue(g view.Graph) (*structpb.Value, error) {
	b, err := json.Marshal(g)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the graph as JSON")
	}
	v := &structpb.Value{}
	if err := protojson.Unmarshal(b, v); err != nil {
		return nil, errors.Wrap(err, "cannot decode the graph's JSON")
	}
	return v, nil
}
