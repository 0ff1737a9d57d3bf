package composition

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// TestARequiredResourceOfAnotherCompositeChangesNothing proves that a
// resource Crossplane hands the function by name, when another composite
// controls it, is read as if Crossplane had found nothing: it is not taken
// for this composite's resource of the same composition resource name.
func TestARequiredResourceOfAnotherCompositeChangesNothing(t *testing.T) {
	const (
		// Crossplane makes the composite the controller of every resource
		// it composes.
		ours   = `"ownerReferences": [{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "name": "app", "uid": "uid-app", "controller": true}]`
		theirs = `"ownerReferences": [{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "name": "other", "uid": "uid-other", "controller": true}]`
	)
	cases := map[string]struct {
		reason string
		req    func(owner string) *fnv1.RunFunctionRequest
	}{
		"TheDependencyOfAWrittenReference": {
			reason: "The Object the function wrote a dependsOn to, fetched by name, now belongs to another composite whose own db has the same composition resource name.",
			req: func(owner string) *fnv1.RunFunctionRequest {
				return requesttest.Issue371Request(1, nil, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "dependencies": [{"resource": "dep-00", "dependsOn": ["db"]}]}`, func(r *fnv1.RunFunctionRequest) {
					r.Observed.Composite = clusterXRWithUID
					r.Desired.Resources["dep-00"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-00"}.Resource()
					r.Observed.Resources["dep-00"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-00", UID: "uid-dep-00", References: `[{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "app-db"}}]`}.Resource()
					r.RequiredResources = map[string]*fnv1.Resources{"dependencies.fn.crossplane.io/kubernetes.crossplane.io/v1alpha2/Object//app-db": {}}
					if owner != "" {
						r.RequiredResources["dependencies.fn.crossplane.io/kubernetes.crossplane.io/v1alpha2/Object//app-db"].Items = []*fnv1.Resource{{Resource: resource.MustStructJSON(`{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "app-db", "uid": "uid-their-db", "deletionTimestamp": "2026-12-01T08:00:00Z", "finalizers": ["finalizer.managedresource.crossplane.io"], "annotations": {"crossplane.io/composition-resource-name": "db"}, ` + owner + `}}`)}}
					}
				})
			},
		},
		"TheUserOfAnOwnUsage": {
			reason: "The user of the function's own Usage, fetched by name, now belongs to another composite, under a composition resource name this composition desires and hasn't created yet.",
			req: func(owner string) *fnv1.RunFunctionRequest {
				r := withObserved(namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "protection": "Both", "creation": "WaitForReady"}`),
					"usage-3x-app-secret./team/token", `{"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage", "metadata": {"name": "u", "namespace": "team", "uid": "u3", "labels": {"dependencies.fn.crossplane.io/usage": "true"}}, "spec": {"by": {"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object", "resourceRef": {"name": "app"}}}}`,
				)
				r.Observed.Composite.Resource.Fields["metadata"].GetStructValue().Fields["uid"] = structpb.NewStringValue("uid-app")
				// Ours is desired, and waits for config to be ready.
				r.Desired.Resources["app"] = requesttest.Obj{APIVersion: requesttest.NamespacedObject, Name: "app", Namespace: "team", References: `[{"dependsOn": {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": "team"}}]`}.Resource()
				r.RequiredResources = map[string]*fnv1.Resources{"dependencies.fn.crossplane.io/kubernetes.m.crossplane.io/v1alpha1/Object/team/app": {}}
				if owner != "" {
					r.RequiredResources["dependencies.fn.crossplane.io/kubernetes.m.crossplane.io/v1alpha1/Object/team/app"].Items = []*fnv1.Resource{{Resource: resource.MustStructJSON(`{"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object", "metadata": {"name": "app", "namespace": "team", "uid": "uid-their-app", "finalizers": ["finalizer.managedresource.crossplane.io"], "annotations": {"crossplane.io/composition-resource-name": "app"}, ` + owner + `}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}`)}}
				}
				return r
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run := func(owner string) *fnv1.RunFunctionResponse {
				rsp := requesttest.Run(Run, v1beta1.StepComposition, tc.req(owner))
				return rsp
			}
			none := run("")
			if diff := cmp.Diff(none, run(theirs), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nanother composite's resource changed the answer: -found nothing +found theirs:\n%s", tc.reason, diff)
			}
			// The same resource, ours, is one Crossplane is deleting: it
			// changes the answer, so the case above can fail.
			if proto.Equal(none, run(ours)) {
				t.Errorf("%s\nthe composite's own resource changed nothing", tc.reason)
			}
		})
	}
}

