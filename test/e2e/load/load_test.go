//go:build e2e

// Package load serves the function's real binary and pushes it to its
// limits: a request over --max-recv-message-size, a composition of 10,000
// resources, a thousand concurrent calls, SIGTERM with calls in flight; and
// checks that nothing sensitive leaks into its answers or its logs.
package load

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

const (
	refPrefix  = "kubernetes.crossplane.io/referred-by-object-"
	maxMessage = 1 << 30
)

// dial returns a client of the function at the address that sends and
// receives messages of up to 1 GiB, so that only the server's limit counts.
func dial(t *testing.T, address string) fnv1.FunctionRunnerServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return fnv1.NewFunctionRunnerServiceClient(conn)
}

func call(c fnv1.FunctionRunnerServiceClient, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return c.RunFunction(ctx, req)
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// object is a cluster-scoped Object named name managing a ConfigMap with
// data, referencing each of refs by dependsOn.
func object(t testing.TB, name, uid string, data map[string]any, refs ...string) *fnv1.Resource {
	t.Helper()
	metadata := map[string]any{"name": name}
	if uid != "" {
		// Observed, and managed by provider-kubernetes.
		metadata["uid"] = uid
		metadata["finalizers"] = []any{"finalizer.managedresource.crossplane.io"}
	}
	spec := map[string]any{"forProvider": map[string]any{"manifest": map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "app"}, "data": data,
	}}}
	if len(refs) > 0 {
		var references []any
		for _, r := range refs {
			references = append(references, map[string]any{"dependsOn": map[string]any{"name": r}})
		}
		spec["references"] = references
	}
	return &fnv1.Resource{Resource: mustStruct(t, map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": metadata, "spec": spec})}
}

// composition returns a request of n composed Objects: hubs shared ones
// (hub-0000...), every other one referencing one to three hubs, all observed;
// padding adds that many bytes of ConfigMap data to each. want is what each
// hub must declare: every dependent's finalizer, sorted.
func composition(t testing.TB, n, hubs, padding int, tag string) (req *fnv1.RunFunctionRequest, want map[string][]string) {
	t.Helper()
	req = &fnv1.RunFunctionRequest{
		Meta: &fnv1.RequestMeta{Tag: tag},
		Observed: &fnv1.State{
			Composite: &fnv1.Resource{Resource: mustStruct(t, map[string]any{"apiVersion": "example.org/v1", "kind": "XApp", "metadata": map[string]any{"name": tag}})},
			Resources: map[string]*fnv1.Resource{},
		},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	data := map[string]any{"padding": strings.Repeat("x", padding)}
	want = map[string][]string{}
	for i := range n {
		name := fmt.Sprintf("obj-%05d", i)
		var refs []string
		if i >= hubs {
			for k := range 1 + i%3 {
				hub := fmt.Sprintf("obj-%05d", (i+k*7)%hubs)
				if !slices.Contains(refs, hub) {
					refs = append(refs, hub)
					want[hub] = append(want[hub], refPrefix+"uid-"+name)
				}
			}
		}
		req.Desired.Resources[name] = object(t, name, "", data, refs...)
		req.Observed.Resources[name] = object(t, name, "uid-"+name, data, refs...)
	}
	for hub := range want {
		slices.Sort(want[hub])
	}
	return req, want
}

// checkComposition checks that every hub declares exactly its dependents'
// finalizers, every other resource is as requested, and the answer is the
// request's.
func checkComposition(t *testing.T, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, want map[string][]string) {
	t.Helper()
	if rsp.GetMeta().GetTag() != req.GetMeta().GetTag() {
		t.Fatalf("the answer carries tag %q, want %q", rsp.GetMeta().GetTag(), req.GetMeta().GetTag())
	}
	if len(rsp.GetDesired().GetResources()) != len(req.GetDesired().GetResources()) {
		t.Fatalf("%d desired resources, want %d", len(rsp.GetDesired().GetResources()), len(req.GetDesired().GetResources()))
	}
	for name, r := range rsp.GetDesired().GetResources() {
		var got []string
		for _, v := range r.GetResource().GetFields()["metadata"].GetStructValue().GetFields()["finalizers"].GetListValue().GetValues() {
			got = append(got, v.GetStringValue())
		}
		if !slices.Equal(got, want[name]) {
			t.Fatalf("%s declares %d finalizers, want %d: %.200q", name, len(got), len(want[name]), got)
		}
		if len(want[name]) == 0 && !proto.Equal(r, req.GetDesired().GetResources()[name]) {
			t.Fatalf("%s changed, though it is no dependency", name)
		}
	}
}

// TestMaxRecvMessageSize sends a request over --max-recv-message-size: it is
// refused with ResourceExhausted, which says the size and the limit, and the
// server answers the next request, on the same connection and a new one.
func TestMaxRecvMessageSize(t *testing.T) {
	p, address := harness.ServeFunction(t, nil, "--insecure", "--max-recv-message-size=1")
	client := dial(t, address)
	big, _ := composition(t, 200, 5, 10_000, "big") // About 4 MB.
	if size := proto.Size(big); size <= 1<<20 {
		t.Fatalf("the big request is %d bytes, not over 1 MiB", size)
	}
	_, err := call(client, big)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("a %d byte request over a 1 MiB limit: %v; want ResourceExhausted naming the size and the limit", proto.Size(big), err)
	}
	t.Logf("a %d byte request: %v", proto.Size(big), err)

	small, want := composition(t, 20, 2, 0, "small")
	rsp, err := call(client, small)
	if err != nil {
		t.Fatalf("a small request on the same connection after the big one: %v", err)
	}
	checkComposition(t, small, rsp, want)
	rsp, err = call(dial(t, address), small)
	if err != nil {
		t.Fatalf("a small request on a new connection: %v", err)
	}
	checkComposition(t, small, rsp, want)
	select {
	case <-p.Exited():
		t.Fatalf("the function exited: %v", p.Err())
	default:
	}
}

// TestTenThousandResources calls the binary with a composition of 10,000
// Objects under a raised limit and checks every hub's finalizers.
func TestTenThousandResources(t *testing.T) {
	req, want := composition(t, 10_000, 100, 0, "ten-thousand")
	size := proto.Size(req)
	// The limit is in MiB: round up, with room.
	// Crossplane reads 4 MB of an answer: this proves the function's
	// capacity, past what Crossplane takes.
	_, address := harness.ServeFunction(t, nil, "--insecure", fmt.Sprintf("--max-recv-message-size=%d", size>>20+2), "--max-response-size=512")
	client := dial(t, address)
	start := time.Now()
	rsp, err := call(client, req)
	if err != nil {
		t.Fatalf("RunFunction with 10,000 resources, %d bytes: %v", size, err)
	}
	t.Logf("10,000 resources: a %.1f MB request answered in %s with %.1f MB", float64(size)/1e6, time.Since(start).Round(time.Millisecond), float64(proto.Size(rsp))/1e6)
	checkComposition(t, req, rsp, want)

	// Under the default limit of 4 MB the same request is refused, clearly.
	_, address = harness.ServeFunction(t, nil, "--insecure")
	if _, err := call(dial(t, address), req); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a %d byte request under the default limit: %v; want ResourceExhausted", size, err)
	}
}

