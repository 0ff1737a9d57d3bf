package composition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
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
		// summary, when set, is the summary's message.
		summary string
		// requirements are what the function asks Crossplane for: nothing
		// on an ordinary reconcile.
		requirements *fnv1.Requirements
		// count, when set, is how many resources desired state holds.
		count int
	}
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		want   want
	}{
		"ExplicitWritesReferences": {
			reason: "Dependencies declared by pattern give each Object a dependsOn to the shared Object, and it declares their finalizers; with references Ignore, the Objects' own references make no edge.",
			req: requesttest.Issue371Request(2, nil, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "references": "Ignore", "dependencies": [{"resource": "dep-.*", "dependsOn": ["shared"]}]}`, func(r *fnv1.RunFunctionRequest) {
				for _, n := range []string{"dep-00", "dep-01"} {
					r.Desired.Resources[n] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-" + n}.Resource()
				}
			}),
			want: want{desired: map[string]*fnv1.Resource{
				"dep-00": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-00", References: `[{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "app-shared"}}]`}.Resource(),
				"dep-01": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-01", References: `[{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "app-shared"}}]`}.Resource(),
				"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: append([]string{"example.org/earlier-step"}, requesttest.UIDFinalizers(2)...)}.Resource(),
			}},
		},
		"OwnUsagesAreNotInTheGraph": {
			reason: "The function's own observed Usage is not a composed resource of the graph: a pattern that matches every resource doesn't give it a Usage of its own, one more on every reconcile.",
			req: withObserved(namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "protection": "Usages", "dependencies": [{"resource": ".*", "dependsOn": ["config"]}]}`),
				"usage-3-web-config", `{"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage", "metadata": {"name": "`+usageName(namespacedXR, "usage-3-web-config")+`", "namespace": "team", "uid": "u3", "labels": {"dependencies.fn.crossplane.io/usage": "true"}},
					"spec": {"of": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "settings"}}, "by": {"apiVersion": "apps/v1", "kind": "Deployment", "resourceRef": {"name": "web"}}}}`),
			want: want{
				count:   3,
				desired: map[string]*fnv1.Resource{"usage-3-web-config": webConfigUsage},
				summary: "2 composed resources, 1 references between them (1 of them by Usages) and 0 to external objects; 0 reference finalizers declared, 0 pending until their Object exists",
			},
		},
		"UsagesOfDashedNamesDiffer": {
			reason: "The edges a → b-c and a-b → c get a Usage each: they once shared the name usage-a-b-c, and one silently replaced the other.",
			req: func() *fnv1.RunFunctionRequest {
				r := namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "protection": "Usages", "dependencies": [{"resource": "a", "dependsOn": ["b-c"]}, {"resource": "a-b", "dependsOn": ["c"]}]}`)
				r.Observed.Resources, r.Desired.Resources = map[string]*fnv1.Resource{}, map[string]*fnv1.Resource{}
				for _, n := range []string{"a", "b-c", "a-b", "c"} {
					r.Observed.Resources[n] = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "` + n + `", "namespace": "team", "uid": "uid-` + n + `"}}`)}
					r.Desired.Resources[n] = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "` + n + `"}}`)}
				}
				return r
			}(),
			want: want{count: 6, absent: []string{"usage-a-b-c"}},
		},
		"InferredClusterChain": {
			reason: "With inference, the Objects that run on a cluster depend on its ProviderConfig, and it on the Object that writes its kubeconfig Secret: a ClusterUsage protects each edge, and no finalizer is declared.",
			req:    kubeconfigChain(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "infer": ["ProviderConfigs", "Credentials"]}`),
			want: want{
				count: 5,
				desired: map[string]*fnv1.Resource{
					"usage-3-app-config":        chainUsage("usage-3-app-config", "app", "config", `"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "resourceRef": {"name": "app"}`, `"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "resourceRef": {"name": "remote"}`),
					"usage-6-config-kubeconfig": chainUsage("usage-6-config-kubeconfig", "config", "kubeconfig", `"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "resourceRef": {"name": "remote"}`, `"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "resourceRef": {"name": "kubeconfig"}`),
				},
				summary: "3 composed resources, 2 references between them (2 of them inferred, 2 by Usages) and none to external objects; 2 Usages added",
			},
		},
		"ComposedUsagesAreRespected": {
			reason: "An edge a Usage the composition composes itself already protects gets no second one from the function: here by a selector that selects the one composed ProviderConfig, and by the Object's name.",
			req: func() *fnv1.RunFunctionRequest {
				r := kubeconfigChain(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "infer": ["ProviderConfigs", "Credentials"]}`)
				body := `"apiVersion": "protection.crossplane.io/v1beta1", "kind": "ClusterUsage", "metadata": {"name": "app-uses-config"%s}, "spec": {"of": {"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "resourceSelector": {"matchControllerRef": true}}, "by": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "resourceRef": {"name": "app"}}}`
				r.Desired.Resources["app-uses-config"] = &fnv1.Resource{Resource: resource.MustStructJSON("{" + fmt.Sprintf(body, "") + "}")}
				r.Observed.Resources["app-uses-config"] = &fnv1.Resource{Resource: resource.MustStructJSON("{" + fmt.Sprintf(body, `, "uid": "uid-usage"`) + "}")}
				return r
			}(),
			want: want{
				count: 5,
				desired: map[string]*fnv1.Resource{
					"usage-6-config-kubeconfig": chainUsage("usage-6-config-kubeconfig", "config", "kubeconfig", `"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "resourceRef": {"name": "remote"}`, `"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "resourceRef": {"name": "kubeconfig"}`),
				},
				absent:  []string{"usage-3-app-config"},
				summary: "4 composed resources, 2 references between them (2 of them inferred, 2 by Usages) and none to external objects; 1 Usage added",
			},
		},
		"NoInferenceUnasked": {
			reason: "Without infer, the same composition has no edge and desired state stays as it was.",
			req:    kubeconfigChain(""),
			want: want{
				count:   3,
				summary: "3 composed resources, 0 references between them and 0 to external objects; 0 reference finalizers declared, 0 pending until their Object exists",
			},
		},
		"IgnoredReferenceNotWrittenTwice": {
			reason: "With references Ignore, a dependency the Object already references is not appended to its spec.references again.",
			req:    requesttest.Issue371Request(1, nil, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "references": "Ignore", "dependencies": [{"resource": "dep-00", "dependsOn": ["shared"]}]}`, nil),
			want: want{desired: map[string]*fnv1.Resource{
				"dep-00": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-00", References: requesttest.DependsOn("app-shared")}.Resource(),
			}},
		},
		"SummaryCountsFinalizersNotEdges": {
			reason: "Two Objects that claim one UID share one finalizer: the summary counts one, as one is written.",
			req: requesttest.Issue371Request(2, nil, "", func(r *fnv1.RunFunctionRequest) {
				r.Observed.Resources["dep-01"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-01", UID: "uid-dep-00", References: requesttest.DependsOn("app-shared")}.Resource()
			}),
			want: want{
				desired: map[string]*fnv1.Resource{"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: append([]string{"example.org/earlier-step"}, requesttest.UIDFinalizers(1)...)}.Resource()},
				summary: "3 composed resources, 2 references between them and none to external objects; 1 reference finalizer added",
			},
		},
		"AskedForObjectsWhenAFinalizerNamesNone": {
			reason: "Crossplane drops a dependent it is deleting from observed state: when a finalizer names an Object observed state lacks, the function asks for the composite's Objects rather than call the finalizer stale at once.",
			req: requesttest.Issue371Request(1, []int{0, 1}, "", func(r *fnv1.RunFunctionRequest) {
				r.Observed.Composite = clusterXRWithUID
				delete(r.Desired.Resources, "dep-01")
			}),
			want: want{
				requirements: compositeObjects,
				results:      []*fnv1.Result{requesttest.Warning("StaleFinalizer", "reference finalizers name no Object that references the resource in this composition, so they are not declared: Crossplane drops those only it applied, and any the provider added stay until their Object, if it still exists, releases them or someone removes them (provider-kubernetes #28): shared "+requesttest.RefPrefix+"uid-dep-01 (of no Object of this composite)")},
			},
		},
		"DependentBeingDeletedIsNotStale": {
			reason: "Given the composite's Objects, a dependent Crossplane is deleting is one: its finalizer is kept while the target carries it, and no StaleFinalizer is raised.",
			req: requesttest.Issue371Request(1, []int{0, 1}, "", func(r *fnv1.RunFunctionRequest) {
				r.Observed.Composite = clusterXRWithUID
				delete(r.Desired.Resources, "dep-01")
				r.RequiredResources = map[string]*fnv1.Resources{
					"dependencies.fn.crossplane.io/objects-kubernetes.crossplane.io": {Items: []*fnv1.Resource{
						{Resource: resource.MustStructJSON(`{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "app-dep-00", "uid": "uid-dep-00", "labels": {"dependencies.fn.crossplane.io/composite-uid": "uid-app"}, "ownerReferences": [{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "name": "app", "uid": "uid-app", "controller": true}], "annotations": {"crossplane.io/composition-resource-name": "dep-00"}}, "spec": {"references": [{"dependsOn": {"name": "app-shared"}}]}}`)},
						{Resource: resource.MustStructJSON(`{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "app-dep-01", "uid": "uid-dep-01", "deletionTimestamp": "2026-12-01T08:00:00Z", "finalizers": ["finalizer.managedresource.crossplane.io"], "labels": {"dependencies.fn.crossplane.io/composite-uid": "uid-app"}, "ownerReferences": [{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "name": "app", "uid": "uid-app", "controller": true}], "annotations": {"crossplane.io/composition-resource-name": "dep-01"}}, "spec": {"references": [{"dependsOn": {"name": "app-shared"}}]}}`)},
					}},
				}
			}),
			want: want{
				requirements: compositeObjects,
				desired:      map[string]*fnv1.Resource{"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: append([]string{"example.org/earlier-step"}, requesttest.UIDFinalizers(2)...)}.Resource()},
				absent:       []string{"dep-01"},
			},
		},
		"DependentsLabelledWithTheirCompositesUID": {
			reason: "Each dependent Object gets its composite's UID as a label, which Crossplane doesn't strip when it deletes the Object for leaving the composition: the function finds it by it while it goes.",
			req: requesttest.Issue371Request(1, []int{0}, "", func(r *fnv1.RunFunctionRequest) {
				r.Observed.Composite = clusterXRWithUID
			}),
			want: want{desired: map[string]*fnv1.Resource{
				"dep-00": {Resource: resource.MustStructJSON(`{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "app-dep-00", "labels": {"dependencies.fn.crossplane.io/composite-uid": "uid-app"}}, "spec": {"forProvider": {"manifest": {"apiVersion": "v1", "kind": "ConfigMap"}}, "references": [{"dependsOn": {"name": "app-shared"}}]}}`)},
				"shared": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: append([]string{"example.org/earlier-step"}, requesttest.UIDFinalizers(1)...)}.Resource(),
			}},
		},
		"AskedForObjectsWhenAnOwnUsageIsUsedByNone": {
			reason: "While Crossplane deletes a dependent removed from the composition, its Usage stays observed: the function asks for the composite's Objects, so that it can keep the Usage until the dependent is gone.",
			req: withObserved(namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "protection": "Both"}`),
				"usage-3x-app-secret./team/token", `{"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage", "metadata": {"name": "u", "namespace": "team", "uid": "u3", "labels": {"dependencies.fn.crossplane.io/usage": "true"}}, "spec": {"by": {"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object", "resourceRef": {"name": "app"}}}}`,
			),
			want: want{count: 2, requirements: &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
				"dependencies.fn.crossplane.io/kubernetes.m.crossplane.io/v1alpha1/Object/team/app": {
					ApiVersion: "kubernetes.m.crossplane.io/v1alpha1", Kind: "Object", Namespace: ptr("team"),
					Match: &fnv1.ResourceSelector_MatchName{MatchName: "app"},
				},
			}}},
		},
		"WrittenReferenceKeptWhileItsRemovedDependencyIsDeleted": {
			reason: "The provider releases a finalizer only on what the Object references when it is deleted: the dependsOn the function wrote stays while the dependency the composition removed still exists, and the function asks for it by name to see it.",
			req: requesttest.Issue371Request(1, nil, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "dependencies": [{"resource": "dep-00", "dependsOn": ["db"]}]}`, func(r *fnv1.RunFunctionRequest) {
				r.Observed.Composite = clusterXRWithUID
				r.Desired.Resources["dep-00"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-00"}.Resource()
				r.Observed.Resources["dep-00"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-00", UID: "uid-dep-00", References: `[{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "app-db"}}]`}.Resource()
				r.RequiredResources = map[string]*fnv1.Resources{
					"dependencies.fn.crossplane.io/kubernetes.crossplane.io/v1alpha2/Object//app-db": {Items: []*fnv1.Resource{
						{Resource: resource.MustStructJSON(`{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "app-db", "uid": "uid-db", "deletionTimestamp": "2026-12-01T08:00:00Z", "finalizers": ["kubernetes.crossplane.io/referred-by-object-uid-dep-00"], "ownerReferences": [{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "name": "app", "uid": "uid-app", "controller": true}], "annotations": {"crossplane.io/composition-resource-name": "db"}}}`)},
					}},
				}
			}),
			want: want{
				requirements: &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
					"dependencies.fn.crossplane.io/kubernetes.crossplane.io/v1alpha2/Object//app-db": {
						ApiVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Match: &fnv1.ResourceSelector_MatchName{MatchName: "app-db"},
					},
				}},
				desired: map[string]*fnv1.Resource{
					"dep-00": {Resource: resource.MustStructJSON(`{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "app-dep-00", "labels": {"dependencies.fn.crossplane.io/composite-uid": "uid-app"}}, "spec": {"forProvider": {"manifest": {"apiVersion": "v1", "kind": "ConfigMap"}}, "references": [{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "app-db"}}]}}`)},
				},
				absent:  []string{"db"},
				results: []*fnv1.Result{requesttest.Warning("ReferencedResourceRemoved", "the composition no longer includes resources that live Objects still reference, so they may be deleted first: db (referenced by dep-00)")},
			},
		},
		"UnmatchedPattern": {
			reason: "A dependency that matches nothing is a warning, not an error.",
			req:    requesttest.Issue371Request(1, []int{0}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "dependencies": [{"resource": "dep-00", "dependsOn": ["datab.*"]}]}`, nil),
			want: want{results: []*fnv1.Result{
				requesttest.Warning("UnmatchedDependency", `dependencies in the input match no composed resource: dependencies[0].dependsOn[0] "datab.*"`),
			}},
		},
		"WaitForReady": {
			reason: "A dependent that doesn't exist yet is held back from desired state while its dependency isn't ready; an existing one stays.",
			req: requesttest.Issue371Request(2, []int{0}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "creation": "WaitForReady"}`, func(r *fnv1.RunFunctionRequest) {
				delete(r.Observed.Resources, "dep-01")
			}),
			want: want{
				absent: []string{"dep-01"},
				desired: map[string]*fnv1.Resource{
					"dep-00": requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-00", References: requesttest.DependsOn("app-shared")}.Resource(),
				},
				results: []*fnv1.Result{
					requesttest.Normal("HeldBack", "resources are held back from creation until their dependencies allow: dep-01 (waits for shared to be ready)"),
				},
			},
		},
		"HeldBackTarget": {
			reason: "A held-back resource that others reference is left out whole: nothing is written to it.",
			req: requesttest.Issue371Request(1, nil, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "creation": "WaitForReady", "dependencies": [{"resource": "shared", "dependsOn": ["base"]}]}`, func(r *fnv1.RunFunctionRequest) {
				delete(r.Observed.Resources, "shared")
				r.Desired.Resources["base"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-base"}.Resource()
				r.Observed.Resources["base"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-base", UID: "uid-base"}.Resource()
			}),
			want: want{
				absent: []string{"shared"},
				results: []*fnv1.Result{
					requesttest.Normal("HeldBack", "resources are held back from creation until their dependencies allow: shared (waits for base to be ready)"),
				},
			},
		},
		"Usage": {
			reason: "With protection: Usages, an edge between resources that aren't Objects gets a namespaced Usage, ready.",
			req:    namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "protection": "Usages", "dependencies": [{"resource": "web", "dependsOn": ["config"]}]}`),
			want:   want{desired: map[string]*fnv1.Resource{"usage-3-web-config": webConfigUsage}},
		},
		"UsageImpossible": {
			reason: "Crossplane v1's Usage can't protect namespaced resources: the function says so and emits none.",
			req:    namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "protection": "Usages", "usageAPI": "apiextensions.crossplane.io/v1beta1", "dependencies": [{"resource": "web", "dependsOn": ["config"]}]}`),
			want: want{
				absent: []string{"usage-3-web-config"},
				results: []*fnv1.Result{
					requesttest.Warning("UsageImpossible", "no Usage can protect these edges, so none is emitted: web → config (apiextensions.crossplane.io/v1beta1 Usages protect cluster-scoped resources only)"),
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := requesttest.Run(Run, v1beta1.StepComposition, tc.req)
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
				} else if tc.want.summary != "" && r.GetMessage() != tc.want.summary {
					t.Errorf("%s\nsummary: got %q, want %q", tc.reason, r.GetMessage(), tc.want.summary)
				}
			}
			if diff := cmp.Diff(tc.want.results, results, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nresults: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.requirements, rsp.GetRequirements(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nrequirements: -want, +got:\n%s", tc.reason, diff)
			}
			if n := len(rsp.GetDesired().GetResources()); tc.want.count != 0 && n != tc.want.count {
				t.Errorf("%s\ndesired state holds %d resources, want %d", tc.reason, n, tc.want.count)
			}
		})
	}
}

