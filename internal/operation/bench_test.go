package operation

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// BenchmarkOperationSweep is a CronOperation's sweep of n Objects, each
// referencing a ConfigMap of its own and one of n/100 shared Objects (the bug
// report's shape, a hundred times over: one object can't carry 10,000
// finalizers, which with their managedFields would pass etcd's 1.5 MiB), with
// every reference finalizer missing: the worst case for the sizes. It
// runs the function's three calls as core makes them, and reports, besides
// the time of all three, the size of the largest request (the last: every
// Object and every target) and of the last response (the partial objects and
// the requirements). A function accepts requests up to its
// --max-recv-message-size (4 MiB by default); core accepts responses up to
// gRPC's default, 4 MiB.
//
//	go test -run '^$' -bench '^BenchmarkOperationSweep$' ./internal/operation
func BenchmarkOperationSweep(b *testing.B) {
	in, err := v1beta1.DecodeFor(nil, v1beta1.StepOperation)
	if err != nil {
		b.Fatal(err)
	}
	log := logging.NewNopLogger()
	for _, n := range []int{1_000, 5_000, 10_000} {
		b.Run(fmt.Sprintf("Objects=%d", n), func(b *testing.B) {
			objects, targets := sweepCluster(n)
			configMaps := &fnv1.Resources{}
			for _, name := range slices.Sorted(maps.Keys(targets)) {
				configMaps.Items = append(configMaps.Items, &fnv1.Resource{Resource: targets[name]})
			}
			var last, lastRsp int
			for b.Loop() {
				req := &fnv1.RunFunctionRequest{Desired: &fnv1.State{}}
				for range 3 {
					rsp := response.To(req, response.DefaultTTL)
					if err := Run(context.Background(), in, req, rsp, protocol.Limits{ResponseBytes: math.MaxInt}, log); err != nil { // Sized, not refused.
						b.Fatal(err)
					}
					last, lastRsp = proto.Size(req), proto.Size(rsp)
					required := map[string]*fnv1.Resources{}
					for name, sel := range rsp.GetRequirements().GetResources() {
						switch m := sel.GetMatch().(type) {
						case *fnv1.ResourceSelector_MatchName:
							required[name] = &fnv1.Resources{Items: []*fnv1.Resource{{Resource: targets[sel.GetNamespace()+"/"+m.MatchName]}}}
						default:
							switch sel.GetKind() + " " + sel.GetApiVersion() {
							case "Object kubernetes.crossplane.io/v1alpha2":
								required[name] = objects
							case "ConfigMap v1":
								required[name] = configMaps
							default:
								required[name] = &fnv1.Resources{}
							}
						}
					}
					req = &fnv1.RunFunctionRequest{Desired: &fnv1.State{}, RequiredResources: required}
				}
			}
			b.ReportMetric(float64(last)/(1<<20), "request-MiB")
			b.ReportMetric(float64(lastRsp)/(1<<20), "response-MiB")
		})
	}
}

// sweepCluster is n Objects and their targets as the API server returns
// them, managedFields included: about 2 KiB an Object.
func sweepCluster(n int) (*fnv1.Resources, map[string]*structpb.Struct) {
	objects := &fnv1.Resources{}
	targets := map[string]*structpb.Struct{}
	managed := func(manager string) []any {
		return []any{map[string]any{
			"manager": manager, "operation": "Update", "apiVersion": "kubernetes.crossplane.io/v1alpha2", "time": "2026-12-01T10:00:00Z",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{"f:finalizers": map[string]any{".": map[string]any{}, "v:\"finalizer.managedresource.crossplane.io\"": map[string]any{}}}, "f:spec": map[string]any{"f:forProvider": map[string]any{"f:manifest": map[string]any{}}, "f:references": map[string]any{}}},
		}}
	}
	for i := range n / 100 {
		shared := map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"metadata": map[string]any{"name": fmt.Sprintf("shared-%03d", i), "uid": fmt.Sprintf("00000000-0000-0000-0000-%012d", i), "finalizers": []any{"finalizer.managedresource.crossplane.io"}},
			"spec":     map[string]any{"forProvider": map[string]any{"manifest": map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": fmt.Sprintf("apps-%03d", i)}}}},
		}
		objects.Items = append(objects.Items, &fnv1.Resource{Resource: requesttest.MustStruct(shared)})
	}
	for i := range n {
		name := fmt.Sprintf("config-%05d", i)
		manifest := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "apps"}, "data": map[string]any{"key": "value"}}
		o := map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"metadata": map[string]any{
				"name": name, "uid": fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), "resourceVersion": "123456", "generation": 1,
				"creationTimestamp": "2026-12-01T10:00:00Z", "labels": map[string]any{"app.kubernetes.io/part-of": "apps"},
				"finalizers": []any{"finalizer.managedresource.crossplane.io"}, "managedFields": managed("provider-kubernetes"),
			},
			"spec": map[string]any{
				"deletionPolicy": "Delete", "managementPolicies": []any{"*"}, "providerConfigRef": map[string]any{"name": "default"}, "readiness": map[string]any{"policy": "SuccessfulCreate"},
				"forProvider": map[string]any{"manifest": manifest},
				"references": []any{
					map[string]any{"dependsOn": map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": fmt.Sprintf("shared-%03d", i/100)}},
					map[string]any{"dependsOn": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "apps", "name": name + "-settings"}},
				},
			},
			"status": map[string]any{
				"atProvider": map[string]any{"manifest": manifest},
				"conditions": []any{
					map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-12-01T10:00:00Z"},
					map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-12-01T10:00:00Z"},
				},
			},
		}
		objects.Items = append(objects.Items, &fnv1.Resource{Resource: requesttest.MustStruct(o)})
		targets["apps/"+name+"-settings"] = requesttest.MustStruct(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name + "-settings", "namespace": "apps", "uid": fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i), "resourceVersion": "123457"},
			"data":     map[string]any{"setting": "on"},
		})
	}
	return objects, targets
}
