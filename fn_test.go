package main

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/test/oracle"
)

const (
	// objectFinalizer is provider-kubernetes' own finalizer on an Object it manages.
	objectFinalizer  = oracle.ObjectFinalizer
	clusterObject    = "kubernetes.crossplane.io/v1alpha2"
	namespacedObject = "kubernetes.m.crossplane.io/v1alpha1"
	refPrefix        = "kubernetes.crossplane.io/referred-by-object-"
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

// runCopy calls the function on a copy of the request: the SDK's response
// shares the request's desired state, which the function changes in place.
func runCopy(f *Function, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
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

func TestFunctionDeclaresWhatIsMissingAndReportsOnlyWhatNeedsAttention(t *testing.T) {
	// Build requests once per case and clone them, so that the expected
	// response can be written as "the request's desired state, changed so".
	type want struct {
		// desired maps composition resource names to the resources the
		// response must desire; nil means desired state is unchanged.
		desired    map[string]*fnv1.Resource
		conditions []*fnv1.Condition
		results    []*fnv1.Result
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"Issue371": {
			reason: "The shared Object carries the finalizers of only 6 of its 10 dependents: its desired state declares all 10, in sorted order after what earlier steps declared.",
			req:    issue371Request(10, []int{0, 2, 3, 5, 7, 9}, "", nil),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": obj{apiVersion: clusterObject, name: "app-shared", finalizers: append([]string{"example.org/earlier-step"}, uidFinalizers(10)...)}.resource(),
				},
				conditions: []*fnv1.Condition{falseCondition("FinalizersPending", "finalizers are declared but not yet applied, or wait for their Object to exist: dep-01 → shared, dep-04 → shared, dep-06 → shared, dep-08 → shared. 11 composed resources, 10 references between them and 0 to external objects; 10 reference finalizers declared, 0 pending until their Object exists")},
				results: []*fnv1.Result{
					summary("11 composed resources, 10 references between them and 0 to external objects; 10 reference finalizers declared, 0 pending until their Object exists"),
				},
			},
		},
		"AllProtected": {
			reason: "When the observed shared Object carries every finalizer, the condition is True, the desired state declares them all (so that they stay), and there is no result: nothing needs attention.",
			req:    issue371Request(3, []int{0, 1, 2}, "", nil),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": obj{apiVersion: clusterObject, name: "app-shared", finalizers: append([]string{"example.org/earlier-step"}, uidFinalizers(3)...)}.resource(),
				},
				conditions: []*fnv1.Condition{protectedCondition("every live reference between composed resources is protected. 4 composed resources, 3 references between them and 0 to external objects; 3 reference finalizers declared, 0 pending until their Object exists")},
			},
		},
		"ReportMode": {
			reason: "Report mode computes the same, says what is unprotected, and leaves desired state exactly as it was.",
			req:    issue371Request(3, []int{1}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "mode": "Report"}`, nil),
			want: want{
				conditions: []*fnv1.Condition{falseCondition("UnprotectedEdges", "referenced resources lack their dependents' finalizers: dep-00 → shared, dep-02 → shared. 4 composed resources, 3 references between them and 0 to external objects; 3 reference finalizers to declare (Report mode: desired state left unchanged), 0 pending until their Object exists")},
				results:    []*fnv1.Result{summary("4 composed resources, 3 references between them and 0 to external objects; 3 reference finalizers to declare (Report mode: desired state left unchanged), 0 pending until their Object exists")},
			},
		},
		"ReportModeRemovedDependentBeingDeleted": {
			reason: "Report mode labels no dependent, so it can't see one the composition removed while Crossplane deletes it: its finalizer on shared is no sure problem, and gets no StaleFinalizer warning.",
			req: issue371Request(3, []int{0, 1, 2}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "mode": "Report"}`, func(r *fnv1.RunFunctionRequest) {
				delete(r.Observed.Resources, "dep-02")
				delete(r.Desired.Resources, "dep-02")
			}),
			want: want{
				conditions: []*fnv1.Condition{protectedCondition("every live reference between composed resources is protected. 3 composed resources, 2 references between them and 0 to external objects; 2 reference finalizers to declare (Report mode: desired state left unchanged), 0 pending until their Object exists")},
			},
		},
		"OneObjectUnderARemovedNameToo": {
			reason: "Crossplane deletes what the composition removes before it applies the rest: shared, observed under a second name the composition removed, goes in this reconcile, and the API server would refuse the finalizer it lacks.",
			req: issue371Request(2, []int{0}, "", func(r *fnv1.RunFunctionRequest) {
				r.Observed.Resources["shared-alias"] = obj{apiVersion: clusterObject, name: "app-shared", uid: "uid-shared", finalizers: []string{"finalizer.managedresource.crossplane.io", refPrefix + "uid-dep-00"}}.resource()
			}),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": obj{apiVersion: clusterObject, name: "app-shared", finalizers: []string{"example.org/earlier-step", refPrefix + "uid-dep-00"}}.resource(),
				},
				conditions: []*fnv1.Condition{falseCondition("UnprotectedEdges", "referenced resources lack their dependents' finalizers: dep-00 → shared-alias, dep-01 → shared-alias, dep-01 → shared. 4 composed resources, 4 references between them and 0 to external objects; 1 reference finalizers declared, 0 pending until their Object exists")},
				results: []*fnv1.Result{
					warning("ReferencedResourceRemoved", "the composition no longer includes resources that live Objects still reference, so they may be deleted first: shared-alias (referenced by dep-00, dep-01)"),
					warning("ReferencedResourceDeleting", "referenced resources are being deleted without their dependents' finalizers, which can no longer be added: dep-01 → shared"),
				},
			},
		},
		"DependentDeleting": {
			reason: "A deleting dependent's finalizer stays declared while the shared Object carries it; one the provider already removed is not added back.",
			req: issue371Request(3, []int{0, 2}, "", func(r *fnv1.RunFunctionRequest) {
				for _, n := range []string{"dep-00", "dep-01"} {
					r.Observed.Resources[n] = obj{apiVersion: clusterObject, name: "app-" + n, uid: "uid-" + n, deleting: true, references: dependsOn("app-shared")}.resource()
				}
			}),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": obj{apiVersion: clusterObject, name: "app-shared", finalizers: []string{"example.org/earlier-step", refPrefix + "uid-dep-00", refPrefix + "uid-dep-02"}}.resource(),
				},
				conditions: []*fnv1.Condition{protectedCondition("every live reference between composed resources is protected. 4 composed resources, 3 references between them and 0 to external objects; 2 reference finalizers declared, 0 pending until their Object exists")},
			},
		},
		"NamespacedXR": {
			reason: "Namespaced Objects of a namespaced XR match by namespace; a desired resource without one gets the XR's namespace, as Crossplane does; a reference without namespace matches nothing, as in the provider.",
			req: &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{
					Composite: &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "App", "metadata": {"name": "app", "namespace": "team"}}`)},
					Resources: map[string]*fnv1.Resource{
						"dep": obj{apiVersion: namespacedObject, name: "dep", namespace: "team", uid: "uid-dep"}.resource(),
					},
				},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"shared": obj{apiVersion: namespacedObject, name: "shared"}.resource(),
					"dep":    obj{apiVersion: namespacedObject, name: "dep", references: `[{"dependsOn": {"name": "shared", "namespace": "team"}}, {"dependsOn": {"name": "shared"}}]`}.resource(),
				}},
			},
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": obj{apiVersion: namespacedObject, name: "shared", finalizers: []string{refPrefix + "uid-dep"}}.resource(),
				},
				conditions: []*fnv1.Condition{falseCondition("FinalizersPending", "finalizers are declared but not yet applied, or wait for their Object to exist: dep → shared. 2 composed resources, 1 references between them and 1 to external objects, 1 of them unprotected; 1 reference finalizers declared, 0 pending until their Object exists")},
				results: []*fnv1.Result{
					summary("2 composed resources, 1 references between them and 1 to external objects, 1 of them unprotected; 1 reference finalizers declared, 0 pending until their Object exists"),
				},
			},
		},
		"CycleFatal": {
			reason: "A cycle fails the step with its path, and desired state is left as it was.",
			req:    cycleRequest(""),
			want: want{
				conditions: []*fnv1.Condition{falseCondition("Cycle", "references form a cycle: a → b → a. 2 composed resources, 2 references between them and 0 to external objects; 2 reference finalizers to declare (the cycle failed the step: desired state left unchanged), 0 pending until their Object exists")},
				results: []*fnv1.Result{
					fatal("Cycle", "cannot order deletion: references form a cycle: a → b → a"),
					summary("2 composed resources, 2 references between them and 0 to external objects; 2 reference finalizers to declare (the cycle failed the step: desired state left unchanged), 0 pending until their Object exists"),
				},
			},
		},
		"CycleWarning": {
			reason: "With onCycle Warning the cycle is reported and its edges get no finalizer.",
			req:    cycleRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "onCycle": "Warning"}`),
			want: want{
				conditions: []*fnv1.Condition{falseCondition("Cycle", "references form a cycle: a → b → a. 2 composed resources, 2 references between them and 0 to external objects; 0 reference finalizers declared, 0 pending until their Object exists")},
				results: []*fnv1.Result{
					warning("Cycle", "references form a cycle, so no finalizer is declared on its edges: a → b → a"),
				},
			},
		},
		"InvalidReference": {
			reason: "A reference that can't be read is reported with the resource and field, and the others still work.",
			req: issue371Request(2, []int{0, 1}, "", func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["dep-01"] = obj{apiVersion: clusterObject, name: "app-dep-01", references: `[{"dependsOn": {"name": "app-shared"}}, {"dependsOn": {"kind": "ConfigMap"}}]`}.resource()
			}),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": obj{apiVersion: clusterObject, name: "app-shared", finalizers: append([]string{"example.org/earlier-step"}, uidFinalizers(2)...)}.resource(),
				},
				conditions: []*fnv1.Condition{protectedCondition("every live reference between composed resources is protected. 3 composed resources, 2 references between them and 0 to external objects; 2 reference finalizers declared, 0 pending until their Object exists")},
				results: []*fnv1.Result{
					warning("InvalidReference", "cannot read references: dep-01: spec.references[1].dependsOn.name: Required value: names the referenced object"),
				},
			},
		},
		"FinalizersNotAList": {
			reason: "A desired resource whose metadata.finalizers isn't a list is left as it is, with a warning naming it.",
			req: issue371Request(1, nil, "", func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["shared"].Resource.Fields["metadata"].GetStructValue().Fields["finalizers"] = structpb.NewStringValue("oops")
			}),
			want: want{
				conditions: []*fnv1.Condition{falseCondition("FinalizersPending", "finalizers are declared but not yet applied, or wait for their Object to exist: dep-00 → shared. 2 composed resources, 1 references between them and 0 to external objects; 1 reference finalizers declared, 0 pending until their Object exists")},
				results: []*fnv1.Result{
					summary("2 composed resources, 1 references between them and 0 to external objects; 1 reference finalizers declared, 0 pending until their Object exists"),
					warning("InvalidResource", `cannot declare reference finalizers on composed resource "shared": metadata.finalizers is not a list`),
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := proto.Clone(tc.req).(*fnv1.RunFunctionRequest)
			wantRsp := &fnv1.RunFunctionResponse{
				Meta:       &fnv1.ResponseMeta{Ttl: durationpb.New(60_000_000_000)},
				Desired:    proto.Clone(tc.req.GetDesired()).(*fnv1.State),
				Conditions: tc.want.conditions,
				Results:    tc.want.results,
			}
			for n, r := range tc.want.desired {
				wantRsp.Desired.Resources[n] = r
			}
			f := &Function{log: logging.NewNopLogger()}
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			// TestGraphContext checks the graph in the context.
			ignoreGraph := protocmp.IgnoreFields(&fnv1.RunFunctionResponse{}, "context")
			if diff := cmp.Diff(wantRsp, rsp, protocmp.Transform(), ignoreGraph); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want rsp, +got rsp:\n%s", tc.reason, diff)
			}
		})
	}
}

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