// namespacedXR is namespacedRequest's composite: apiVersion, kind,
// namespace, name.
var namespacedXR = [4]string{"example.org/v1", "App", "team", "shop"}

// usageName is the rule for a Usage's metadata.name: its composition resource
// name in lower case with every other character a dash, then a dash and eight
// hex digits of the SHA-256 of the composite's apiVersion, kind, namespace,
// name and that key, joined by slashes, so that two composites' Usages of one
// edge never share a name.
func usageName(xr [4]string, key string) string {
	sum := sha256.Sum256([]byte(strings.Join(append(xr[:], key), "/")))
	readable := strings.Map(func(c rune) rune {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			return c
		}
		return '-'
	}, strings.ToLower(key))
	return strings.Trim(readable, "-") + "-" + hex.EncodeToString(sum[:4])
}

// webConfigUsage is the Usage of config by web in namespacedRequest.
var webConfigUsage = &fnv1.Resource{Ready: fnv1.Ready_READY_TRUE, Resource: resource.MustStructJSON(`{
	"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
	"metadata": {"name": "` + usageName(namespacedXR, "usage-3-web-config") + `", "namespace": "team", "labels": {"dependencies.fn.crossplane.io/usage": "true"}},
	"spec": {
		"of": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "settings"}},
		"by": {"apiVersion": "apps/v1", "kind": "Deployment", "resourceRef": {"name": "web"}},
		"reason": "web depends on config (function-dependencies)",
		"replayDeletion": true
	}
}`)}

