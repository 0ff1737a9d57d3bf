package fn

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

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
			req:    requesttest.Issue371Request(10, []int{0, 2, 3, 5, 7, 9}, "", nil),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: append([]string{"example.org/earlier-step"}, requesttest.UIDFinalizers(10)...)}.Resource(),
				},
				conditions: []*fnv1.Condition{requesttest.FalseCondition("FinalizersPending", "finalizers are declared but not yet applied, or wait for their Object to exist: dep-01 → shared, dep-04 → shared, dep-06 → shared, dep-08 → shared. 11 composed resources, 10 references between them and none to external objects; 4 reference finalizers added")},
				results: []*fnv1.Result{
					requesttest.Summary("11 composed resources, 10 references between them and none to external objects; 4 reference finalizers added"),
				},
			},
		},
		"AllProtected": {
			reason: "When the observed shared Object carries every finalizer, the condition is True, the desired state declares them all (so that they stay), and there is no result: nothing needs attention.",
			req:    requesttest.Issue371Request(3, []int{0, 1, 2}, "", nil),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: append([]string{"example.org/earlier-step"}, requesttest.UIDFinalizers(3)...)}.Resource(),
				},
				conditions: []*fnv1.Condition{requesttest.ProtectedCondition("every live reference between composed resources is protected. 4 composed resources, 3 references between them and none to external objects; nothing added")},
			},
		},
		"ReportMode": {
			reason: "Report mode computes the same, says what is unprotected, and leaves desired state exactly as it was.",
			req:    requesttest.Issue371Request(3, []int{1}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "mode": "Report"}`, nil),
			want: want{
				conditions: []*fnv1.Condition{requesttest.FalseCondition("UnprotectedEdges", "referenced resources lack their dependents' finalizers: dep-00 → shared, dep-02 → shared. 4 composed resources, 3 references between them and none to external objects; 2 reference finalizers to add (Report mode: desired state left unchanged)")},
				results:    []*fnv1.Result{requesttest.Summary("4 composed resources, 3 references between them and none to external objects; 2 reference finalizers to add (Report mode: desired state left unchanged)")},
			},
		},
		"ReportModeRemovedDependentBeingDeleted": {
			reason: "Report mode labels no dependent, so it can't see one the composition removed while Crossplane deletes it: its finalizer on shared is no sure problem, and gets no StaleFinalizer warning.",
			req: requesttest.Issue371Request(3, []int{0, 1, 2}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "mode": "Report"}`, func(r *fnv1.RunFunctionRequest) {
				delete(r.Observed.Resources, "dep-02")
				delete(r.Desired.Resources, "dep-02")
			}),
			want: want{
				conditions: []*fnv1.Condition{requesttest.ProtectedCondition("every live reference between composed resources is protected. 3 composed resources, 2 references between them and none to external objects; nothing to add (Report mode: desired state left unchanged)")},
			},
		},
		"OneObjectUnderARemovedNameToo": {
			reason: "Crossplane deletes what the composition removes before it applies the rest: shared, observed under a second name the composition removed, goes in this reconcile, and the API server would refuse the finalizer it lacks.",
			req: requesttest.Issue371Request(2, []int{0}, "", func(r *fnv1.RunFunctionRequest) {
				r.Observed.Resources["shared-alias"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", UID: "uid-shared", Finalizers: []string{"finalizer.managedresource.crossplane.io", requesttest.RefPrefix + "uid-dep-00"}}.Resource()
			}),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: []string{"example.org/earlier-step", requesttest.RefPrefix + "uid-dep-00"}}.Resource(),
				},
				conditions: []*fnv1.Condition{requesttest.FalseCondition("UnprotectedEdges", "referenced resources lack their dependents' finalizers: dep-00 → shared-alias, dep-01 → shared-alias, dep-01 → shared. 4 composed resources, 4 references between them and none to external objects; nothing added")},
				results: []*fnv1.Result{
					requesttest.Warning("ReferencedResourceRemoved", "the composition no longer includes resources that live Objects still reference, so they may be deleted first: shared-alias (referenced by dep-00, dep-01)"),
					requesttest.Warning("ReferencedResourceDeleting", "referenced resources are being deleted without their dependents' finalizers, which can no longer be added: dep-01 → shared"),
				},
			},
		},
		"DependentDeleting": {
			reason: "A deleting dependent's finalizer stays declared while the shared Object carries it; one the provider already removed is not added back.",
			req: requesttest.Issue371Request(3, []int{0, 2}, "", func(r *fnv1.RunFunctionRequest) {
				for _, n := range []string{"dep-00", "dep-01"} {
					r.Observed.Resources[n] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-" + n, UID: "uid-" + n, Deleting: true, References: requesttest.DependsOn("app-shared")}.Resource()
				}
			}),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: []string{"example.org/earlier-step", requesttest.RefPrefix + "uid-dep-00", requesttest.RefPrefix + "uid-dep-02"}}.Resource(),
				},
				conditions: []*fnv1.Condition{requesttest.ProtectedCondition("every live reference between composed resources is protected. 4 composed resources, 3 references between them and none to external objects; nothing added")},
			},
		},
		"NamespacedXR": {
			reason: "Namespaced Objects of a namespaced XR match by namespace; a desired resource without one gets the XR's namespace, as Crossplane does; a reference without namespace matches nothing, as in the provider, and is named as a mistake.",
			req: &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{
					Composite: &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "App", "metadata": {"name": "app", "namespace": "team"}}`)},
					Resources: map[string]*fnv1.Resource{
						"dep": requesttest.Obj{APIVersion: requesttest.NamespacedObject, Name: "dep", Namespace: "team", UID: "uid-dep"}.Resource(),
					},
				},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"shared": requesttest.Obj{APIVersion: requesttest.NamespacedObject, Name: "shared"}.Resource(),
					"dep":    requesttest.Obj{APIVersion: requesttest.NamespacedObject, Name: "dep", References: `[{"dependsOn": {"name": "shared", "namespace": "team"}}, {"dependsOn": {"name": "shared"}}]`}.Resource(),
				}},
			},
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": requesttest.Obj{APIVersion: requesttest.NamespacedObject, Name: "shared", Finalizers: []string{requesttest.RefPrefix + "uid-dep"}}.Resource(),
				},
				conditions: []*fnv1.Condition{requesttest.FalseCondition("FinalizersPending", "finalizers are declared but not yet applied, or wait for their Object to exist: dep → shared. 2 composed resources, 1 reference between them and 1 to an external object, 1 of them unprotected; 1 reference finalizer added")},
				results: []*fnv1.Result{
					requesttest.Summary("2 composed resources, 1 reference between them and 1 to an external object, 1 of them unprotected; 1 reference finalizer added"),
					requesttest.Warning("SuspectReference", "references match no composed resource, and can't be what was meant: nothing protects them, and provider-kubernetes can't create an Object whose reference doesn't resolve: "+
						`dep spec.references[1].dependsOn names Object.kubernetes.m.crossplane.io shared: Object is namespaced, and provider-kubernetes defaults no namespace: set namespace (composed resource "shared" is Object.kubernetes.m.crossplane.io team/shared)`),
				},
			},
		},
		"CycleFatal": {
			reason: "A cycle fails the step with its path, and desired state is left as it was.",
			req:    requesttest.CycleRequest(""),
			want: want{
				conditions: []*fnv1.Condition{requesttest.FalseCondition("Cycle", "references form a cycle: a → b → a. 2 composed resources, 2 references between them and none to external objects; 2 reference finalizers to add (the cycle failed the step: desired state left unchanged)")},
				results: []*fnv1.Result{
					requesttest.Fatal("Cycle", "cannot order deletion: references form a cycle: a → b → a"),
					requesttest.Summary("2 composed resources, 2 references between them and none to external objects; 2 reference finalizers to add (the cycle failed the step: desired state left unchanged)"),
				},
			},
		},
		"CycleWarning": {
			reason: "With onCycle Warning the cycle is reported and its edges get no finalizer.",
			req:    requesttest.CycleRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "onCycle": "Warning"}`),
			want: want{
				conditions: []*fnv1.Condition{requesttest.FalseCondition("Cycle", "references form a cycle: a → b → a. 2 composed resources, 2 references between them and none to external objects; nothing added")},
				results: []*fnv1.Result{
					requesttest.Warning("Cycle", "references form a cycle, so nothing protects its edges and no dependsOn is written on them: a → b → a"),
				},
			},
		},
		"InvalidReference": {
			reason: "A reference that can't be read is reported with the resource and field, and the others still work.",
			req: requesttest.Issue371Request(2, []int{0, 1}, "", func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["dep-01"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-01", References: `[{"dependsOn": {"name": "app-shared"}}, {"dependsOn": {"kind": "ConfigMap"}}]`}.Resource()
			}),
			want: want{
				desired: map[string]*fnv1.Resource{
					"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: append([]string{"example.org/earlier-step"}, requesttest.UIDFinalizers(2)...)}.Resource(),
				},
				conditions: []*fnv1.Condition{requesttest.ProtectedCondition("every live reference between composed resources is protected. 3 composed resources, 2 references between them and none to external objects; nothing added")},
				results: []*fnv1.Result{
					requesttest.Warning("InvalidReference", "cannot read references: dep-01: spec.references[1].dependsOn.name: Required value: names the referenced object"),
				},
			},
		},
		"FinalizersNotAList": {
			reason: "A desired resource whose metadata.finalizers isn't a list is left as it is, with a warning naming it.",
			req: requesttest.Issue371Request(1, nil, "", func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["shared"].Resource.Fields["metadata"].GetStructValue().Fields["finalizers"] = structpb.NewStringValue("oops")
			}),
			want: want{
				conditions: []*fnv1.Condition{requesttest.FalseCondition("FinalizersPending", "finalizers are declared but not yet applied, or wait for their Object to exist: dep-00 → shared. 2 composed resources, 1 reference between them and none to external objects; 1 reference finalizer added")},
				results: []*fnv1.Result{
					requesttest.Summary("2 composed resources, 1 reference between them and none to external objects; 1 reference finalizer added"),
					requesttest.Warning("InvalidResource", `cannot declare reference finalizers on composed resource "shared": metadata.finalizers is not a list`),
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
			f := New(logging.NewNopLogger())
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected error: %v", tc.reason, err)
			}
			// TestTheGraphIsInTheContextOnlyWhenAsked (internal/composition) checks
			// the graph in the context.
			ignoreGraph := protocmp.IgnoreFields(&fnv1.RunFunctionResponse{}, "context")
			if diff := cmp.Diff(wantRsp, rsp, protocmp.Transform(), ignoreGraph); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want rsp, +got rsp:\n%s", tc.reason, diff)
			}
		})
	}
}

// runCopy runs the function on a copy of the request: response.To shares
// desired state with the request, which a test reads again.
func runCopy(f *Function, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
}
