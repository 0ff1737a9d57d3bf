package loop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	sdk "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/fnserve"
)

// concurrentCalls is how many calls TestConcurrentCalls makes at once.
const concurrentCalls = 1000

// TestConcurrentCalls makes a thousand calls at once over gRPC, each with a
// different random request. Every answer must carry the request's tag and be
// the one the function gives that request alone; every tenth is checked
// against the rules of docs/rules.md too. Run it with -race: hack/test.sh does.
//
// The calls go to the function's modes served in this process by the SDK's
// function.Serve, behind a counter of the calls in RunFunction: only there
// can the overlap be counted exactly. A sample of the built binary's gRPC
// metrics, taken while the calls run, can miss every overlap on two busy
// cores, and did.
func TestConcurrentCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a thousand gRPC calls")
	}
	counted := &countingFunction{Function: inProcess()}
	f := &Function{client: serveInProcess(t, counted)}

	reqs := make([]*fnv1.RunFunctionRequest, concurrentCalls)
	want := make([]*fnv1.RunFunctionResponse, concurrentCalls)
	for i := range reqs {
		reqs[i] = genRequest(rngChooser{rand.New(rand.NewPCG(1000, uint64(i)))})
		reqs[i].Meta = &fnv1.RequestMeta{Tag: fmt.Sprintf("call-%04d", i)}
		var err error
		if want[i], err = f.run(reqs[i]); err != nil {
			t.Fatalf("request %d alone: %v", i, err)
		}
	}
	if counted.most.Load() != 1 {
		t.Fatalf("the calls made one at a time overlapped: %d at once", counted.most.Load())
	}
	counted.most.Store(0)

	start := time.Now()
	got := make([]*fnv1.RunFunctionResponse, concurrentCalls)
	errs := make([]error, concurrentCalls)
	var ready, wg sync.WaitGroup
	ready.Add(1)
	for i := range reqs {
		wg.Go(func() {
			ready.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			got[i], errs[i] = f.RunFunction(ctx, reqs[i])
		})
	}
	ready.Done() // All at once.
	wg.Wait()
	t.Logf("%d concurrent calls answered in %s, at most %d at once in RunFunction", concurrentCalls, time.Since(start).Round(time.Millisecond), counted.most.Load())
	if counted.most.Load() < 2 {
		t.Errorf("at most %d call in RunFunction at once: the calls weren't concurrent", counted.most.Load())
	}

	failed := 0
	for i := range reqs {
		var problems []string
		switch {
		case errs[i] != nil:
			problems = []string{fmt.Sprintf("RunFunction over gRPC: %v", errs[i])}
		case got[i].GetMeta().GetTag() != reqs[i].GetMeta().GetTag():
			problems = []string{fmt.Sprintf("the answer carries tag %q: it is another call's", got[i].GetMeta().GetTag())}
		case !proto.Equal(want[i], got[i]):
			problems = []string{"the answer among concurrent calls differs from the answer to the request alone"}
		case i%10 == 0:
			// TestEveryAnswerFollowsTheRules checks the answers to requests
			// alone against the rules; a sample checks them again here.
			exp := expectFor(reqs[i])
			problems = append(checkPassThrough(reqs[i], got[i], exp), checkInvariants(reqs[i], got[i], exp)...)
			problems = append(problems, checkExpected(reqs[i], got[i], exp)...)
		}
		if len(problems) > 0 {
			failed++
			t.Errorf("call %d: %s", i, strings.Join(problems, "\n  "))
			if failed >= 5 {
				t.Fatal("stopping after 5 failed calls")
			}
		}
	}
}

// countingFunction is the function, counting the calls in RunFunction: now,
// and the most at once.
type countingFunction struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
	*Function
	now, most atomic.Int64
}

func (c *countingFunction) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	return c.Function.RunFunction(ctx, req)
}

// serveInProcess serves fn with function-sdk-go's Serve, insecure as the
// binary's --insecure, on a free loopback port, and returns a client with
// Crossplane's message limits. Serve can't be stopped: the server lives as
// long as the test binary.
func serveInProcess(t *testing.T, fn fnv1.FunctionRunnerServiceServer) fnv1.FunctionRunnerServiceClient {
	t.Helper()
	address, err := fnserve.FreeAddress()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- sdk.Serve(fn,
			sdk.Listen("tcp", address),
			sdk.Insecure(true),
			sdk.MaxRecvMessageSize(fnserve.MaxMessage),
			sdk.WithMetricsServer("")) // No Prometheus registration: the process may serve twice.
	}()
	exited := func() error {
		select {
		case err := <-served:
			return fmt.Errorf("function.Serve returned: %w", err)
		default:
			return nil
		}
	}
	client, closeConn, err := fnserve.Dial(address, exited)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeConn)
	return client
}

// Make sure the requests really differ: a generator that made the same
// request a thousand times would prove nothing about independence.
func TestConcurrentCallsDiffer(t *testing.T) {
	seen := map[string]int{}
	for i := range 50 {
		req := genRequest(rngChooser{rand.New(rand.NewPCG(1000, uint64(i)))})
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req.GetDesired())
		if err != nil {
			t.Fatal(err)
		}
		if j, ok := seen[string(b)]; ok {
			t.Errorf("requests %d and %d desire the same", j, i)
		}
		seen[string(b)] = i
	}
}
