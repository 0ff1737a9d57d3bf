package requesttest

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// The apiVersions of Objects, and the prefix of reference finalizers.
const (
	ClusterObject    = "kubernetes.crossplane.io/v1alpha2"
	NamespacedObject = "kubernetes.m.crossplane.io/v1alpha1"
	RefPrefix        = "kubernetes.crossplane.io/referred-by-object-"
)

// Obj is a composed resource in a test request: a provider-kubernetes Object
// unless kind says otherwise.
type Obj struct {
	APIVersion string
	Kind       string // "" is Object
	Name       string // metadata.name; "" leaves it out
	Namespace  string
	UID        string
	Finalizers []string
	Deleting   bool
	References string // JSON of spec.references; "" leaves it out
}

// Resource is the Obj as a request holds it.
func (o Obj) Resource() *fnv1.Resource {
	metadata := map[string]any{}
	if o.Name != "" {
		metadata["name"] = o.Name
	}
	if o.Namespace != "" {
		metadata["namespace"] = o.Namespace
	}
	if o.UID != "" {
		metadata["uid"] = o.UID
	}
	finalizers := o.Finalizers
	// An observed Object whose references resolve carries the provider's own
	// finalizer: provider-kubernetes manages it.
	if o.UID != "" && (o.Kind == "" || o.Kind == "Object") && !slices.Contains(finalizers, object.ObjectFinalizer) {
		finalizers = append([]string{object.ObjectFinalizer}, finalizers...)
	}
	if finalizers != nil {
		metadata["finalizers"] = finalizers
	}
	if o.Deleting {
		metadata["deletionTimestamp"] = "2026-11-30T10:00:00Z"
	}
	kind := o.Kind
	if kind == "" {
		kind = "Object"
	}
	m := map[string]any{"apiVersion": o.APIVersion, "kind": kind, "metadata": metadata}
	spec := map[string]any{}
	if kind == "Object" {
		spec["forProvider"] = map[string]any{"manifest": map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	}
	if o.References != "" {
		spec["references"] = resource.MustStructJSON(`{"r":` + o.References + `}`).AsMap()["r"]
	}
	if len(spec) > 0 {
		m["spec"] = spec
	}
	return &fnv1.Resource{Resource: MustStruct(m)}
}

// DependsOn is spec.references, as JSON, with one dependsOn of the name.
func DependsOn(name string) string { return fmt.Sprintf(`[{"dependsOn": {"name": %q}}]`, name) }

// ClusterXR is a cluster-scoped composite without a UID.
var ClusterXR = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "metadata": {"name": "app"}}`)}

// Issue371Request is a cluster-scoped XR with one shared Object and n
// dependent Objects (dep-00, dep-01, ...) that reference it by name, all
// observed; the observed shared Object carries the finalizers of the
// dependents listed in carried. An earlier step declared one finalizer of its
// own on the shared Object.
func Issue371Request(n int, carried []int, input string, change func(*fnv1.RunFunctionRequest)) *fnv1.RunFunctionRequest {
	var onShared []string
	for _, i := range carried {
		onShared = append(onShared, fmt.Sprintf("%suid-dep-%02d", RefPrefix, i))
	}
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: ClusterXR, Resources: map[string]*fnv1.Resource{
			"shared": Obj{APIVersion: ClusterObject, Name: "app-shared", UID: "uid-shared", Finalizers: append([]string{"finalizer.managedresource.crossplane.io"}, onShared...)}.Resource(),
		}},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
			"shared": Obj{APIVersion: ClusterObject, Name: "app-shared", Finalizers: []string{"example.org/earlier-step"}}.Resource(),
		}},
	}
	for i := range n {
		name := fmt.Sprintf("dep-%02d", i)
		req.Observed.Resources[name] = Obj{APIVersion: ClusterObject, Name: "app-" + name, UID: "uid-" + name, References: DependsOn("app-shared")}.Resource()
		// Desired as an earlier step renders it: without the CRD's defaults.
		req.Desired.Resources[name] = Obj{APIVersion: ClusterObject, Name: "app-" + name, References: DependsOn("app-shared")}.Resource()
	}
	if input != "" {
		req.Input = resource.MustStructJSON(input)
	}
	if change != nil {
		change(req)
	}
	return req
}

// UIDFinalizers are the reference finalizers of Issue371Request's first n
// dependents.
func UIDFinalizers(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%suid-dep-%02d", RefPrefix, i))
	}
	return out
}

// CycleRequest is two Objects, a and b, that reference each other.
func CycleRequest(input string) *fnv1.RunFunctionRequest {
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: ClusterXR, Resources: map[string]*fnv1.Resource{
			"a": Obj{APIVersion: ClusterObject, Name: "a", UID: "uid-a"}.Resource(),
			"b": Obj{APIVersion: ClusterObject, Name: "b", UID: "uid-b"}.Resource(),
		}},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
			"a": Obj{APIVersion: ClusterObject, Name: "a", References: DependsOn("b")}.Resource(),
			"b": Obj{APIVersion: ClusterObject, Name: "b", References: DependsOn("a")}.Resource(),
		}},
	}
	if input != "" {
		req.Input = resource.MustStructJSON(input)
	}
	return req
}

// Condition is the function's DeletionOrdered condition.
func Condition(status fnv1.Status, reason, message string) *fnv1.Condition {
	return &fnv1.Condition{Type: "DeletionOrdered", Status: status, Reason: reason, Message: &message, Target: fnv1.Target_TARGET_COMPOSITE.Enum()}
}

// ProtectedCondition is DeletionOrdered True: the only reason it is True.
func ProtectedCondition(message string) *fnv1.Condition {
	return Condition(fnv1.Status_STATUS_CONDITION_TRUE, "Protected", message)
}

// FalseCondition is DeletionOrdered False.
func FalseCondition(reason, message string) *fnv1.Condition {
	return Condition(fnv1.Status_STATUS_CONDITION_FALSE, reason, message)
}

// Result is a result about the composite.
func Result(s fnv1.Severity, reason, message string) *fnv1.Result {
	return &fnv1.Result{Severity: s, Reason: &reason, Message: message, Target: fnv1.Target_TARGET_COMPOSITE.Enum()}
}

// Normal is a Normal result.
func Normal(reason, message string) *fnv1.Result {
	return Result(fnv1.Severity_SEVERITY_NORMAL, reason, message)
}

// Summary is the Normal result that sums up the graph.
func Summary(message string) *fnv1.Result { return Normal("Summary", message) }

// Warning is a Warning result.
func Warning(reason, message string) *fnv1.Result {
	return Result(fnv1.Severity_SEVERITY_WARNING, reason, message)
}

// Fatal is a Fatal result.
func Fatal(reason, message string) *fnv1.Result {
	return Result(fnv1.Severity_SEVERITY_FATAL, reason, message)
}

// A Step is how a mode runs: composition.Run or operation.Run.
type Step func(context.Context, *v1beta1.Input, *fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse, protocol.Limits, logging.Logger) error

// Run runs a mode on a copy of the request as the function does, with the
// request's input decoded for the step.
func Run(run Step, step v1beta1.Step, req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	req = proto.Clone(req).(*fnv1.RunFunctionRequest)
	rsp := response.To(req, response.DefaultTTL)
	in, err := request.Input(req, step)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "invalid function input"))
		return rsp
	}
	if err := run(context.Background(), in, req, rsp, protocol.CrossplaneLimits, logging.NewNopLogger()); err != nil {
		panic(fmt.Sprintf("a call that nothing cancels failed: %v", err))
	}
	return rsp
}

// BadInputRequest is the #371 request with two dependents of the shared
// Object, dep-00 and dep-01 (only dep-00's finalizer carried), and a third
// dependent, "bad", that the cases break. Unbroken, shared declares all
// three finalizers.
func BadInputRequest(input string, change func(*fnv1.RunFunctionRequest)) *fnv1.RunFunctionRequest {
	return Issue371Request(2, []int{0}, input, func(r *fnv1.RunFunctionRequest) {
		r.Desired.Resources["bad"] = Obj{APIVersion: ClusterObject, Name: "app-bad", References: DependsOn("app-shared")}.Resource()
		r.Observed.Resources["bad"] = Obj{APIVersion: ClusterObject, Name: "app-bad", UID: "uid-bad", References: DependsOn("app-shared")}.Resource()
		if change != nil {
			change(r)
		}
	})
}

// WithSharedMetadata sets a field of the shared Object's desired metadata.
func WithSharedMetadata(field string, v *structpb.Value) func(*fnv1.RunFunctionRequest) {
	return func(r *fnv1.RunFunctionRequest) {
		r.Desired.Resources["shared"].Resource.Fields["metadata"].GetStructValue().Fields[field] = v
	}
}

// Chain is n Objects, object-0000 and on, each referencing the next: a
// chain, or with cycle a cycle back to the first; with the input, when it
// isn't "".
func Chain(n int, cycle bool, input string) *fnv1.RunFunctionRequest {
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: ClusterXR, Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	if input != "" {
		req.Input = resource.MustStructJSON(input)
	}
	name := func(i int) string { return fmt.Sprintf("object-%04d", i) }
	for i := range n {
		refs := ""
		switch {
		case i+1 < n:
			refs = DependsOn(name(i + 1))
		case cycle:
			refs = DependsOn(name(0))
		}
		req.Observed.Resources[name(i)] = Obj{APIVersion: ClusterObject, Name: name(i), UID: "uid-" + name(i), References: refs}.Resource()
		req.Desired.Resources[name(i)] = Obj{APIVersion: ClusterObject, Name: name(i), References: refs}.Resource()
	}
	return req
}