// kubeconfigChain is a cluster-scoped XR composing an Object "kubeconfig"
// whose manifest is a kubeconfig Secret, a ProviderConfig "config" that reads
// its credentials from it, and an Object "app" that uses the ProviderConfig,
// all observed as desired.
func kubeconfigChain(input string) *fnv1.RunFunctionRequest {
	r := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: clusterXRWithUID, Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	if input != "" {
		r.Input = resource.MustStructJSON(input)
	}
	for name, body := range map[string]string{
		"kubeconfig": `"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "kubeconfig"%s}, "spec": {"forProvider": {"manifest": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cluster-kubeconfig", "namespace": "crossplane-system"}}}}`,
		"config":     `"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "metadata": {"name": "remote"%s}, "spec": {"credentials": {"source": "Secret", "secretRef": {"name": "cluster-kubeconfig", "namespace": "crossplane-system", "key": "kubeconfig"}}}`,
		"app":        `"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "app"%s}, "spec": {"providerConfigRef": {"name": "remote"}, "forProvider": {"manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": "default"}}}}`,
	} {
		r.Desired.Resources[name] = &fnv1.Resource{Resource: resource.MustStructJSON("{" + fmt.Sprintf(body, "") + "}")}
		r.Observed.Resources[name] = &fnv1.Resource{Resource: resource.MustStructJSON("{" + fmt.Sprintf(body, `, "uid": "uid-`+name+`"`) + "}")}
	}
	return r
}

