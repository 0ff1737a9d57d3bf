package loop

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// generatedRequest composes n Objects around a few shared ones, in the shape
// of #371, with every complication the rules know about: dependents not yet
// created or being deleted, references to external objects, finalizers the
// provider added or lost, stale ones, and finalizers of earlier steps.
func generatedRequest(seed uint64, n int) *fnv1.RunFunctionRequest {
	rng := rand.New(rand.NewPCG(seed, seed))
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: requesttest.ClusterXR, Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	shared := max(1, n/50)
	onShared := make([][]string, shared)
	for i := range n {
		name := fmt.Sprintf("r%04d", i)
		var refs []string
		if i >= shared {
			for range 1 + rng.IntN(3) {
				switch target := rng.IntN(10); {
				case target == 0:
					refs = append(refs, `{"dependsOn": {"apiVersion": "v1", "kind": "Secret", "name": "external", "namespace": "default"}}`)
				case target < 8:
					refs = append(refs, fmt.Sprintf(`{"dependsOn": {"name": "obj-r%04d"}}`, rng.IntN(shared)))
				default:
					refs = append(refs, fmt.Sprintf(`{"patchesFrom": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "name": "obj-r%04d", "fieldPath": "metadata.uid"}, "toFieldPath": "data.uid"}`, shared+rng.IntN(n-shared)))
				}
			}
		}
		references := ""
		if len(refs) > 0 {
			references = "[" + strings.Join(refs, ",") + "]"
		}
		o := requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "obj-" + name, References: references}
		if i%7 == 0 {
			o.Finalizers = []string{"example.org/earlier-step"}
		}
		req.Desired.Resources[name] = o.Resource()
		if rng.IntN(10) == 0 {
			continue // Not created yet.
		}
		o.UID, o.Finalizers, o.Deleting = "uid-"+name, nil, rng.IntN(20) == 0
		if i < shared {
			o.Finalizers = []string{objectFinalizer, requesttest.RefPrefix + "uid-gone"}
		}
		req.Observed.Resources[name] = o.Resource()
		for j := range shared {
			if rng.IntN(2) == 0 {
				onShared[j] = append(onShared[j], requesttest.RefPrefix+o.UID)
			}
		}
	}
	for j := range shared {
		name := fmt.Sprintf("r%04d", j)
		if r, ok := req.Observed.Resources[name]; ok {
			l := r.Resource.Fields["metadata"].GetStructValue().Fields["finalizers"].GetListValue()
			for _, f := range onShared[j] {
				l.Values = append(l.Values, requesttest.MustStruct(map[string]any{"f": f}).Fields["f"])
			}
		}
	}
	return req
}

const objectFinalizer = "finalizer.managedresource.crossplane.io"

// TestTheSameRequestGetsTheSameAnswerAndItsOwnOutputChangesNothing runs the function many times on a request of
// hundreds of resources: Go randomises map order on every range, so equal
// responses show that no map order leaks into the output. It then runs the
// function on its own output and expects no change.
func TestTheSameRequestGetsTheSameAnswerAndItsOwnOutputChangesNothing(t *testing.T) {
	f := function(t)
	req := generatedRequest(371, 400)
	run := func(r *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
		rsp, err := f.run(r)
		if err != nil {
			t.Fatalf("RunFunction(...): %v", err)
		}
		return rsp
	}
	first := run(req)
	if proto.Equal(req.GetDesired(), first.GetDesired()) {
		t.Fatal("the generated request needs no finalizer: it tests nothing")
	}
	// proto.Equal is fast; cmp.Diff only explains a difference.
	for range 20 {
		if again := run(req); !proto.Equal(first, again) {
			t.Fatalf("RunFunction(...) differs between runs of the same request: -first, +again:\n%s", cmp.Diff(first, again, protocmp.Transform()))
		}
	}
	own := proto.Clone(req).(*fnv1.RunFunctionRequest)
	own.Desired = first.GetDesired()
	if second := run(own); !proto.Equal(first.GetDesired(), second.GetDesired()) {
		t.Errorf("RunFunction(its own output) changed desired state: -first, +second:\n%s", cmp.Diff(first.GetDesired(), second.GetDesired(), protocmp.Transform()))
	}

	for name, r := range first.GetDesired().GetResources() {
		for _, v := range r.GetResource().GetFields()["metadata"].GetStructValue().GetFields()["finalizers"].GetListValue().GetValues() {
			if v.GetStringValue() == objectFinalizer {
				t.Errorf("desired %q declares %s", name, objectFinalizer)
			}
		}
	}
}
