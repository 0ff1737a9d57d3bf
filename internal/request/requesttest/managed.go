package requesttest

import (
	"fmt"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

// Referencing is a request of n managed resources, observed and desired,
// each of which names the refs resources before it (as many as there are)
// in its spec.forProvider.subnetIdRefs: inferring ManagedReferences finds
// an edge for each name, each target alone of its name, and no cycle.
func Referencing(n, refs int, input string) *fnv1.RunFunctionRequest {
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: ClusterXR, Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
		Input:    resource.MustStructJSON(input),
	}
	for i := range n {
		var names []any
		for t := max(0, i-refs); t < i; t++ {
			names = append(names, map[string]any{"name": fmt.Sprintf("subnet-%05d", t)})
		}
		body := func(uid string) *fnv1.Resource {
			metadata := map[string]any{"name": fmt.Sprintf("subnet-%05d", i)}
			if uid != "" {
				metadata["uid"] = uid
			}
			return &fnv1.Resource{Resource: MustStruct(map[string]any{
				"apiVersion": "ec2.aws.upbound.io/v1beta1", "kind": "Subnet", "metadata": metadata,
				"spec": map[string]any{"forProvider": map[string]any{"region": "eu-west-1", "subnetIdRefs": names}},
			})}
		}
		name := fmt.Sprintf("subnet-%05d", i)
		req.Observed.Resources[name] = body(fmt.Sprintf("uid-%05d", i))
		req.Desired.Resources[name] = body("")
	}
	return req
}
