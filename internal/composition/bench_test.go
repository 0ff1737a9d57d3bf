package composition

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
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
			c := request.ReadComposition(req)
			rd := readComposed(c, in)
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
					Run(in, r, rsp, log)
				}
				b.ReportMetric(edges, "edges")
			})
			b.Run("phase=read", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := request.Input(req, v1beta1.StepComposition); err != nil {
						b.Fatal(err)
					}
					readComposed(request.ReadComposition(req), in)
				}
			})
			b.Run("phase=decide", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					decide(in, ownerOf(c.Composite), rd)
				}
				b.ReportMetric(edges, "edges")
			})
			b.Run("phase=write", func(b *testing.B) {
				p := decide(in, ownerOf(c.Composite), rd)
				b.ReportAllocs()
				for range b.N {
					_, rsp := fresh(b)
					p.writeTo(rsp, log)
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
