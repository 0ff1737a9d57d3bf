package infer

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// hostile are the shapes of legal input that make a rule look at every
// pair of resources when it looks candidates up one reference at a time.
var hostile = map[string]func(n int) []Resource{
	// sameName: every resource has one name and references that name, so
	// every other resource is a candidate of every reference, which nothing
	// singles out.
	"sameName": func(n int) []Resource {
		resources := make([]Resource, n)
		for i := range resources {
			resources[i] = benchResource(fmt.Sprintf("r%d", i), "ec2.aws.upbound.io", "Subnet", "shared",
				map[string]any{"forProvider": map[string]any{"vpcIdRef": map[string]any{"name": "shared"}}},
				map[string]any{"app": "web"}, fmt.Sprintf("subnet-%d", i))
		}
		return resources
	},
	// matchAllSelector: every resource carries the labels every resolved
	// selector matches, and the value each selector resolved to is the
	// next resource's id.
	"matchAllSelector": func(n int) []Resource {
		resources := make([]Resource, n)
		for i := range resources {
			resources[i] = benchResource(fmt.Sprintf("r%d", i), "ec2.aws.upbound.io", "VPC", fmt.Sprintf("vpc%d", i),
				map[string]any{"forProvider": map[string]any{
					"vpcIdSelector": map[string]any{"matchLabels": map[string]any{"app": "web", "tier": "net"}},
					"vpcId":         fmt.Sprintf("vpc-%d", (i+1)%n),
				}},
				map[string]any{"app": "web", "tier": "net"}, fmt.Sprintf("vpc-%d", i))
		}
		return resources
	},
	// providerConfigFanIn: half the resources are managed resources that
	// all use one ProviderConfig and write a connection Secret each; the
	// other half are ProviderConfigs of another provider, each reading one
	// of those Secrets; all of them have the ProviderConfig's name.
	"providerConfigFanIn": func(n int) []Resource {
		resources := make([]Resource, 0, n)
		resources = append(resources, benchResource("aws", "aws.upbound.io", providerConfig, "default", map[string]any{}, nil, ""))
		for i := 1; i < n; i++ {
			if i%2 == 1 {
				resources = append(resources, benchResource(fmt.Sprintf("r%d", i), "ec2.aws.upbound.io", "Subnet", "default",
					map[string]any{
						"providerConfigRef":          map[string]any{"name": "default"},
						"writeConnectionSecretToRef": map[string]any{"name": fmt.Sprintf("conn-%d", i), "namespace": "crossplane-system"},
					}, nil, ""))
				continue
			}
			resources = append(resources, benchResource(fmt.Sprintf("pc%d", i), "kubernetes.crossplane.io", providerConfig, "default",
				map[string]any{"credentials": map[string]any{"source": "Secret", "secretRef": map[string]any{"name": fmt.Sprintf("conn-%d", i-1), "namespace": "crossplane-system"}}},
				nil, ""))
		}
		return resources
	},
}

// benchResource is a composed resource whose observed and desired bodies
// have the spec, and the labels and, observed, the id when given.
func benchResource(name, group, kind, metadataName string, spec, labels map[string]any, id string) Resource {
	r := Resource{Name: name, Identity: object.Ref{Group: group, Kind: kind, Name: metadataName}}
	for _, observed := range []bool{true, false} {
		metadata := map[string]any{"name": metadataName}
		if labels != nil {
			metadata["labels"] = labels
		}
		body := map[string]any{"apiVersion": group + "/v1beta1", "kind": kind, "metadata": metadata, "spec": spec}
		if observed && id != "" {
			body["status"] = map[string]any{"atProvider": map[string]any{"id": id}}
		}
		s, err := structpb.NewStruct(body)
		if err != nil {
			panic(err)
		}
		r.Bodies = append(r.Bodies, request.ObjectOf(s))
	}
	return r
}

// BenchmarkInferHostile measures Edges on the hostile shapes at two sizes
// ten times apart: the time of each should grow about tenfold.
func BenchmarkInferHostile(b *testing.B) {
	for _, shape := range []string{"sameName", "matchAllSelector", "providerConfigFanIn"} {
		for _, n := range []int{1_000, 10_000} {
			b.Run(fmt.Sprintf("shape=%s/N=%d", shape, n), func(b *testing.B) {
				resources := hostile[shape](n)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Edges(context.Background(), resources, all); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
