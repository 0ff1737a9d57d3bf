package fn

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

const inferReferences = `{` + typed + `, "infer": ["ManagedReferences"]}`

// allocated runs the function on a copy of the request and returns the
// response and the bytes the call allocated.
func allocated(t *testing.T, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, uint64) {
	t.Helper()
	f := New(logging.NewNopLogger())
	req = proto.Clone(req).(*fnv1.RunFunctionRequest)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rsp, err := f.RunFunction(context.Background(), req)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return rsp, after.TotalAlloc - before.TotalAlloc
}

func TestInferenceThatFindsTooManyDependenciesIsRefusedNamingTheKindAndTheCount(t *testing.T) {
	// 300 Subnets that name the 100 before them: 24,950 edges, past the
	// 20,000 inference may find at the 251st.
	req := requesttest.Referencing(300, 100, inferReferences)
	rsp, refusing := allocated(t, req)
	want := "infer ManagedReferences: inference found more than the 20000 dependencies one composite may have; the one past it is subnet-00250's spec.forProvider.subnetIdRefs (composed resource 251 of 300): infer fewer kinds, or split the composite"
	if got := fatal(t, req, rsp); got != want {
		t.Errorf("RunFunction(300 Subnets naming 100 each):\ngot  %s\nwant %s", got, want)
	}
	// The first 250 alone make 19,950 edges, whose Usages the step plans
	// (then finds too large to write): refused at the edge past the bound,
	// before any Usage is planned, the call spends about a third of that.
	_, accepting := allocated(t, requesttest.Referencing(250, 100, inferReferences))
	if refusing > accepting/2 {
		t.Errorf("refusing 24,950 inferred edges allocated %d bytes, more than half the %d of planning 19,950", refusing, accepting)
	}
}

// padded returns the request with Objects in desired state, as an earlier
// step rendered them, that make it about bytes larger.
func padded(req *fnv1.RunFunctionRequest, bytes int) *fnv1.RunFunctionRequest {
	const each = 1 << 20 // What etcd holds of one object, about.
	for i := 0; bytes > 0; i++ {
		name := fmt.Sprintf("padding-%d", i)
		req.Desired.Resources[name] = &fnv1.Resource{Resource: requesttest.MustStruct(map[string]any{
			"apiVersion": requesttest.ClusterObject, "kind": "Object", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"forProvider": map[string]any{"manifest": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "default"},
				"data": map[string]any{"blob": strings.Repeat("x", min(each, bytes))},
			}}},
		})}
		bytes -= each
	}
	return req
}

func TestAResponseAlreadyLargerThanCrossplaneReadsGetsNoMoreThanTheLimitFromTheFunction(t *testing.T) {
	limit := protocol.CrossplaneLimits.ResponseBytes
	t.Run("AddingLessPassesAsIfUnlimited", func(t *testing.T) {
		// 400 Subnets that name the 8 before them: 3,164 Usages, about
		// 3.5 MB, on a desired state of 5 MiB.
		req := padded(requesttest.Referencing(400, 8, inferReferences), 5<<20)
		rsp, err := run(t, context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		unlimited, err := New(logging.NewNopLogger()).WithLimits(protocol.Limits{ResponseBytes: 1 << 30}).RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(unlimited, rsp) {
			t.Errorf("RunFunction(...) at Crossplane's limit: -unlimited, +got:\n%s", cmp.Diff(unlimited, rsp, protocmp.Transform()))
		}
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				t.Errorf("a Fatal result: %s", r.GetMessage())
			}
		}
		// Past 1 MiB of additions, the step measures the response.
		if added := proto.Size(rsp.GetDesired()) - proto.Size(req.GetDesired()); proto.Size(req.GetDesired()) <= limit || added <= 1<<20 || added > limit {
			t.Errorf("desired state of %d bytes, %d added: the case no longer has a response past %d before the function writes, and more than 1 MiB added within it", proto.Size(req.GetDesired()), added, limit)
		}
	})
	t.Run("AddingMoreIsRefused", func(t *testing.T) {
		// 500 Subnets that name the 10 before them: 4,945 Usages, about
		// 5.5 MB.
		req := padded(requesttest.Referencing(500, 10, inferReferences), 5<<20)
		rsp, err := run(t, context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got := fatal(t, req, rsp)
		if !strings.HasPrefix(got, "the references, finalizers, Usages and labels the function would add are about ") || !strings.Contains(got, fmt.Sprintf("more than the %d Crossplane reads, to a response already ", limit)) {
			t.Errorf("RunFunction(4,945 Usages to add to a response of 5 MiB) Fatal: %s, want what the function adds and Crossplane's limit", got)
		}
	})
}