// TestConcurrentCallsToTheBinary makes a thousand calls at once to the
// binary, each with a different composition, and checks every answer.
func TestConcurrentCallsToTheBinary(t *testing.T) {
	_, address := harness.ServeFunction(t, nil, "--insecure")
	client := dial(t, address)
	const calls = 1000
	reqs := make([]*fnv1.RunFunctionRequest, calls)
	wants := make([]map[string][]string, calls)
	for i := range calls {
		reqs[i], wants[i] = composition(t, 3+i%40, 1+i%3, 0, fmt.Sprintf("call-%04d", i))
	}
	rsps := make([]*fnv1.RunFunctionResponse, calls)
	errs := make([]error, calls)
	var ready, wg sync.WaitGroup
	ready.Add(1)
	for i := range calls {
		wg.Go(func() {
			ready.Wait()
			rsps[i], errs[i] = call(client, reqs[i])
		})
	}
	start := time.Now()
	ready.Done()
	wg.Wait()
	t.Logf("%d concurrent calls to the binary answered in %s", calls, time.Since(start).Round(time.Millisecond))
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		checkComposition(t, reqs[i], rsps[i], wants[i])
	}
}

// TestSIGTERMCancelsCallsPastTheGracePeriod sends SIGTERM while a call
// that takes seconds is in flight, to a binary whose grace period is a
// millisecond: the call is cancelled, fails, and the process exits, before
// Kubernetes would kill it.
func TestSIGTERMCancelsCallsPastTheGracePeriod(t *testing.T) {
	p, address := harness.ServeFunction(t, nil, "--insecure", "--debug", "--max-recv-message-size=512", "--max-response-size=512", "--grace-period=1ms")
	client := dial(t, address)
	req, _ := composition(t, 10_000, 100, 0, "grace")
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = call(client, req)
	}()
	// The function logs each call as it starts, at debug level; one of
	// 10,000 resources then takes seconds, a thousand times the grace period.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.Output(), `"tag": "grace"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the call didn't reach the function within 2 minutes\n%s", p.Output())
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(time.Minute):
		t.Fatalf("the function still runs a minute after SIGTERM with a grace period of 1ms")
	}
	if strings.Contains(p.Output(), "Planned dependencies") {
		t.Logf("the call had planned before it was cut off: it was cancelled in its writing")
	}
	<-done
	if code := status.Code(err); code != codes.Unavailable && code != codes.Canceled {
		t.Errorf("the call in flight past the grace period: %v, want it cut off (Unavailable or Canceled)", err)
	}
}

