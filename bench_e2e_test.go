//go:build e2e

package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	function "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// Function names, as hack/tools.sh names the neighbours' binaries.
const (
	fnPatchAndTransform = "function-patch-and-transform"
	fnAutoReady         = "function-auto-ready"
)

// maxMessage is the gRPC message limit of the benchmarks' servers and
// clients: a request of 1,000 realistic resources is about 9 MB, above gRPC's
// default of 4 MB.
const maxMessage = 512 << 20

// serveBench, set in the environment to floor or echo, makes this test binary
// serve that function, with the function's command line, instead of running
// tests.
const serveBench = "FD_BENCH_SERVE"

func TestMain(m *testing.M) {
	var fn fnv1.FunctionRunnerServiceServer
	switch v := os.Getenv(serveBench); v {
	case "":
		os.Exit(m.Run())
	case "floor":
		fn = floor{}
	case "echo":
		fn = echo{}
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want floor or echo\n", serveBench, v)
		os.Exit(2)
	}
	cli := &ServeCmd{}
	kong.Parse(cli)
	err := function.Serve(fn,
		function.Listen(cli.Network, cli.Address),
		function.Insecure(cli.Insecure),
		function.MaxRecvMessageSize(cli.MaxRecvMessageSize*1024*1024))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// echo is the physical floor of any function: a server that decodes the
// request and returns desired state as it came, without converting anything.
// response.To shares the request's desired state and context with the
// response; it converts neither.
type echo struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

func (echo) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return response.To(req, response.DefaultTTL), nil
}

// BenchmarkServed serves this function, the floor, echo and the functions
// users run beside it, each as its own process with --insecure on a loopback
// port, and calls them through gRPC in turn (see benchCalls) with the same
// request: the floor, echo and auto-ready get the very request this function
// gets; patch-and-transform gets the observed state and a Composition input
// that renders the same desired resources.
func BenchmarkServed(b *testing.B) {
	limit := fmt.Sprintf("--max-recv-message-size=%d", maxMessage>>20)
	ours := dialBench(b, harness.Serve(b, harness.Function(b), limit))
	autoReady := dialBench(b, harness.Serve(b, harness.Tool(b, fnAutoReady), limit))
	patchAndTransform := dialBench(b, harness.Serve(b, harness.Tool(b, fnPatchAndTransform), limit))
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	// Started last: the others don't inherit the variable.
	b.Setenv(serveBench, "floor")
	floor := dialBench(b, harness.Serve(b, self, limit))
	b.Setenv(serveBench, "echo")
	echo := dialBench(b, harness.Serve(b, self, limit))

	// A build of another commit, to compare a change with what it changes
	// in the same run: the ratios ours/baseline say what the change costs.
	var baseline fnv1.FunctionRunnerServiceClient
	if bin := os.Getenv(baselineBench); bin != "" {
		baseline = dialBench(b, harness.Serve(b, bin, limit))
	}

	for _, n := range []int{1_000, 5_000, 10_000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			req := requesttest.Generate(requesttest.Realistic(n))
			ptReq := patchAndTransformRequest(req)
			rendersSame(b, patchAndTransform, ptReq, req)
			if baseline != nil {
				b.Run("fn=ours+baseline", func(b *testing.B) {
					benchCalls(b, []served{{"ours", ours, req}, {"baseline", baseline, req}})
				})
				return
			}
			b.Run("fn=ours+floor+echo+auto-ready+patch-and-transform", func(b *testing.B) {
				benchCalls(b, []served{{"ours", ours, req}, {"floor", floor, req}, {"echo", echo, req}, {"auto-ready", autoReady, req}, {"patch-and-transform", patchAndTransform, ptReq}})
			})
		})
	}
}

// baselineBench names the binary of this function built from another
// commit (go build -o /tmp/baseline . in a worktree of it): BenchmarkServed
// then calls it and this one in turn instead of the neighbours.
const baselineBench = "FD_BENCH_BASELINE"

