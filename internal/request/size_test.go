package request

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"
)

func TestResponseSizeIsProtoSize(t *testing.T) {
	s := resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}, "finalizers": ["f", ""]},
		"data": {"n": 1.5, "zero": 0, "t": true, "f": false, "null": null, "empty": {}, "list": [], "nested": [[1], {"a": [null]}], "long": "` + strings.Repeat("é", 300) + `"}}`)
	req := &fnv1.RunFunctionRequest{
		Meta: &fnv1.RequestMeta{Tag: "t"},
		Desired: &fnv1.State{
			Composite: &fnv1.Resource{Resource: s, ConnectionDetails: map[string][]byte{"k": []byte("v"), "": nil}},
			Resources: map[string]*fnv1.Resource{
				"a": {Resource: s, Ready: fnv1.Ready_READY_TRUE}, "b": {}, "": {Resource: &structpb.Struct{}},
				"c": {Resource: &structpb.Struct{Fields: map[string]*structpb.Value{"empty-struct": structpb.NewStructValue(nil), "empty-list": structpb.NewListValue(nil)}}},
			},
		},
	}
	for name, rsp := range map[string]*fnv1.RunFunctionResponse{
		"Desired":   response.To(req, response.DefaultTTL),
		"NoDesired": {Meta: &fnv1.ResponseMeta{Tag: "t"}},
		"Empty":     {},
	} {
		response.Normal(rsp, "a result")
		got, err := ResponseSize(context.Background(), rsp)
		if err != nil {
			t.Fatal(err)
		}
		if want := proto.Size(rsp); got != want {
			t.Errorf("%s: ResponseSize = %d, want proto.Size's %d", name, got, want)
		}
	}
}
