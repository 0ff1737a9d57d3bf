package request

import (
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

// A Live is a Composition request whose observed and desired state are the
// same resources: as a live cluster holds them, every one exists and is
// wanted.
type Live struct{ req *fnv1.RunFunctionRequest }

// NewLive is a Live request with no resources yet.
func NewLive() Live {
	return Live{req: &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{}, Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}}
}

// Add adds a resource under a composition resource name: observed, and
// desired too unless it is one of the function's own Usages, which the
// function reads as what protects an edge only when observed alone.
func (l Live) Add(name string, resource map[string]any) error {
	s, err := structpb.NewStruct(resource)
	if err != nil {
		return err
	}
	l.req.Observed.Resources[name] = &fnv1.Resource{Resource: s}
	if ObjectOf(s).Label(protocol.UsageLabel) != "true" {
		l.req.Desired.Resources[name] = &fnv1.Resource{Resource: s}
	}
	return nil
}

// Request is the request.
func (l Live) Request() *fnv1.RunFunctionRequest { return l.req }
