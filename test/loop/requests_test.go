package loop

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

// The request builders of package main's unit tests, which
// FuzzRunFunction's seeds and generatedRequest are made with. Package main's
// tests keep theirs until they move out of it too, and both then use one.

const (
	clusterObject = "kubernetes.crossplane.io/v1alpha2"
	refPrefix     = "kubernetes.crossplane.io/referred-by-object-"
)

// obj is a composed resource in a test request: a provider-kubernetes Object
// unless kind says otherwise.
type obj struct {
	apiVersion string
	kind       string // "" is Object
	name       string // metadata.name; "" leaves it out
	namespace  string
	uid        string
	finalizers []string
	deleting   bool
	references string // JSON of spec.references; "" leaves it out
}

func (o obj) resource() *fnv1.Resource {
	metadata := map[string]any{}
	if o.name != "" {
		metadata["name"] = o.name
	}
	if o.namespace != "" {
		metadata["namespace"] = o.namespace
	}
	if o.uid != "" {
		metadata["uid"] = o.uid
	}
	finalizers := o.finalizers
	// An observed Object whose references resolve carries the provider's own
	// finalizer: provider-kubernetes manages it.
	if o.uid != "" && (o.kind == "" || o.kind == "Object") && !slices.Contains(finalizers, objectFinalizer) {
		finalizers = append([]string{objectFinalizer}, finalizers...)
	}
	if finalizers != nil {
		metadata["finalizers"] = finalizers
	}
	if o.deleting {
		metadata["deletionTimestamp"] = "2026-11-30T10:00:00Z"
	}
	kind := o.kind
	if kind == "" {
		kind = "Object"
	}
	m := map[string]any{"apiVersion": o.apiVersion, "kind": kind, "metadata": metadata}
	spec := map[string]any{}
	if kind == "Object" {
		spec["forProvider"] = map[string]any{"manifest": map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	}
	if o.references != "" {
		spec["references"] = resource.MustStructJSON(`{"r":` + o.references + `}`).AsMap()["r"]
	}
	if len(spec) > 0 {
		m["spec"] = spec
	}
	return &fnv1.Resource{Resource: mustStruct(m)}
}

func mustStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(normalise(m).(map[string]any))
	if err != nil {
		panic(err)
	}
	return s
}

// normalise turns []string into []any, which structpb accepts.
func normalise(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalise(e)
		}
		return v
	case []string:
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = s
		}
		return out
	default:
		return v
	}
}

func dependsOn(name string) string { return fmt.Sprintf(`[{"dependsOn": {"name": %q}}]`, name) }

var clusterXR = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "metadata": {"name": "app"}}`)}

// issue371Request is a cluster-scoped XR with one shared Object and n
// dependent Objects (dep-00, dep-01, ...) that reference it by name, all
// observed; the observed shared Object carries the finalizers of the
// dependents listed in carried. An earlier step declared one finalizer of its
// own on the shared Object.
func issue371Request(n int, carried []int, input string, change func(*fnv1.RunFunctionRequest)) *fnv1.RunFunctionRequest {
	var onShared []string
	for _, i := range carried {
		onShared = append(onShared, fmt.Sprintf("%suid-dep-%02d", refPrefix, i))
	}
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: clusterXR, Resources: map[string]*fnv1.Resource{
			"shared": obj{apiVersion: clusterObject, name: "app-shared", uid: "uid-shared", finalizers: append([]string{"finalizer.managedresource.crossplane.io"}, onShared...)}.resource(),
		}},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
			"shared": obj{apiVersion: clusterObject, name: "app-shared", finalizers: []string{"example.org/earlier-step"}}.resource(),
		}},
	}
	for i := range n {
		name := fmt.Sprintf("dep-%02d", i)
		req.Observed.Resources[name] = obj{apiVersion: clusterObject, name: "app-" + name, uid: "uid-" + name, references: dependsOn("app-shared")}.resource()
		// Desired as an earlier step renders it: without the CRD's defaults.
		req.Desired.Resources[name] = obj{apiVersion: clusterObject, name: "app-" + name, references: dependsOn("app-shared")}.resource()
	}
	if input != "" {
		req.Input = resource.MustStructJSON(input)
	}
	if change != nil {
		change(req)
	}
	return req
}

func cycleRequest(input string) *fnv1.RunFunctionRequest {
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: clusterXR, Resources: map[string]*fnv1.Resource{
			"a": obj{apiVersion: clusterObject, name: "a", uid: "uid-a"}.resource(),
			"b": obj{apiVersion: clusterObject, name: "b", uid: "uid-b"}.resource(),
		}},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
			"a": obj{apiVersion: clusterObject, name: "a", references: dependsOn("b")}.resource(),
			"b": obj{apiVersion: clusterObject, name: "b", references: dependsOn("a")}.resource(),
		}},
	}
	if input != "" {
		req.Input = resource.MustStructJSON(input)
	}
	return req
}

// badInputRequest is the #371 request with two dependents of the shared
// Object, dep-00 and dep-01 (only dep-00's finalizer carried), and a third
// dependent, "bad", that the cases break. Unbroken, shared declares all
// three finalizers.
func badInputRequest(input string, change func(*fnv1.RunFunctionRequest)) *fnv1.RunFunctionRequest {
	return issue371Request(2, []int{0}, input, func(r *fnv1.RunFunctionRequest) {
		r.Desired.Resources["bad"] = obj{apiVersion: clusterObject, name: "app-bad", references: dependsOn("app-shared")}.resource()
		r.Observed.Resources["bad"] = obj{apiVersion: clusterObject, name: "app-bad", uid: "uid-bad", references: dependsOn("app-shared")}.resource()
		if change != nil {
			change(r)
		}
	})
}

// withSharedMetadata sets a field of the shared Object's desired metadata.
func withSharedMetadata(field string, v *structpb.Value) func(*fnv1.RunFunctionRequest) {
	return func(r *fnv1.RunFunctionRequest) {
		r.Desired.Resources["shared"].Resource.Fields["metadata"].GetStructValue().Fields[field] = v
	}
}
