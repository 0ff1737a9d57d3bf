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

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// concurrentCalls is how many calls TestConcurrentCalls makes at once.
const concurrentCalls = 1000

// TestConcurrentCalls makes a thousand calls at once to the function's
// binary, each with a different random request. Every answer must carry the
// request's tag and be the one the function gives that request alone; every
// tenth is checked against the README's rules too. Run it with -race:
// hack/test.sh does, and the binary is then built with the race detector.
func TestConcurrentCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping a thousand gRPC calls")
	}
	f := function(t)

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

	// The server is another process: what overlaps is what its gRPC server
	// counts as started and not yet answered, read from its metrics while
	// the calls run.
	var most atomic.Int64
	polled := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-done:
				return
			default:
			}
			if n, err := served.server.InFlight(context.Background()); err == nil && int64(n) > most.Load() {
				most.Store(int64(n))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
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
	close(done)
	<-polled
	t.Logf("%d concurrent calls answered in %s, at most %d at once in RunFunction", concurrentCalls, time.Since(start).Round(time.Millisecond), most.Load())
	if most.Load() < 2 {
		t.Errorf("at most %d call in RunFunction at once: the calls weren't concurrent", most.Load())
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
