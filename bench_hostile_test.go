package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// BenchmarkHostile calls RunFunction on request shapes that push the rules
// to their worst case, rather than on a realistic composition: the tier of
// issue 37 that shows how the cost grows where it can grow fastest. hack/bench.sh
// runs each shape at each N, reports the growth from N=1,000 to 10,000 and
// runs each alone once more for its peak RSS; no test times them.
//
//	sameName          infer ManagedReferences; N-1 Subnets and a VPC all named
//	                  "shared", each Subnet's vpcIdRef naming "shared"
//	matchAllSelector  infer ManagedReferences; N-1 Subnets and a VPC all labelled
//	                  app=x, each Subnet's vpcIdSelector matching app=x, resolved
//	matchAllPatterns  dependencies [{resource: ".*", dependsOn: [".*"]}] over N
//	                  Objects: every one on every other
//	inferredCycle     infer ProviderConfigs; a chain of N Objects, each on the one
//	                  before, all using one composed ProviderConfig that the input
//	                  makes depend on the last: every inferred edge closes a cycle
//	fanIn             N Objects whose spec.references depend on one more Object
//
// Each request is as Crossplane sends it: observed state with UIDs and what
// providers resolved, desired state as the composition renders it. Each run
// gets a fresh copy of the request, made with the timer stopped, so that no
// run sees what another wrote into desired state. B/resource is the bytes
// RunFunction allocates per call over N.
func BenchmarkHostile(b *testing.B) {
	for _, s := range hostileShapes {
		b.Run("shape="+s.name, func(b *testing.B) {
			for _, n := range s.sizes {
				var req *fnv1.RunFunctionRequest // Generated once, for every run of N.
				b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
					if s.short > 0 && n > s.short && testing.Short() {
						b.Skipf("%s at N=%d takes a minute or more today; not under -short", s.name, n)
					}
					if req == nil {
						req = s.generate(n)
						runtime.GC() // Not the generator's garbage.
					}
					if os.Getenv("FD_BENCH_RSS") != "" && b.N == 1 {
						// One call on the request itself, as the served function has it
						// (hack/bench.sh, for the peak RSS): no copy beside it.
						r := req
						req = nil
						runHostile(b, n, r, false)
						return
					}
					runHostile(b, n, req, true)
				})
			}
		})
	}
}

// A hostileShape generates the requests of one shape.
type hostileShape struct {
	name     string
	sizes    []int
	generate func(n int) *fnv1.RunFunctionRequest
	// short is the largest N that runs under -short, 0 for all: what
	// grows as N² takes a minute or more at 10,000 without a limit
	// (sameName, matchAllSelector), or minutes and GBs (matchAllPatterns:
	// N² edges).
	short int
}

var hostileShapes = []hostileShape{
	{name: "sameName", sizes: []int{1_000, 10_000}, generate: sameNameRequest, short: 1_000},
	{name: "matchAllSelector", sizes: []int{1_000, 10_000}, generate: matchAllSelectorRequest, short: 1_000},
	{name: "matchAllPatterns", sizes: []int{1_000, 10_000}, generate: matchAllPatternsRequest, short: 1_000},
	{name: "inferredCycle", sizes: []int{1_000, 10_000}, generate: inferredCycleRequest},
	{name: "fanIn", sizes: []int{1_000, 10_000, 20_000, 50_000}, generate: fanInRequest},
}

