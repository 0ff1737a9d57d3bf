package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

// namespacedRequest is a namespaced XR in team composing a ConfigMap
// "config" and a Deployment "web", both observed, and input.
func namespacedRequest(input string) *fnv1.RunFunctionRequest {
	return &fnv1.RunFunctionRequest{
		Input: resource.MustStructJSON(input),
		Observed: &fnv1.State{
			Composite: &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1", "kind": "App", "metadata": {"name": "shop", "namespace": "team"}}`)},
			Resources: map[string]*fnv1.Resource{
				"config": {Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team", "uid": "u1"}}`)},
				"web":    {Resource: resource.MustStructJSON(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team", "uid": "u2"}}`)},
			},
		},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
			"config": {Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}`)},
			"web":    {Resource: resource.MustStructJSON(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}`)},
		}},
	}
}

func TestDependencies(t *testing.T) {
	type want struct {
		// desired are the desired resources the response must have, and
		// absent those it must not.
		desired map[string]*fnv1.Resource
		absent  []string
		// results are the results other than the summary.
		results []*fnv1.Result
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"ExplicitWritesReferences": {
			reason: "Dependencies declared by pattern give each Object a dependsOn to the shared Object, and it declares their finalizers; with references Ignore, the Objects' own references make no edge.",
			req: issue371Request(2, nil, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "references": "Ignore", "dependencies": [{"resource": "dep-.*", "dependsOn": ["shared"]}]}`, func(r *fnv1.RunFunctionRequest) {
				for _, n := range []string{"dep-00", "dep-01"} {
					r.Desired.Resources[n] = obj{apiVersion: clusterObject, name: "app-" + n}.resource()
				}
			}),
			want: want{desired: map[string]*fnv1.Resource{
				"dep-00": obj{apiVersion: clusterObject, name: "app-dep-00", references: `[{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "app-shared"}}]`}.resource(),
				"dep-01": obj{apiVersion: clusterObject, name: "app-dep-01", references: `[{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "app-shared"}}]`}.resource(),
				"shared": obj{apiVersion: clusterObject, name: "app-shared", finalizers: append([]string{"example.org/earlier-step"}, uidFinalizers(2)...)}.resource(),
			}},
		},
		"UnmatchedPattern": {
			reason: "A dependency that matches nothing is a warning, not an error.",
			req:    issue371Request(1, []int{0}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "dependencies": [{"resource": "dep-00", "dependsOn": ["datab.*"]}]}`, nil),
			want: want{results: []*fnv1.Result{
				warning("UnmatchedDependency", `dependencies in the input match no composed resource: dependencies[0].dependsOn[0] "datab.*"`),
			}},
		},
		"WaitForReady": {
			reason: "A dependent that doesn't exist yet is held back from desired state while its dependency isn't ready; an existing one stays.",
			req: issue371Request(2, []int{0}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "creation": "WaitForReady"}`, func(r *fnv1.RunFunctionRequest) {
				delete(r.Observed.Resources, "dep-01")
			}),
			want: want{
				absent: []string{"dep-01"},
				desired: map[string]*fnv1.Resource{
					"dep-00": obj{apiVersion: clusterObject, name: "app-dep-00", references: dependsOn("app-shared")}.resource(),
				},
				results: []*fnv1.Result{
					normal("HeldBack", "resources are held back from creation until their dependencies allow: dep-01 (waits for shared to be ready)"),
				},
			},
		},
		"HeldBackTarget": {
			reason: "A held-back resource that others reference is left out whole: nothing is written to it.",
			req: issue371Request(1, nil, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "creation": "WaitForReady", "dependencies": [{"resource": "shared", "dependsOn": ["base"]}]}`, func(r *fnv1.RunFunctionRequest) {
				delete(r.Observed.Resources, "shared")
				r.Desired.Resources["base"] = obj{apiVersion: clusterObject, name: "app-base"}.resource()
				r.Observed.Resources["base"] = obj{apiVersion: clusterObject, name: "app-base", uid: "uid-base"}.resource()
			}),
			want: want{
				absent: []string{"shared"},
				results: []*fnv1.Result{
					normal("HeldBack", "resources are held back from creation until their dependencies allow: shared (waits for base to be ready)"),
				},
			},
		},
		"Usage": {
			reason: "With usages All, an edge between resources that aren't Objects gets a namespaced Usage, ready.",
			req:    namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "usages": "All", "dependencies": [{"resource": "web", "dependsOn": ["config"]}]}`),
			want: want{desired: map[string]*fnv1.Resource{
				"usage-web-config": {Ready: fnv1.Ready_READY_TRUE, Resource: resource.MustStructJSON(`{
					"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
					"metadata": {"name": "usage-web-config-` + usageSuffix(t, "usage-web-config") + `", "namespace": "team"},
					"spec": {
						"of": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "settings"}},
						"by": {"apiVersion": "apps/v1", "kind": "Deployment", "resourceRef": {"name": "web"}},
						"reason": "web depends on config (function-dependencies)",
						"replayDeletion": true
					}
				}`)},
			}},
		},
		"UsageImpossible": {
			reason: "Crossplane v1's Usage can't protect namespaced resources: the function says so and emits none.",
			req:    namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "usages": "All", "usageAPI": "apiextensions.crossplane.io/v1beta1", "dependencies": [{"resource": "web", "dependsOn": ["config"]}]}`),
			want: want{
				absent: []string{"usage-web-config"},
				results: []*fnv1.Result{
					warning("UsageImpossible", "no Usage can protect these edges, so none is emitted: web → config (apiextensions.crossplane.io/v1beta1 Usages protect cluster-scoped resources only)"),
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Function{log: logging.NewNopLogger()}
			rsp, err := f.RunFunction(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			for n, want := range tc.want.desired {
				if diff := cmp.Diff(want, rsp.GetDesired().GetResources()[n], protocmp.Transform()); diff != "" {
					t.Errorf("%s\ndesired %q: -want, +got:\n%s", tc.reason, n, diff)
				}
			}
			for _, n := range tc.want.absent {
				if _, ok := rsp.GetDesired().GetResources()[n]; ok {
					t.Errorf("%s\ndesired %q is present, want it absent", tc.reason, n)
				}
			}
			var results []*fnv1.Result
			for _, r := range rsp.GetResults() {
				if r.GetReason() != "Summary" {
					results = append(results, r)
				}
			}
			if diff := cmp.Diff(tc.want.results, results, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nresults: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// usageSuffix is the hash the Usage of the namespaced request's composite
// gets, read from a run rather than repeated here.
func usageSuffix(t *testing.T, key string) string {
	t.Helper()
	f := &Function{log: logging.NewNopLogger()}
	rsp, err := f.RunFunction(context.Background(), namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "usages": "All", "dependencies": [{"resource": "web", "dependsOn": ["config"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	name := text(rsp.GetDesired().GetResources()[key].GetResource(), "metadata", "name")
	return name[len(name)-8:]
}

func TestGraphContext(t *testing.T) {
	f := &Function{log: logging.NewNopLogger()}
	rsp, err := f.RunFunction(context.Background(), issue371Request(2, []int{0}, "", func(r *fnv1.RunFunctionRequest) {
		r.Desired.Resources["dep-01"] = obj{apiVersion: clusterObject, name: "app-dep-01", references: `[{"dependsOn": {"name": "app-shared"}}, {"dependsOn": {"apiVersion": "v1", "kind": "Secret", "name": "token", "namespace": "vault"}}]`}.resource()
	}))
	if err != nil {
		t.Fatal(err)
	}
	want, err := structpb.NewValue(map[string]any{
		"nodes": []any{
			map[string]any{"name": "Secret/vault/token", "kind": "Secret", "scope": "Namespaced", "state": "external"},
			map[string]any{"name": "dep-00", "kind": "Object", "scope": "Cluster", "state": "observed"},
			map[string]any{"name": "dep-01", "kind": "Object", "scope": "Cluster", "state": "observed"},
			map[string]any{"name": "shared", "kind": "Object", "scope": "Cluster", "state": "observed"},
		},
		"edges": []any{
			map[string]any{"from": "dep-00", "to": "shared", "origin": "reference", "protection": "finalizer", "state": "protected"},
			map[string]any{"from": "dep-01", "to": "Secret/vault/token", "origin": "reference", "protection": "none", "state": "missing"},
			map[string]any{"from": "dep-01", "to": "shared", "origin": "reference", "protection": "finalizer", "state": "pending"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rsp.GetContext().GetFields()[GraphContextKey], protocmp.Transform()); diff != "" {
		t.Errorf("context %s: -want, +got:\n%s", GraphContextKey, diff)
	}
}
