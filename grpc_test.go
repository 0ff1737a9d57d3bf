package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	function "github.com/crossplane/function-sdk-go"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// concurrentCalls is how many calls TestConcurrentCalls makes at once.
const concurrentCalls = 1000

// TestConcurrentCalls serves the function in process with the SDK's own
// server, as main.go does, and makes a thousand calls at once over loopback
// gRPC, each with a different random request. Every answer must carry the
// request's tag and be the one the function gives that request alone; every
// tenth is checked against the README's rules too. Run it with -race:
// hack/test.sh does.
func TestConcurrentCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a thousand gRPC calls")
	}
	f := &Function{log: logging.NewNopLogger()}
	counted := &countingFunction{Function: f}
	client := serveSDK(t, counted)

	reqs := make([]*fnv1.RunFunctionRequest, concurrentCalls)
	want := make([]*fnv1.RunFunctionResponse, concurrentCalls)
	for i := range reqs {
		reqs[i] = genRequest(rngChooser{rand.New(rand.NewPCG(1000, uint64(i)))})
		reqs[i].Meta = &fnv1.RequestMeta{Tag: fmt.Sprintf("call-%04d", i)}
		var err error
		if want[i], err = runCopy(f, reqs[i]); err != nil {
			t.Fatalf("request %d in process: %v", i, err)
		}
	}

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
			got[i], errs[i] = client.RunFunction(ctx, reqs[i])
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
			problems = []string{"the answer over gRPC differs from the answer in process"}
		case i%10 == 0:
			// TestEveryAnswerFollowsTheRules checks the answers in process against the
			// rules; a sample checks them again here.
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

// countingFunction is the function, counting the calls in RunFunction.
type countingFunction struct {
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

// serveSDK serves the function with function-sdk-go's Serve, with the
// options main.go passes (insecure, as with --insecure), on a free loopback
// port, and returns a client with Crossplane's message limits. Serve can't be
// stopped: the server lives as long as the test binary.
func serveSDK(t *testing.T, f fnv1.FunctionRunnerServiceServer) fnv1.FunctionRunnerServiceClient {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := l.Addr().String()
	_ = l.Close()
	served := make(chan error, 1)
	go func() {
		served <- function.Serve(f,
			function.Listen("tcp", address),
			function.Insecure(true),
			function.MaxRecvMessageSize(4*1024*1024),
			function.WithMetricsServer("")) // No Prometheus registration: tests may serve twice.
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", address)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case err := <-served:
			t.Fatalf("function.Serve: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("function.Serve did not listen on %s within 10s", address)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return fnv1.NewFunctionRunnerServiceClient(conn)
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