// runHostile benchmarks RunFunction on fresh copies of the request, or on
// the request itself when not fresh: once.
func runHostile(b *testing.B, n int, req *fnv1.RunFunctionRequest, fresh bool) {
	b.Helper()
	f := benchFunction(b)
	var before, after runtime.MemStats
	var allocated uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		r := req
		if fresh {
			r = proto.Clone(req).(*fnv1.RunFunctionRequest)
		}
		runtime.ReadMemStats(&before)
		b.StartTimer()
		rsp, err := f.RunFunction(context.Background(), r)
		b.StopTimer()
		runtime.ReadMemStats(&after)
		allocated += after.TotalAlloc - before.TotalAlloc
		if err != nil || len(rsp.GetConditions())+len(rsp.GetResults()) == 0 {
			b.Fatalf("RunFunction(...): no condition nor result, %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(allocated)/float64(b.N)/float64(n), "B/resource")
}

// hostileInput is the function's input with the fields given as JSON.
func hostileInput(fields string) string {
	if fields != "" {
		fields = ", " + fields
	}
	return `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"` + fields + `}`
}

// newHostileRequest is a request of a cluster-scoped composite with the input
// and room for n composed resources.
func newHostileRequest(n int, input string) *fnv1.RunFunctionRequest {
	return &fnv1.RunFunctionRequest{
		Input:    resource.MustStructJSON(input),
		Observed: &fnv1.State{Composite: requesttest.ClusterXR, Resources: make(map[string]*fnv1.Resource, n)},
		Desired:  &fnv1.State{Resources: make(map[string]*fnv1.Resource, n)},
	}
}

// The VPC the Subnets of sameName and matchAllSelector reference: its
// external name is what a resolved reference copies into vpcId.
const (
	hostileVPCID      = "vpc-0a1b2c3d4e5f67890"
	hostileAPIVersion = "ec2.aws.upbound.io/v1beta1"
)

// A managed is an AWS managed resource of a hostile request.
type managed struct {
	kind, name string
	labels     map[string]any
	// forProvider is the spec.forProvider the composition renders;
	// resolved what the provider adds to it once it resolved references.
	forProvider, resolved map[string]any
}

// add puts the managed resource into the request under the composition
// resource name: desired as rendered, observed as the API server returns it
// after the provider resolved its references and created it.
func (m managed) add(req *fnv1.RunFunctionRequest, name string, i int) {
	id := hostileVPCID
	if m.kind != "VPC" {
		id = fmt.Sprintf("subnet-%017x", 0x1000+i)
	}
	metadata := map[string]any{"name": m.name}
	if m.labels != nil {
		metadata["labels"] = m.labels
	}
	spec := map[string]any{"forProvider": m.forProvider, "providerConfigRef": map[string]any{"name": "default"}}
	req.Desired.Resources[name] = &fnv1.Resource{Resource: requesttest.MustStruct(map[string]any{
		"apiVersion": hostileAPIVersion, "kind": m.kind, "metadata": metadata, "spec": spec,
	})}

	labels := map[string]any{"crossplane.io/composite": "app"}
	for k, v := range m.labels {
		labels[k] = v
	}
	forProvider := map[string]any{}
	for k, v := range m.forProvider {
		forProvider[k] = v
	}
	for k, v := range m.resolved {
		forProvider[k] = v
	}
	req.Observed.Resources[name] = &fnv1.Resource{Resource: requesttest.MustStruct(map[string]any{
		"apiVersion": hostileAPIVersion, "kind": m.kind,
		"metadata": map[string]any{
			"name": m.name, "uid": fmt.Sprintf("5e1f0000-0000-4000-8000-%012x", i),
			"labels":      labels,
			"annotations": map[string]any{"crossplane.io/external-name": id, "crossplane.io/composition-resource-name": name},
			"finalizers":  []string{"finalizer.managedresource.crossplane.io"},
		},
		"spec": map[string]any{
			"forProvider": forProvider, "providerConfigRef": map[string]any{"name": "default"},
			"managementPolicies": []string{"*"}, "deletionPolicy": "Delete",
		},
		"status": map[string]any{
			"atProvider": map[string]any{"id": id, "arn": "arn:aws:ec2:eu-west-1:123456789012:" + id},
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-11-02T09:15:32Z"},
				map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-11-02T09:14:09Z"},
			},
		},
	})}
}

// subnetFields are a Subnet's spec.forProvider, without its reference.
func subnetFields(i int) map[string]any {
	return map[string]any{"region": "eu-west-1", "availabilityZone": "eu-west-1a", "cidrBlock": fmt.Sprintf("10.%d.%d.0/24", i/256%256, i%256)}
}

// sameNameRequest: a VPC and N-1 Subnets, all named "shared", each Subnet
// referencing the VPC by vpcIdRef. A reference by name has all N resources
// as candidates: the resolved vpcId and the kind single the VPC out.
func sameNameRequest(n int) *fnv1.RunFunctionRequest {
	req := newHostileRequest(n, hostileInput(`"infer": ["ManagedReferences"]`))
	managed{kind: "VPC", name: "shared", forProvider: map[string]any{"region": "eu-west-1", "cidrBlock": "10.0.0.0/16"}}.add(req, "vpc", 0)
	for i := 1; i < n; i++ {
		fp := subnetFields(i)
		fp["vpcIdRef"] = map[string]any{"name": "shared"}
		managed{kind: "Subnet", name: "shared", forProvider: fp, resolved: map[string]any{"vpcId": hostileVPCID}}.add(req, fmt.Sprintf("subnet-%05d", i), i)
	}
	return req
}

// matchAllSelectorRequest: a VPC and N-1 Subnets, all labelled app=x, each
// Subnet selecting the VPC by a vpcIdSelector that matches app=x, resolved:
// observed, vpcId holds the VPC's ID. A selector has all N resources as
// candidates.
func matchAllSelectorRequest(n int) *fnv1.RunFunctionRequest {
	req := newHostileRequest(n, hostileInput(`"infer": ["ManagedReferences"]`))
	labels := func() map[string]any { return map[string]any{"app": "x"} }
	managed{kind: "VPC", name: "vpc", labels: labels(), forProvider: map[string]any{"region": "eu-west-1", "cidrBlock": "10.0.0.0/16"}}.add(req, "vpc", 0)
	for i := 1; i < n; i++ {
		fp := subnetFields(i)
		fp["vpcIdSelector"] = map[string]any{"matchLabels": labels()}
		name := fmt.Sprintf("subnet-%05d", i)
		managed{kind: "Subnet", name: name, labels: labels(), forProvider: fp, resolved: map[string]any{"vpcId": hostileVPCID}}.add(req, name, i)
	}
	return req
}

// objectRef is an Object's reference to another cluster-scoped Object.
func objectRef(name string) string {
	return fmt.Sprintf(`{"dependsOn": {"apiVersion": %q, "kind": "Object", "name": %q}}`, requesttest.ClusterObject, name)
}

// addObject puts an Object into the request, desired and observed: observed
// with a UID and, besides its own finalizer, those the provider added for the
// Objects that reference it.
func addObject(req *fnv1.RunFunctionRequest, name, references string, carried []string, providerConfig string) {
	o := requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: name, References: references}
	desired := o.Resource()
	o.UID = "uid-" + name
	o.Finalizers = carried
	observed := o.Resource()
	if providerConfig != "" {
		for _, r := range []*fnv1.Resource{desired, observed} {
			r.GetResource().GetFields()["spec"].GetStructValue().Fields["providerConfigRef"] = structpb.NewStructValue(requesttest.MustStruct(map[string]any{"name": providerConfig}))
		}
	}
	req.Desired.Resources[name] = desired
	req.Observed.Resources[name] = observed
}

