package composition

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// appsRequest is the composite "apps" composing one Object "app-01" that uses
// the ProviderConfig acme-cluster, which it doesn't compose, with infer set;
// config, when set, is that ProviderConfig as Crossplane fetched it for the
// step's requirement.
func appsRequest(infer, config string) *fnv1.RunFunctionRequest {
	const object = `{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": {"name": "apps-app-01"%s}, "spec": {"providerConfigRef": {"name": "acme-cluster"}, "forProvider": {"manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-01", "namespace": "apps"}}}}}`
	r := &fnv1.RunFunctionRequest{
		Input: resource.MustStructJSON(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "infer": ` + infer + `}`),
		Observed: &fnv1.State{
			Composite: &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "XApps", "metadata": {"name": "apps", "uid": "uid-apps"}}`)},
			Resources: map[string]*fnv1.Resource{"app-01": {Resource: resource.MustStructJSON(fmt.Sprintf(object, `, "uid": "uid-app-01"`))}},
		},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{"app-01": {Resource: resource.MustStructJSON(fmt.Sprintf(object, ""))}}},
	}
	if config != "" {
		r.RequiredResources = map[string]*fnv1.Resources{
			acmeConfigRequirement: {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(config)}}},
		}
	}
	return r
}

const acmeConfigRequirement = "dependencies.fn.crossplane.io/kubernetes.crossplane.io/v1alpha1/ProviderConfig//acme-cluster"

// askForAcmeConfig is what the step asks Crossplane for: the ProviderConfig
// by name, in the version of provider-kubernetes's ProviderConfig API.
var askForAcmeConfig = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{acmeConfigRequirement: {
	ApiVersion: "kubernetes.crossplane.io/v1alpha1", Kind: "ProviderConfig", Match: &fnv1.ResourceSelector_MatchName{MatchName: "acme-cluster"},
}}}

// acmeConfig is the ProviderConfig acme-cluster, with the owner references
// and labels given.
func acmeConfig(metadata string) string {
	return `{"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "metadata": {"name": "acme-cluster", "uid": "uid-acme-cluster"` + metadata + `}, "spec": {"credentials": {"source": "Secret", "secretRef": {"namespace": "acme", "name": "kubeconfig", "key": "kubeconfig"}}}}`
}

// composedByAcme is the metadata Crossplane gives a resource the cluster
// composite acme composes.
const composedByAcme = `, "labels": {"crossplane.io/composite": "acme"}, "ownerReferences": [{"apiVersion": "example.org/v1alpha1", "kind": "XCluster", "name": "acme", "uid": "uid-acme", "controller": true, "blockOwnerDeletion": true}]`

// The conditions' summaries, with no dependency outside the composite and
// with one.
const (
	nothingOutside = "DeletionOrdered STATUS_CONDITION_TRUE Protected: every live reference between composed resources is protected. 1 composed resource, 0 references between them and none to external objects; nothing added\n"
	oneOutside     = "1 composed resource, 0 references between them and 1 to an external object, 0 of them unprotected; nothing added\n"
	// oneOutsideAdded is oneOutside in the call that adds the Usage.
	oneOutsideAdded = "1 composed resource, 0 references between them and 1 to an external object, 0 of them unprotected; 1 Usage added\n"
)