// TestSIGTERMDrainsCalls sends SIGTERM to the binary while calls are in
// flight: Kubernetes sends it to a function pod that is being replaced, and
// Crossplane retries a failed call only on the next reconcile. Every call in
// flight should finish within the grace period, here longer than they take,
// and the process then exit.
func TestSIGTERMDrainsCalls(t *testing.T) {
	p, address := harness.ServeFunction(t, nil, "--insecure", "--debug", "--max-recv-message-size=512", "--max-response-size=512", "--grace-period=10m")
	client := dial(t, address)
	const calls = 4
	errs := make([]error, calls)
	rsps := make([]*fnv1.RunFunctionResponse, calls)
	reqs := make([]*fnv1.RunFunctionRequest, calls)
	wants := make([]map[string][]string, calls)
	for i := range calls {
		reqs[i], wants[i] = composition(t, 10_000, 100, 0, fmt.Sprintf("sigterm-%d", i))
	}
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { rsps[i], errs[i] = call(client, reqs[i]) })
	}
	// The function logs its plan at debug level in the middle of a call:
	// then at least that call is in flight.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.Output(), "Planned dependencies") {
		if time.Now().After(deadline) {
			t.Fatalf("no call reached the function within 2 minutes\n%s", p.Output())
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	select {
	case <-p.Exited():
		t.Logf("after SIGTERM the function exited: %v", p.Err())
	case <-time.After(time.Minute):
		t.Errorf("the function still runs a minute after SIGTERM")
	}
	for i := range calls {
		if errs[i] != nil {
			t.Errorf("call %d in flight at SIGTERM failed: %v", i, errs[i])
			continue
		}
		checkComposition(t, reqs[i], rsps[i], wants[i])
	}
}

// rawCodec sends bytes as they are: a request a protobuf client can't
// encode, such as one with strings that are not UTF-8.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = data
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestInvalidUTF8IsRefusedBeforeTheFunctionRuns sends a request whose
// composed resource's name is not UTF-8: protobuf refuses to decode such a
// string, so gRPC answers codes.Internal, naming the field's type, and the
// function never runs; the next call is answered as usual.
func TestInvalidUTF8IsRefusedBeforeTheFunctionRuns(t *testing.T) {
	p, address := harness.ServeFunction(t, nil, "--insecure", "--debug")
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	req, want := composition(t, 5, 1, 0, "utf8")
	valid, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	const name = "obj-00001"
	if !strings.Contains(string(valid), name) {
		t.Fatalf("the request names no %s", name)
	}
	invalid := []byte(strings.ReplaceAll(string(valid), name, "obj-\xff\xfe\xfd\xfc"))
	var out []byte
	err = conn.Invoke(context.Background(), "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction", &invalid, &out, grpc.ForceCodec(rawCodec{}))
	t.Logf("a request that is not UTF-8: %v", err)
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "invalid UTF-8") {
		t.Errorf("a request that is not UTF-8: %v, want codes.Internal saying invalid UTF-8", err)
	}
	if strings.Contains(p.Output(), `"tag": "utf8"`) {
		t.Errorf("the function ran a request that is not UTF-8:\n%s", p.Output())
	}
	rsp, err := call(dial(t, address), req)
	if err != nil {
		t.Fatalf("the valid request after it: %v", err)
	}
	checkComposition(t, req, rsp, want)
}