// matchAllPatternsRequest: N Objects, each of which the input makes depend on
// every other: N(N-1) edges from one rule.
func matchAllPatternsRequest(n int) *fnv1.RunFunctionRequest {
	req := newHostileRequest(n, hostileInput(`"dependencies": [{"resource": ".*", "dependsOn": [".*"]}]`))
	for i := range n {
		addObject(req, fmt.Sprintf("obj-%05d", i), "", nil, "")
	}
	return req
}

// inferredCycleRequest: a chain of N Objects, each depending by its
// spec.references on the one before, all using the composed ProviderConfig
// "config", which the input makes depend on the last Object. Inference makes
// each Object depend on the ProviderConfig, which closes a cycle through the
// whole chain: every inferred edge is left out.
func inferredCycleRequest(n int) *fnv1.RunFunctionRequest {
	last := fmt.Sprintf("obj-%05d", n-1)
	req := newHostileRequest(n+1, hostileInput(`"infer": ["ProviderConfigs"], "dependencies": [{"resource": "config", "dependsOn": ["`+last+`"]}]`))
	for i := range n {
		name := fmt.Sprintf("obj-%05d", i)
		references := ""
		if i > 0 {
			references = "[" + objectRef(fmt.Sprintf("obj-%05d", i-1)) + "]"
		}
		var carried []string
		if i < n-1 {
			carried = []string{requesttest.RefPrefix + fmt.Sprintf("uid-obj-%05d", i+1)}
		}
		addObject(req, name, references, carried, "remote")
	}
	pc := `{"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "metadata": {"name": "remote"%s},
		"spec": {"credentials": {"source": "InjectedIdentity"}}}`
	req.Desired.Resources["config"] = &fnv1.Resource{Resource: resource.MustStructJSON(fmt.Sprintf(pc, ""))}
	req.Observed.Resources["config"] = &fnv1.Resource{Resource: resource.MustStructJSON(fmt.Sprintf(pc, `, "uid": "uid-config"`))}
	return req
}

// fanInRequest: N Objects that all depend on one more, target, which carries
// the reference finalizer of each as the provider added them.
func fanInRequest(n int) *fnv1.RunFunctionRequest {
	req := newHostileRequest(n+1, hostileInput(""))
	carried := make([]string, n)
	references := "[" + objectRef("target") + "]"
	for i := range n {
		name := fmt.Sprintf("dep-%05d", i)
		carried[i] = requesttest.RefPrefix + "uid-" + name
		addObject(req, name, references, nil, "")
	}
	addObject(req, "target", "", carried, "")
	return req
}