func uidFinalizers(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%suid-dep-%02d", refPrefix, i))
	}
	return out
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

func condition(status fnv1.Status, reason, message string) *fnv1.Condition {
	return &fnv1.Condition{Type: "DeletionOrdered", Status: status, Reason: reason, Message: &message, Target: fnv1.Target_TARGET_COMPOSITE.Enum()}
}

// protectedCondition is DeletionOrdered True: the only reason it is True.
func protectedCondition(message string) *fnv1.Condition {
	return condition(fnv1.Status_STATUS_CONDITION_TRUE, "Protected", message)
}

func falseCondition(reason, message string) *fnv1.Condition {
	return condition(fnv1.Status_STATUS_CONDITION_FALSE, reason, message)
}

func result(s fnv1.Severity, reason, message string) *fnv1.Result {
	return &fnv1.Result{Severity: s, Reason: &reason, Message: message, Target: fnv1.Target_TARGET_COMPOSITE.Enum()}
}

func normal(reason, message string) *fnv1.Result {
	return result(fnv1.Severity_SEVERITY_NORMAL, reason, message)
}

func summary(message string) *fnv1.Result { return normal("Summary", message) }
func warning(reason, message string) *fnv1.Result {
	return result(fnv1.Severity_SEVERITY_WARNING, reason, message)
}
func fatal(reason, message string) *fnv1.Result {
	return result(fnv1.Severity_SEVERITY_FATAL, reason, message)
}