// chainUsage is the ClusterUsage of kubeconfigChain's edge of the key.
func chainUsage(key, dependent, dependency, by, of string) *fnv1.Resource {
	return &fnv1.Resource{Ready: fnv1.Ready_READY_TRUE, Resource: resource.MustStructJSON(`{
		"apiVersion": "protection.crossplane.io/v1beta1", "kind": "ClusterUsage",
		"metadata": {"name": "` + usageName([4]string{"example.org/v1alpha1", "XApp", "", "app"}, key) + `", "labels": {"dependencies.fn.crossplane.io/usage": "true"}},
		"spec": {"of": {` + of + `}, "by": {` + by + `}, "reason": "` + dependent + ` depends on ` + dependency + ` (function-dependencies)", "replayDeletion": true}
	}`)}
}

// withObserved adds an observed composed resource to the request.
func withObserved(r *fnv1.RunFunctionRequest, name, resourceJSON string) *fnv1.RunFunctionRequest {
	r.Observed.Resources[name] = &fnv1.Resource{Resource: resource.MustStructJSON(resourceJSON)}
	return r
}

// compositeObjects is what the function asks for when a finalizer on
// requesttest.Issue371Request's resources names an Object observed state lacks: the
// composite's cluster-scoped Objects.
var compositeObjects = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
	"dependencies.fn.crossplane.io/objects-kubernetes.crossplane.io": {
		ApiVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object",
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"dependencies.fn.crossplane.io/composite-uid": "uid-app"}}},
	},
}}

