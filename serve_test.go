package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestAtMostRunsNCallsAtOnceAndQueuesTheRest(t *testing.T) {
	const n, calls = 2, 6
	limit := atMost(n)
	var running, most atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, calls)
	handler := func(context.Context, any) (any, error) { //nolint:unparam // A grpc.UnaryHandler.
		now := running.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		started <- struct{}{}
		<-release
		running.Add(-1)
		return "answer", nil
	}
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if rsp, err := limit(context.Background(), nil, &grpc.UnaryServerInfo{}, handler); err != nil || rsp != "answer" {
				t.Errorf("a queued call answered %v, %v; want the handler's answer", rsp, err)
			}
		})
	}
	for range n {
		<-started
	}
	// A call that gives up while it waits fails with its context's error,
	// and never runs.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := limit(ctx, nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
		t.Error("a call whose caller gave up in the queue ran")
		return nil, nil
	}); status.Code(err) != codes.Canceled {
		t.Errorf("a cancelled queued call: %v, want codes.Canceled", err)
	}
	close(release)
	wg.Wait()
	if most.Load() != n {
		t.Errorf("%d calls ran at once, want %d", most.Load(), n)
	}
}

func TestConcurrentCallsFitTheMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	limit := func(bytes int64, ok bool) func() (int64, bool) {
		return func() (int64, bool) { return bytes, ok }
	}
	cases := map[string]struct {
		reason string
		flag   int
		recv   int
		limit  func() (int64, bool)
		want   int
	}{
		"Flag":           {reason: "A number given is the number.", flag: 3, recv: 4 * mib, limit: limit(64*mib, true), want: 3},
		"AsManyAsFit":    {reason: "512 MiB hold 16 calls of 32 MiB: 8 times a 4 MiB request.", recv: 4 * mib, limit: limit(512*mib, true), want: 16},
		"AtLeastOne":     {reason: "Below one call's memory, calls run one at a time.", recv: 4 * mib, limit: limit(10*mib, true), want: 1},
		"WithoutALimit":  {reason: "Without a limit, a few calls per core.", recv: 4 * mib, limit: limit(0, false), want: unlimitedCalls},
		"SmallerRequest": {reason: "The memory of a call follows the largest request: 1 MiB requests fit 64 in 512 MiB.", recv: mib, limit: limit(512*mib, true), want: 64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := concurrentCalls(tc.flag, tc.recv, tc.limit); got != tc.want {
				t.Errorf("%s\nconcurrentCalls(...) = %d, want %d", tc.reason, got, tc.want)
			}
		})
	}
}