// TestEveryDependentIsLabelledPastOneThatCantBe proves that a dependent
// whose labels can't be set gets one warning naming it and the field, and
// the dependents after it are labelled all the same.
func TestEveryDependentIsLabelledPastOneThatCantBe(t *testing.T) {
	req := requesttest.Issue371Request(2, []int{0, 1}, "", func(r *fnv1.RunFunctionRequest) {
		r.Observed.Composite = clusterXRWithUID
		r.Desired.Resources["dep-00"].Resource.Fields["metadata"].GetStructValue().Fields["labels"] = structpb.NewStringValue("team=a")
	})
	rsp := requesttest.Run(Run, v1beta1.StepComposition, req)
	if got := desiredStateOf(rsp.GetDesired()).Object("dep-01").Label(protocol.DependentLabel); got != "uid-app" {
		t.Errorf("dep-01's label %s is %q, want %q", protocol.DependentLabel, got, "uid-app")
	}
	if got := rsp.GetDesired().GetResources()["dep-00"].GetResource().GetFields()["metadata"].GetStructValue().GetFields()["labels"]; !proto.Equal(got, structpb.NewStringValue("team=a")) {
		t.Errorf("dep-00's metadata.labels is %v, want it left as it was", got)
	}
	var warnings []*fnv1.Result
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING {
			warnings = append(warnings, r)
		}
	}
	want := []*fnv1.Result{requesttest.Warning("InvalidResource", `cannot label composed resource "dep-00": metadata.labels is not an object`)}
	if diff := cmp.Diff(want, warnings, protocmp.Transform()); diff != "" {
		t.Errorf("warnings: -want +got:\n%s", diff)
	}
}

// TestTheObjectGroupsAskedForAreThoseComposedOrRemembered proves that, when
// a reference finalizer names an Object observed state lacks, a
// cluster-scoped composite asks for its own Object group and for the one
// protocol.DependentGroupLabel names on what its Objects depend on, and never for a
// group the label names that is no Object group.
func TestTheObjectGroupsAskedForAreThoseComposedOrRemembered(t *testing.T) {
	selector := func(apiVersion string) *fnv1.ResourceSelector {
		return &fnv1.ResourceSelector{
			ApiVersion: apiVersion, Kind: "Object",
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{protocol.DependentLabel: "uid-app"}}},
		}
	}
	cases := map[string]struct {
		reason string
		label  string
		want   map[string]*fnv1.ResourceSelector
	}{
		"NoLabel": {
			reason: "Without the label, the composite's own group only: a group the cluster may not serve is never asked for.",
			want:   map[string]*fnv1.ResourceSelector{"dependencies.fn.crossplane.io/objects-kubernetes.crossplane.io": selector("kubernetes.crossplane.io/v1alpha2")},
		},
		"NamespacedGroupRemembered": {
			reason: "The namespaced Object that depended on db is no longer composed: the label db carries says to ask for its group, in every namespace.",
			label:  "kubernetes.m.crossplane.io",
			want: map[string]*fnv1.ResourceSelector{
				"dependencies.fn.crossplane.io/objects-kubernetes.crossplane.io":   selector("kubernetes.crossplane.io/v1alpha2"),
				"dependencies.fn.crossplane.io/objects-kubernetes.m.crossplane.io": selector("kubernetes.m.crossplane.io/v1alpha1"),
			},
		},
		"NoObjectGroup": {
			reason: "A label that names no Object group asks for nothing more.",
			label:  "apps",
			want:   map[string]*fnv1.ResourceSelector{"dependencies.fn.crossplane.io/objects-kubernetes.crossplane.io": selector("kubernetes.crossplane.io/v1alpha2")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			labels := ""
			if tc.label != "" {
				labels = `, "labels": {"` + protocol.DependentGroupLabel + `": "` + tc.label + `"}`
			}
			req := &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{Composite: clusterXRWithUID, Resources: map[string]*fnv1.Resource{
					"db": {Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "db", "namespace": "team", "uid": "uid-db", "finalizers": ["` + requesttest.RefPrefix + `uid-gone"]` + labels + `}}`)},
				}},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"db": {Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "db", "namespace": "team"}}`)},
				}},
			}
			rsp := requesttest.Run(Run, v1beta1.StepComposition, req)
			if diff := cmp.Diff(&fnv1.Requirements{Resources: tc.want}, rsp.GetRequirements(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nrequirements: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
