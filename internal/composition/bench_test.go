package composition

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// BenchmarkGraph measures the Composition step on a decoded request in which
// every dependent has three references to other composed resources (2,970
// edges at N=1,000), whole and in its three phases: reading the composed
// resources from the request's structs, deciding (the graph, the
// finalizers, the Usages, the references and creation order, and the
// report), and writing desired state, the condition and the results into
// the response. Writing changes the request's desired state, which the
// response shares: each run writes into a fresh copy, made with the timer
// stopped, which b.Loop doesn't allow.
func BenchmarkGraph(b *testing.B) {
	log := logging.NewNopLogger()
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			req := requesttest.Generate(requesttest.Shape{N: n, MinRefs: 3, MaxRefs: 3})
			edges := float64(referenceCount(req))
			in, err := request.Input(req, v1beta1.StepComposition)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			c := request.ReadComposition(req)
			rd, err := readComposed(ctx, c, in)
			if err != nil {
				b.Fatal(err)
			}
			fresh := func(b *testing.B) (*fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse) {
				b.StopTimer()
				defer b.StartTimer()
				r := proto.Clone(req).(*fnv1.RunFunctionRequest)
				return r, response.To(r, response.DefaultTTL)
			}

			b.Run("phase=all", func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					r, rsp := fresh(b)
					if err := Run(ctx, in, r, rsp, protocol.CrossplaneLimits, log); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(edges, "edges")
			})
			b.Run("phase=read", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := request.Input(req, v1beta1.StepComposition); err != nil {
						b.Fatal(err)
					}
					if _, err := readComposed(ctx, request.ReadComposition(req), in); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("phase=decide", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := decide(ctx, in, ownerOf(c.Composite), rd); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(edges, "edges")
			})
			b.Run("phase=write", func(b *testing.B) {
				p, err := decide(ctx, in, ownerOf(c.Composite), rd)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for range b.N {
					_, rsp := fresh(b)
					if err := p.writeTo(ctx, rsp, protocol.CrossplaneLimits, log); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// referenceCount counts the references of the request's desired Objects.
func referenceCount(req *fnv1.RunFunctionRequest) int {
	n := 0
	for _, r := range req.GetDesired().GetResources() {
		n += len(r.GetResource().GetFields()["spec"].GetStructValue().GetFields()["references"].GetListValue().GetValues())
	}
	return n
}

// BenchmarkInference measures the whole Composition step on BenchmarkGraph's
// request at N=1,000 whose Objects all use one composed ProviderConfig, with
// and without infer: inference reads every composed resource's whole body,
// which the step otherwise never decodes, and adds an edge and a Usage per
// Object.
func BenchmarkInference(b *testing.B) {
	log := logging.NewNopLogger()
	req := requesttest.Generate(requesttest.Shape{N: 1_000, MinRefs: 3, MaxRefs: 3})
	pc := resource.MustStructJSON(`{"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "metadata": {"name": "remote", "uid": "uid-remote"}}`)
	for _, s := range []*fnv1.State{req.GetObserved(), req.GetDesired()} {
		for _, r := range s.GetResources() {
			if spec := r.GetResource().GetFields()["spec"].GetStructValue(); spec != nil {
				spec.Fields["providerConfigRef"] = structpb.NewStructValue(resource.MustStructJSON(`{"name": "remote"}`))
			}
		}
		s.Resources["config"] = &fnv1.Resource{Resource: proto.Clone(pc).(*structpb.Struct)}
	}
	for _, infer := range []string{`[]`, `["ProviderConfigs", "Credentials", "ManagedReferences"]`} {
		r := proto.Clone(req).(*fnv1.RunFunctionRequest)
		r.Input = resource.MustStructJSON(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "infer": ` + infer + `}`)
		in, err := request.Input(r, v1beta1.StepComposition)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("infer=%t", len(in.Infer) > 0), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				c := proto.Clone(r).(*fnv1.RunFunctionRequest)
				rsp := response.To(c, response.DefaultTTL)
				b.StartTimer()
				if err := Run(context.Background(), in, c, rsp, protocol.CrossplaneLimits, log); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