// clusterXRWithUID is requesttest.ClusterXR as the API server returns it, with a UID.
var clusterXRWithUID = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "XApp", "metadata": {"name": "app", "uid": "uid-app"}}`)}

// TestTheGraphIsInTheContextOnlyWhenAsked proves that graph: Context writes
// the graph, each edge with its protection and state, and that without it
// the response carries none.
func TestTheGraphIsInTheContextOnlyWhenAsked(t *testing.T) {
	withoutInput := requesttest.Run(Run, v1beta1.StepComposition, requesttest.Issue371Request(2, []int{0}, "", nil))
	if v, ok := withoutInput.GetContext().GetFields()[protocol.GraphContextKey]; ok {
		t.Errorf("without graph: Context, the context has %s: %v", protocol.GraphContextKey, v)
	}
	rsp := requesttest.Run(Run, v1beta1.StepComposition, requesttest.Issue371Request(2, []int{0}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "graph": "Context"}`, func(r *fnv1.RunFunctionRequest) {
		r.Desired.Resources["dep-01"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-dep-01", References: `[{"dependsOn": {"name": "app-shared"}}, {"dependsOn": {"apiVersion": "v1", "kind": "Secret", "name": "token", "namespace": "vault"}}]`}.Resource()
	}))
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
	if diff := cmp.Diff(want, rsp.GetContext().GetFields()[protocol.GraphContextKey], protocmp.Transform()); diff != "" {
		t.Errorf("context %s: -want, +got:\n%s", protocol.GraphContextKey, diff)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDecidingLeavesTheCompositionAsItWasRead(t *testing.T) {
	// Each step of decide reads what the earlier ones decided: the
	// composition it is given is the same for every step, so none may write
	// into it. The dependencies of the input are the graph's, not the
	// resources'.
	req := namespacedRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "dependencies": [{"resource": "web", "dependsOn": ["config"]}]}`)
	in, err := request.Input(req, v1beta1.StepComposition)
	if err != nil {
		t.Fatal(err)
	}
	c := request.ReadComposition(req)
	rd, err := readComposed(context.Background(), c, in)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decide(context.Background(), in, ownerOf(c.Composite), rd)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Graph.Edges) != 1 {
		t.Fatalf("decide(...) made %d edges, want the input's one", len(p.Graph.Edges))
	}
	for _, r := range rd.resources {
		if r.DependsOn != nil {
			t.Errorf("decide(...) wrote the input's dependencies into the composition it read: %s depends on %v", r.Name, r.DependsOn)
		}
	}
}

// The input names the Usage APIs that package protection writes: the step
// passes the input's value on as it is.
func TestTheInputsUsageAPIsAreThoseUsagesAreWrittenIn(t *testing.T) {
	for in, want := range map[v1beta1.UsageAPI]protection.API{v1beta1.UsageAPIProtection: protection.Protection, v1beta1.UsageAPIApiextensions: protection.Apiextensions} {
		if protection.API(in) != want {
			t.Errorf("protection.API(%q) = %q, want %q", in, protection.API(in), want)
		}
	}
}
