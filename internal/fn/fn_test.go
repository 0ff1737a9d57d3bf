package fn

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report/message"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

const typed = `"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"`

// run calls the function on a copy of the request, as the wire would.
func run(t *testing.T, ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	t.Helper()
	return New(logging.NewNopLogger()).RunFunction(ctx, proto.Clone(req).(*fnv1.RunFunctionRequest))
}

// cancelledAfter is a context that is cancelled once Err has answered nil
// n times: where a call notices depends only on its checks, not on time.
type cancelledAfter struct {
	context.Context
	n, checks atomic.Int64
}

func (c *cancelledAfter) Err() error {
	if c.checks.Add(1) > c.n.Load() {
		return context.Canceled
	}
	return nil
}

// withInput returns the request with the input.
func withInput(req *fnv1.RunFunctionRequest, input string) *fnv1.RunFunctionRequest {
	req.Input = resource.MustStructJSON(input)
	return req
}

// TestACallCancelledAtAnyCheckStopsAndReturnsTheCancellation cancels one
// call at each of its checks of the context in turn, in both modes and with
// every stage of the Composition step at work (patterns, inference, Usages,
// references to write): each time, the call returns the cancellation at
// once, and no answer.
func TestACallCancelledAtAnyCheckStopsAndReturnsTheCancellation(t *testing.T) {
	composition := withInput(requesttest.Generate(requesttest.Realistic(50)),
		`{`+typed+`, "infer": ["ProviderConfigs", "Credentials", "ManagedReferences"], "protection": "Usages", "dependencies": [{"resource": "object-00[0-4]", "dependsOn": ["object-01.*"]}]}`)
	operation := &fnv1.RunFunctionRequest{Desired: &fnv1.State{}, Input: resource.MustStructJSON(`{` + typed + `}`)}
	for name, req := range map[string]*fnv1.RunFunctionRequest{"Composition": composition, "Operation": operation} {
		t.Run(name, func(t *testing.T) {
			all := &cancelledAfter{Context: context.Background()}
			all.n.Store(1 << 62)
			if _, err := run(t, all, req); err != nil {
				t.Fatalf("RunFunction(never cancelled): %v", err)
			}
			checks := all.checks.Load()
			if name == "Composition" && checks < 50 {
				t.Fatalf("RunFunction checked its context %d times on 50 resources: want at least once a resource", checks)
			}
			for n := range checks {
				ctx := &cancelledAfter{Context: context.Background()}
				ctx.n.Store(n)
				rsp, err := run(t, ctx, req)
				if status.Code(err) != codes.Canceled || rsp != nil {
					t.Fatalf("RunFunction(cancelled after %d of %d checks) = %v, %v; want no answer and codes.Canceled", n, checks, rsp, err)
				}
			}
		})
	}
}

// TestACancelledCallFreesItsMemory runs a large call cancelled half-way: once
// it has returned, what it allocated is garbage.
func TestACancelledCallFreesItsMemory(t *testing.T) {
	req := withInput(requesttest.Generate(requesttest.Realistic(1_000)), `{`+typed+`, "infer": ["ProviderConfigs", "ManagedReferences"]}`)
	all := &cancelledAfter{Context: context.Background()}
	all.n.Store(1 << 62)
	if _, err := run(t, all, req); err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var allocated uint64
	{
		ctx := &cancelledAfter{Context: context.Background()}
		ctx.n.Store(all.checks.Load() / 2)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := run(t, ctx, req); status.Code(err) != codes.Canceled {
			t.Fatalf("RunFunction(cancelled half-way): %v, want codes.Canceled", err)
		}
		runtime.ReadMemStats(&m1)
		allocated = m1.TotalAlloc - m0.TotalAlloc
	}
	if after := heap(); after > before+allocated/10 {
		t.Errorf("after a cancelled call that allocated %d bytes, the heap holds %d bytes more than before it, want at most a tenth", allocated, after-before)
	}
}

// fatal returns the message of the response's one Fatal result, after
// checking that desired state is as the request had it.
func fatal(t *testing.T, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) string {
	t.Helper()
	if diff := cmp.Diff(req.GetDesired(), rsp.GetDesired(), protocmp.Transform()); diff != "" {
		t.Errorf("a refused call changed desired state: -request, +response:\n%s", diff)
	}
	var fatal []string
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			fatal = append(fatal, r.GetMessage())
		}
	}
	if len(fatal) != 1 {
		t.Fatalf("got the Fatal results %q, want one", fatal)
	}
	return fatal[0]
}

