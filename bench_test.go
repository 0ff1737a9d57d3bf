package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	function "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// The benchmarks measure RunFunction against the floor: a pass-through
// function that does only what every function editing composed resources must
// do. hack/bench.sh runs them with -count and prints the table of the README.
//
//	BenchmarkInProcess  RunFunction and the floor called directly, N = 10 to 10,000
//	BenchmarkGraph      the work between decoding and encoding alone
//	BenchmarkServed     (e2e tag) this function, the floor, echo (the request's
//	                    desired state sent back as it came) and the neighbours
//	                    served on loopback, called through gRPC

// benchSizes are the numbers of composed resources of the benchmarks.
var benchSizes = []int{10, 100, 1_000, 10_000}

// floor is a pass-through function: what every function that edits composed
// resources does on every request, with nothing else.
type floor struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

func (floor) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	if _, err := request.GetObservedComposedResources(req); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, err)
	}
	return rsp, nil
}

// benchFunction returns the function as main.go serves it.
func benchFunction(b *testing.B) *Function {
	b.Helper()
	log, err := function.NewLogger(false)
	if err != nil {
		b.Fatal(err)
	}
	return newFunction(log)
}

// undoRun returns a func that takes back what RunFunction wrote into the
// request: response.To shares desired state with the request, so each run
// would otherwise start from what the run before declared. It restores the
// resources RunFunction added or removed and the lists it appended to
// (metadata.finalizers, spec.references) on the resources it changed, as a
// decoded request has them, without spare capacity, so that every run appends
// as the first did. Its cost is a map operation per changed resource. It
// checks once that undoing a run gives the request back exactly.
func undoRun(b *testing.B, f *Function, req *fnv1.RunFunctionRequest) func() {
	b.Helper()
	pristine := proto.Clone(req).(*fnv1.RunFunctionRequest)
	before := pristine.GetDesired().GetResources()
	rsp, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
	if err != nil {
		b.Fatal(err)
	}
	after := rsp.GetDesired().GetResources()

	type list struct {
		parent *structpb.Struct
		key    string
		length int // -1: the parent had no such list
	}
	var added []string
	var removed []string
	var lists []list
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[name]; !ok {
			added = append(added, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[name]
		switch {
		case !ok:
			removed = append(removed, name)
			continue
		case proto.Equal(before[name], a):
			continue
		}
		fields := req.GetDesired().GetResources()[name].GetResource().GetFields()
		for _, l := range []list{{parent: fields["metadata"].GetStructValue(), key: "finalizers"}, {parent: fields["spec"].GetStructValue(), key: "references"}} {
			if l.parent == nil {
				continue
			}
			l.length = -1
			if v, ok := l.parent.GetFields()[l.key]; ok {
				l.length = len(v.GetListValue().GetValues())
			}
			lists = append(lists, l)
		}
	}
	if len(added)+len(removed)+len(lists) == 0 {
		b.Fatal("RunFunction changes nothing in the generated request: the benchmark measures nothing")
	}
	resources := maps.Clone(req.GetDesired().GetResources())
	undo := func() {
		desired := req.GetDesired().GetResources()
		for _, name := range added {
			delete(desired, name)
		}
		for _, name := range removed {
			desired[name] = resources[name]
		}
		for _, l := range lists {
			if l.length < 0 {
				delete(l.parent.Fields, l.key)
				continue
			}
			v := l.parent.Fields[l.key].GetListValue()
			v.Values = slices.Clip(v.Values[:l.length])
		}
	}
	if _, err := f.RunFunction(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	undo()
	if !proto.Equal(req, pristine) {
		b.Fatal("undoing RunFunction doesn't give the request back: RunFunction changes desired state in a way undoRun doesn't know")
	}
	return undo
}

// runOn benchmarks RunFunction on the request.
func runOn(b *testing.B, req *fnv1.RunFunctionRequest) {
	b.Helper()
	f := benchFunction(b)
	undo := undoRun(b, f, req)
	b.ReportAllocs()
	size := 0
	for b.Loop() {
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil || len(rsp.GetConditions()) == 0 {
			b.Fatalf("RunFunction(...): %v, %v", rsp, err)
		}
		if size == 0 {
			size = proto.Size(rsp)
		}
		undo()
	}
	// What the response costs on the wire, against the request's desired
	// state sent back as it came (echo over gRPC).
	b.ReportMetric(float64(size)/float64(proto.Size(&fnv1.RunFunctionResponse{Desired: req.GetDesired()})), "response/echo")
}

// BenchmarkInProcess calls RunFunction and the floor directly on the same
// decoded request: what each costs beyond gRPC.
func BenchmarkInProcess(b *testing.B) {
	shapes := make([]requesttest.Shape, 0, len(benchSizes)+1)
	for _, n := range benchSizes {
		shapes = append(shapes, requesttest.Realistic(n))
	}
	namespaced := requesttest.Realistic(1_000)
	namespaced.Namespaced = true
	shapes = append(shapes, namespaced)

	for _, s := range shapes {
		name := fmt.Sprintf("N=%d", s.N)
		if s.Namespaced {
			name += "-namespaced"
		}
		// A benchmark with sub-benchmarks runs once, whatever -count says,
		// and only when -bench selects one of them.
		b.Run(name, func(b *testing.B) {
			req := requesttest.Generate(s)
			b.Run("fn=ours", func(b *testing.B) { runOn(b, req) })
			b.Run("fn=floor", func(b *testing.B) {
				// The floor replaces the request's desired resources with
				// equal ones; a clone keeps them from the other benchmarks.
				req := proto.Clone(req).(*fnv1.RunFunctionRequest)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := (floor{}).RunFunction(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