func TestAResourceDependsOnTheCompositeOfTheProviderConfigItUses(t *testing.T) {
	usageOfAcme := resource.MustStructJSON(`{"apiVersion": "protection.crossplane.io/v1beta1", "kind": "ClusterUsage",
		"metadata": {"name": "` + usageName([4]string{"example.org/v1alpha1", "XApps", "", "apps"}, "usage-6x-app-01-xcluster.example.org//acme") + `", "labels": {"dependencies.fn.crossplane.io/usage": "true"}},
		"spec": {"of": {"apiVersion": "example.org/v1alpha1", "kind": "XCluster", "resourceRef": {"name": "acme"}},
			"by": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "resourceRef": {"name": "apps-app-01"}},
			"reason": "app-01 depends on XCluster.example.org acme (function-dependencies)", "replayDeletion": true}}`)
	cases := map[string]struct {
		reason string
		req    *fnv1.RunFunctionRequest
		// usage is the Usage of acme the response must hold, or nil for none.
		usage     bool
		condition string
		// results are none but the Summary of a step that emits a Usage
		// not observed yet.
		results []*fnv1.Result
	}{
		"AskedFor": {
			reason:    "A ProviderConfig the composite doesn't compose is asked for by name: only the cluster says whose it is. Until Crossplane answers, nothing is inferred of it.",
			req:       appsRequest(`["ProviderConfigs"]`, ""),
			condition: nothingOutside,
		},
		"AnotherCompositesConfig": {
			reason:    "A resource whose ProviderConfig another composite composes gets a Usage of that composite: deleting the cluster's composite waits, replayed, until nothing that runs on the cluster is left.",
			req:       appsRequest(`["ProviderConfigs"]`, acmeConfig(composedByAcme)),
			usage:     true,
			results:   []*fnv1.Result{requesttest.Summary(strings.TrimSuffix(oneOutsideAdded, "\n"))},
			condition: "DeletionOrdered STATUS_CONDITION_FALSE UsagesPending: Usages are declared but not yet in force, or wait for both their ends to exist: app-01 → XCluster.example.org acme. " + oneOutsideAdded,
		},
		"AnotherCompositesConfigProtected": {
			reason: "Once its Usage is observed, the dependency on the other composite is protected, and the step says nothing.",
			req: func() *fnv1.RunFunctionRequest {
				r := appsRequest(`["ProviderConfigs"]`, acmeConfig(composedByAcme))
				u := proto.Clone(usageOfAcme).(*structpb.Struct)
				u.Fields["metadata"].GetStructValue().Fields["uid"] = structpb.NewStringValue("uid-usage")
				r.Observed.Resources["usage-6x-app-01-xcluster.example.org//acme"] = &fnv1.Resource{Resource: u}
				return r
			}(),
			usage:     true,
			condition: "DeletionOrdered STATUS_CONDITION_TRUE Protected: every live reference between composed resources is protected. " + oneOutside,
		},
		"InstalledByHand": {
			reason:    "A ProviderConfig installed by hand is no composite's: no Usage per managed resource of a default ProviderConfig.",
			req:       appsRequest(`["ProviderConfigs"]`, acmeConfig("")),
			condition: nothingOutside,
		},
		"OwnedByAControllerNotAComposite": {
			reason:    "A controller that didn't compose the ProviderConfig (no composite label of its name) is not a composite: nothing is inferred.",
			req:       appsRequest(`["ProviderConfigs"]`, acmeConfig(`, "ownerReferences": [{"apiVersion": "example.org/v1alpha1", "kind": "Installer", "name": "acme", "uid": "uid-acme", "controller": true}]`)),
			condition: nothingOutside,
		},
		"NotAsked": {
			reason:    "Without ProviderConfigs in infer, nothing is asked for or inferred.",
			req:       appsRequest(`["Credentials"]`, acmeConfig(composedByAcme)),
			condition: nothingOutside,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := requesttest.Run(Run, v1beta1.StepComposition, tc.req)
			wantRequirements := askForAcmeConfig
			if name == "NotAsked" {
				wantRequirements = nil
			}
			if diff := cmp.Diff(wantRequirements, rsp.GetRequirements(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nrequirements: -want, +got:\n%s", tc.reason, diff)
			}
			var usages []*fnv1.Resource
			for name, r := range rsp.GetDesired().GetResources() {
				if name != "app-01" {
					usages = append(usages, r)
				}
			}
			var want []*fnv1.Resource
			if tc.usage {
				want = []*fnv1.Resource{{Resource: usageOfAcme, Ready: fnv1.Ready_READY_TRUE}}
			}
			if diff := cmp.Diff(want, usages, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nUsages: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.results, rsp.GetResults(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nresults: -want, +got:\n%s", tc.reason, diff)
			}
			var got strings.Builder
			for _, c := range rsp.GetConditions() {
				fmt.Fprintf(&got, "%s %s %s: %s\n", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
			}
			if got.String() != tc.condition {
				t.Errorf("%s\nconditions: want %q, got %q", tc.reason, tc.condition, got.String())
			}
		})
	}
}
