// Package loop drives the whole function as Crossplane does, through its
// built binary over gRPC: a model of Crossplane reconciling random
// compositions and operations with it, the property tests that check every
// answer against the rules of docs/rules.md (test/lib/oracle), the fuzz targets, and a
// thousand calls at once.
package loop

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/fn"
	"github.com/crossplane-contrib/function-dependencies/test/lib/fnserve"
)

// Function is the function under test as Crossplane reaches it: its binary,
// served once per test process and called over gRPC.
type Function struct {
	client fnv1.FunctionRunnerServiceClient
}

// RunFunction calls the function over gRPC. The wire copies the request: the
// answer shares nothing with it, unlike the SDK's in-process answer, so the
// caller may change either. Without a client, it runs the function's modes in
// this process instead (see inProcess).
func (f *Function) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	if f.client == nil {
		// A copy, as the wire makes.
		return fn.New(logging.NewNopLogger()).RunFunction(ctx, proto.Clone(req).(*fnv1.RunFunctionRequest))
	}
	return f.client.RunFunction(ctx, req)
}

// inProcess is the function run in the test's own process, the same
// dispatch the binary serves: what the fuzz targets call, because the fuzzer's
// coverage guides it only through code in its own process.
func inProcess() *Function { return &Function{} }

// run calls the function on the request. Nothing here cancels a call: the
// function answers every request, and one that hangs is a failure the test's
// timeout reports with every goroutine's stack.
func (f *Function) run(req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return f.RunFunction(context.Background(), req)
}

// served is the binary every test of the process calls: built and started at
// the first call of served.function, so that a run that selects none of
// these tests builds nothing.
var served struct {
	once   sync.Once
	server *fnserve.Server
	err    error
}

// function returns the served function, or fails the test when it can't be
// built or started.
func function(tb testing.TB) *Function {
	tb.Helper()
	served.once.Do(func() { served.server, served.err = fnserve.Start() })
	if served.err != nil {
		tb.Fatal(served.err)
	}
	return &Function{client: served.server.Client}
}

// TestMain stops the function after the tests, and fails the run when the
// function exited early or, under -race, raced: a race in the server process
// fails no test by itself.
func TestMain(m *testing.M) {
	code := m.Run()
	if served.server != nil {
		if err := served.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