func TestPatternsThatPairTooManyResourcesAreRefusedNamingTheRule(t *testing.T) {
	req := requesttest.Chain(1_000, false, `{`+typed+`, "dependencies": [{"resource": "object-0000", "dependsOn": ["object-0001"]}, {"resource": ".*", "dependsOn": [".*"]}]}`)
	rsp, err := run(t, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := "invalid function input: dependencies[1] pairs 1000 resources with 1000 dependencies, which makes 1000001 pairs with the rules before it, more than the 100000 one input may declare: name the resources, or narrow the patterns"
	if got := fatal(t, req, rsp); got != want {
		t.Errorf("RunFunction(.* → .* of 1,000):\ngot  %s\nwant %s", got, want)
	}
}

func TestAResponseLargerThanCrossplaneReadsIsRefusedWithDesiredStateAsItCame(t *testing.T) {
	// 300 × 300 pairs fit the bound on patterns, and make each Object
	// reference the 299 others: about 10 MB of references.
	req := requesttest.Chain(300, false, `{`+typed+`, "onCycle": "Warning", "dependencies": [{"resource": ".*", "dependsOn": [".*"]}]}`)
	if size := proto.Size(req.GetDesired()); size > protocol.CrossplaneLimits.ResponseBytes/4 {
		t.Fatalf("the request's desired state is %d bytes: the test needs the function's additions alone to pass %d", size, protocol.CrossplaneLimits.ResponseBytes)
	}
	rsp, err := run(t, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := fatal(t, req, rsp)
	if !strings.HasPrefix(got, "the response would be about ") || !strings.Contains(got, fmt.Sprintf("more than the %d Crossplane reads", protocol.CrossplaneLimits.ResponseBytes)) {
		t.Errorf("RunFunction(300 Objects depending on each other) Fatal: %s, want the response's size and Crossplane's limit", got)
	}
	if size := proto.Size(rsp); size > protocol.CrossplaneLimits.ResponseBytes {
		t.Errorf("the refusal is %d bytes, more than Crossplane reads", size)
	}
}

func TestEveryMessageIsBounded(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	cases := map[string]*fnv1.RunFunctionRequest{
		// A cycle of 5,000 Objects: its path names every one.
		"Cycle": requesttest.Chain(5_000, true, `{`+typed+`}`),
		// Patterns echoed in an UnmatchedDependency warning and the
		// input's own error.
		"UnmatchedPattern": requesttest.Chain(3, false, `{`+typed+`, "dependencies": [{"resource": "`+long+`", "dependsOn": ["`+long+`"]}]}`),
		"InvalidInput":     requesttest.Chain(3, false, `{`+typed+`, "mode": "`+long+`"}`),
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := run(t, context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(rsp.GetResults()) == 0 {
				t.Fatal("no result: the case no longer reaches a message")
			}
			for _, r := range rsp.GetResults() {
				if len(r.GetMessage()) > message.MaxBytes {
					t.Errorf("a %s result of %d bytes, more than %d", r.GetReason(), len(r.GetMessage()), message.MaxBytes)
				}
			}
			for _, c := range rsp.GetConditions() {
				if len(c.GetMessage()) > message.MaxBytes {
					t.Errorf("a %s condition message of %d bytes, more than %d", c.GetType(), len(c.GetMessage()), message.MaxBytes)
				}
			}
		})
	}
}

func TestRequestsAreToldApartByWhatCrossplaneSends(t *testing.T) {
	t.Run("ObservedStateWithoutItsComposite", func(t *testing.T) {
		req := requesttest.Issue371Request(2, []int{0}, "", nil)
		req.Observed.Composite = nil
		rsp, err := run(t, context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := fatal(t, req, rsp); !strings.Contains(got, "observed.composite") {
			t.Errorf("Fatal %q, want it to name observed.composite", got)
		}
		if rsp.GetRequirements() != nil {
			t.Errorf("a refused Composition request asks for %v, want nothing", rsp.GetRequirements())
		}
	})
	t.Run("NoObservedStateAtAll", func(t *testing.T) {
		rsp, err := run(t, context.Background(), &fnv1.RunFunctionRequest{Desired: &fnv1.State{}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rsp.GetResults()) != 0 || len(rsp.GetRequirements().GetResources()) == 0 {
			t.Errorf("an Operation's first request got results %v and requirements %v, want none and the sweep's", rsp.GetResults(), rsp.GetRequirements())
		}
	})
}

func TestTheResponseIsMeasuredAsProtobufSizesIt(t *testing.T) {
	req := withInput(requesttest.Generate(requesttest.Realistic(100)), `{`+typed+`, "graph": "Context", "protection": "Usages"}`)
	rsp, err := run(t, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := request.ResponseSize(context.Background(), rsp)
	if err != nil {
		t.Fatal(err)
	}
	if want := proto.Size(rsp); got != want {
		t.Errorf("request.ResponseSize = %d, want proto.Size's %d", got, want)
	}
}