// dialBench returns a client of the function served at the address, with
// Crossplane's options and the benchmarks' message limit, once a small
// request has gone through.
func dialBench(b *testing.B, address string) fnv1.FunctionRunnerServiceClient {
	b.Helper()
	conn, err := grpc.NewClient(address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	client := fnv1.NewFunctionRunnerServiceClient(conn)
	if _, err := client.RunFunction(context.Background(), requesttest.Generate(requesttest.Realistic(10))); err != nil {
		b.Fatalf("RunFunction(...) at %s: %v", address, err)
	}
	return client
}

// A served function, and the request to call it with.
type served struct {
	name   string
	client fnv1.FunctionRunnerServiceClient
	req    *fnv1.RunFunctionRequest
}

// benchCalls calls each function once per iteration, in turn, starting with
// the next one each time, so that they share the machine's load alike. It
// reports each function's median and 99th percentile (nearest rank: with few
// calls, the slowest) call duration in milliseconds, and the ratios of the
// first function's to each other's, from the same calls: ours/floor-p50 and
// so on.
func benchCalls(b *testing.B, fns []served) {
	b.Helper()
	durations := make([][]time.Duration, len(fns))
	i := 0
	for b.Loop() {
		for j := range fns {
			k := (i + j) % len(fns)
			start := time.Now()
			rsp, err := fns[k].client.RunFunction(context.Background(), fns[k].req)
			durations[k] = append(durations[k], time.Since(start))
			if err != nil {
				b.Fatalf("%s: RunFunction(...): %v", fns[k].name, err)
			}
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					b.Fatalf("%s: RunFunction(...): fatal result: %s", fns[k].name, r.GetMessage())
				}
			}
		}
		i++
	}
	p50, p99 := make([]float64, len(fns)), make([]float64, len(fns))
	for k, f := range fns {
		slices.Sort(durations[k])
		p50[k], p99[k] = percentile(durations[k], 50), percentile(durations[k], 99)
		b.ReportMetric(p50[k], f.name+"-p50-ms")
		b.ReportMetric(p99[k], f.name+"-p99-ms")
		if k > 0 {
			b.ReportMetric(p50[0]/p50[k], fns[0].name+"/"+f.name+"-p50")
			b.ReportMetric(p99[0]/p99[k], fns[0].name+"/"+f.name+"-p99")
		}
	}
}

// percentile returns the p-th percentile of the sorted durations in
// milliseconds, by the nearest-rank method.
func percentile(sorted []time.Duration, p int) float64 {
	rank := max(1, (p*len(sorted)+99)/100)
	return float64(sorted[rank-1]) / float64(time.Millisecond)
}

// patchAndTransformRequest returns the request Crossplane sends
// patch-and-transform as the first step of a Composition that renders the
// request's desired resources: the same observed state, no desired composed
// resources yet, and an input with a template per resource. Each template
// leaves out the Object's name and its manifest's namespace and patches them
// from the composite's name, as Compositions do.
func patchAndTransformRequest(req *fnv1.RunFunctionRequest) *fnv1.RunFunctionRequest {
	xr := request.ObjectOf(req.GetObserved().GetComposite().GetResource()).Name()
	desired := req.GetDesired().GetResources()
	templates := make([]*structpb.Value, 0, len(desired))
	for _, name := range slices.Sorted(maps.Keys(desired)) {
		base := proto.Clone(desired[name].GetResource()).(*structpb.Struct)
		objectName := request.ObjectOf(base).Name()
		metadata := base.GetFields()["metadata"].GetStructValue()
		delete(metadata.GetFields(), "name")
		manifest := base.GetFields()["spec"].GetStructValue().GetFields()["forProvider"].GetStructValue().GetFields()["manifest"]
		delete(manifest.GetStructValue().GetFields()["metadata"].GetStructValue().GetFields(), "namespace")
		patches := requesttest.MustStruct(map[string]any{"p": []any{
			map[string]any{
				"type": "FromCompositeFieldPath", "fromFieldPath": "metadata.name", "toFieldPath": "metadata.name",
				"transforms": []any{map[string]any{"type": "string", "string": map[string]any{"type": "Format", "fmt": "%s" + objectName[len(xr):]}}},
			},
			map[string]any{"type": "FromCompositeFieldPath", "fromFieldPath": "metadata.name", "toFieldPath": "spec.forProvider.manifest.metadata.namespace"},
		}}).GetFields()["p"]
		templates = append(templates, structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"name":    structpb.NewStringValue(name),
			"base":    structpb.NewStructValue(base),
			"patches": patches,
		}}))
	}
	return &fnv1.RunFunctionRequest{
		Observed: req.GetObserved(),
		Desired:  &fnv1.State{},
		Input: &structpb.Struct{Fields: map[string]*structpb.Value{
			"apiVersion": structpb.NewStringValue("pt.fn.crossplane.io/v1beta1"),
			"kind":       structpb.NewStringValue("Resources"),
			"resources":  structpb.NewListValue(&structpb.ListValue{Values: templates}),
		}},
	}
}

// rendersSame checks that patch-and-transform renders exactly the desired
// resources of the request the other functions get.
func rendersSame(b *testing.B, client fnv1.FunctionRunnerServiceClient, ptReq, req *fnv1.RunFunctionRequest) {
	b.Helper()
	rsp, err := client.RunFunction(context.Background(), ptReq)
	if err != nil {
		b.Fatalf("patch-and-transform: %v", err)
	}
	got, want := rsp.GetDesired().GetResources(), req.GetDesired().GetResources()
	if len(got) != len(want) {
		b.Fatalf("patch-and-transform renders %d resources, want %d; results: %v", len(got), len(want), rsp.GetResults())
	}
	for name, w := range want {
		if !proto.Equal(got[name].GetResource(), w.GetResource()) {
			b.Fatalf("patch-and-transform renders %q differently:\ngot  %v\nwant %v", name, got[name].GetResource(), w.GetResource())
		}
	}
}
