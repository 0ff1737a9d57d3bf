package operation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
)

// The Operation protocol, call by call: what the function asks Crossplane
// for, and what it declares once it has it.
// wire starts the name of each of the function's requirements, as Crossplane
// sees them.
const wire = "dependencies.fn.crossplane.io/"

func TestOperation(t *testing.T) {
	const (
		clusterObjects    = wire + "objects/kubernetes.crossplane.io"
		namespacedObjects = wire + "objects/kubernetes.m.crossplane.io"
		configTarget      = wire + "target/ConfigMap team/config"
		configMaps        = wire + "targets/v1/ConfigMap/team"
		ref               = "kubernetes.crossplane.io/referred-by-object-"
	)
	object := func(name, uid string, finalizers []any, refs ...map[string]any) map[string]any {
		references := make([]any, len(refs))
		for i, r := range refs {
			references[i] = map[string]any{"dependsOn": r}
		}
		return map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"metadata": map[string]any{"name": name, "uid": uid, "finalizers": finalizers},
			"spec":     map[string]any{"references": references, "forProvider": map[string]any{"manifest": map[string]any{}}},
		}
	}
	managed := "finalizer.managedresource.crossplane.io"
	sharedRef := map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": "shared"}
	configRef := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "team", "name": "config"}
	shared := object("shared", "uid-shared", []any{managed, ref + "uid-a"})
	a := object("a", "uid-a", []any{managed}, sharedRef)
	b := object("b", "uid-b", []any{managed}, sharedRef, configRef)
	// The Composition step labels an Object whose edges its Usages protect.
	byUsages := func(o map[string]any) map[string]any {
		o = maps.Clone(o)
		md := maps.Clone(o["metadata"].(map[string]any))
		md["labels"] = map[string]any{protocol.ProtectionLabel: "Usages"}
		o["metadata"] = md
		return o
	}
	going := object("going", "uid-going", []any{managed}, sharedRef)
	going["metadata"].(map[string]any)["deletionTimestamp"] = "2026-12-01T10:00:00Z"
	config := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "config", "namespace": "team", "uid": "uid-config"}}
	// A composite's teardown: the shared Object being deleted, held by
	// going-a, which is being deleted too; going-b released it already.
	deleting := func(o map[string]any) map[string]any {
		md := o["metadata"].(map[string]any)
		md["deletionTimestamp"] = "2026-12-01T10:00:00Z"
		md["labels"] = map[string]any{"crossplane.io/composite": "demo"}
		return o
	}
	deletingShared := deleting(object("shared", "uid-shared", []any{managed, ref + "uid-going-a"}))
	goingA := deleting(object("going-a", "uid-going-a", []any{managed}, sharedRef))
	goingB := deleting(object("going-b", "uid-going-b", []any{managed}, sharedRef))
	const (
		teardownCluster    = wire + "teardown/kubernetes.crossplane.io"
		teardownNamespaced = wire + "teardown/kubernetes.m.crossplane.io"
	)
	teardownOf := func(xr string) map[string]*fnv1.ResourceSelector {
		labels := map[string]string{"crossplane.io/composite": xr}
		return map[string]*fnv1.ResourceSelector{
			teardownCluster:    {ApiVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}}},
			teardownNamespaced: {ApiVersion: "kubernetes.m.crossplane.io/v1alpha1", Kind: "Object", Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}}},
		}
	}
	// holders is the nudge's value: a digest of the UIDs still holding.
	holders := func(uids ...string) string {
		sum := sha256.Sum256([]byte(strings.Join(uids, ",")))
		return hex.EncodeToString(sum[:])[:10]
	}

	resources := func(objects ...map[string]any) *fnv1.Resources {
		rs := &fnv1.Resources{}
		for _, o := range objects {
			rs.Items = append(rs.Items, &fnv1.Resource{Resource: requesttest.MustStruct(o)})
		}
		return rs
	}
	every := func(labels map[string]string) map[string]*fnv1.ResourceSelector {
		return map[string]*fnv1.ResourceSelector{
			clusterObjects:    {ApiVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}}},
			namespacedObjects: {ApiVersion: "kubernetes.m.crossplane.io/v1alpha1", Kind: "Object", Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}}},
		}
	}
	ns := "team"
	// A target is asked for by name, unless a sweep has many of its kind
	// in its namespace.
	withConfig := func(sels map[string]*fnv1.ResourceSelector) map[string]*fnv1.ResourceSelector {
		sels[configTarget] = &fnv1.ResourceSelector{ApiVersion: "v1", Kind: "ConfigMap", Namespace: &ns, Match: &fnv1.ResourceSelector_MatchName{MatchName: "config"}}
		return sels
	}
	// An Object is asked for by name, at the version the provider stores.
	withShared := func(sels map[string]*fnv1.ResourceSelector) map[string]*fnv1.ResourceSelector {
		sels[wire+"target/Object.kubernetes.crossplane.io shared"] = &fnv1.ResourceSelector{ApiVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Match: &fnv1.ResourceSelector_MatchName{MatchName: "shared"}}
		return sels
	}
	withConfigMaps := func(sels map[string]*fnv1.ResourceSelector) map[string]*fnv1.ResourceSelector {
		sels[configMaps] = &fnv1.ResourceSelector{ApiVersion: "v1", Kind: "ConfigMap", Namespace: &ns, Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{}}}}
		return sels
	}
	// Past maxByName targets of a kind in a namespace, a sweep lists them;
	// Secrets it asks for by name however many there are.
	var manyConfigs, manySecrets []map[string]any
	secrets := map[string]*fnv1.ResourceSelector{}
	system := "crossplane-system"
	for i := range maxByName + 1 {
		name := fmt.Sprintf("creds-%03d", i)
		manyConfigs = append(manyConfigs, object(fmt.Sprintf("config-%03d", i), fmt.Sprintf("uid-config-%03d", i), []any{managed},
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "team", "name": fmt.Sprintf("config-%03d", i)}))
		o := object(name, "uid-"+name, []any{managed})
		o["spec"].(map[string]any)["references"] = []any{map[string]any{"patchesFrom": map[string]any{
			"apiVersion": "v1", "kind": "Secret", "namespace": system, "name": name, "fieldPath": "data.password",
		}}}
		manySecrets = append(manySecrets, o)
		secrets[wire+"target/Secret "+system+"/"+name] = &fnv1.ResourceSelector{ApiVersion: "v1", Kind: "Secret", Namespace: &system, Match: &fnv1.ResourceSelector_MatchName{MatchName: name}}
	}
	withSecrets := func(sels map[string]*fnv1.ResourceSelector) map[string]*fnv1.ResourceSelector {
		maps.Copy(sels, secrets)
		return sels
	}
	partialOf := func(apiVersion, kind, namespace, name, uid string, finalizers ...any) *fnv1.Resource {
		md := map[string]any{"name": name, "uid": uid, "finalizers": finalizers}
		if namespace != "" {
			md["namespace"] = namespace
		}
		return &fnv1.Resource{Resource: requesttest.MustStruct(map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md})}
	}
	// A nudge is applied only to the version read, when the object read
	// has one.
	nudgeOf := func(name, uid, resourceVersion string, labels, annotations map[string]any) *fnv1.Resource {
		md := map[string]any{"name": name, "uid": uid}
		if resourceVersion != "" {
			md["resourceVersion"] = resourceVersion
		}
		if labels != nil {
			md["labels"] = labels
		}
		if annotations != nil {
			md["annotations"] = annotations
		}
		return &fnv1.Resource{Resource: requesttest.MustStruct(map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": md})}
	}
	// A released target, whose Namespace the provider is deleting.
	const (
		releasedCluster    = wire + "teardown-targets/kubernetes.crossplane.io"
		releasedNamespaced = wire + "teardown-targets/kubernetes.m.crossplane.io"
		sharedManifest     = wire + "manifest/Object.kubernetes.crossplane.io shared"
	)
	targetLabel := map[string]any{protocol.TeardownTargetLabel: "true"}
	releasedShared := deleting(object("shared", "uid-shared", []any{managed}))
	releasedShared["metadata"].(map[string]any)["labels"] = targetLabel
	releasedShared["metadata"].(map[string]any)["annotations"] = map[string]any{protocol.TeardownReleasedKey: "true"}
	// The target when its last holder let go: not woken yet.
	freedShared := deleting(object("shared", "uid-shared", []any{managed}))
	freedShared["metadata"].(map[string]any)["labels"] = targetLabel
	freedShared["metadata"].(map[string]any)["resourceVersion"] = "42"
	releasedShared["spec"].(map[string]any)["forProvider"] = map[string]any{"manifest": map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team"},
	}}
	namespace := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team", "uid": "uid-team"}}
	releasedSelectors := func(sels map[string]*fnv1.ResourceSelector) map[string]*fnv1.ResourceSelector {
		labels := map[string]string{protocol.TeardownTargetLabel: "true"}
		sels[releasedCluster] = &fnv1.ResourceSelector{ApiVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}}}
		sels[releasedNamespaced] = &fnv1.ResourceSelector{ApiVersion: "kubernetes.m.crossplane.io/v1alpha1", Kind: "Object", Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}}}
		return sels
	}
	withManifest := func(sels map[string]*fnv1.ResourceSelector) map[string]*fnv1.ResourceSelector {
		sels[sharedManifest] = &fnv1.ResourceSelector{ApiVersion: "v1", Kind: "Namespace", Match: &fnv1.ResourceSelector_MatchName{MatchName: "team"}}
		return sels
	}
	// An Object that holds the shared Object and is a target itself.
	withVersion := func(o map[string]any, rv string) map[string]any {
		o["metadata"].(map[string]any)["resourceVersion"] = rv
		return o
	}
	deletingSharedOfMiddle := withVersion(deleting(object("shared", "uid-shared", []any{managed, ref + "uid-middle"})), "3")
	deletingSharedOfMiddle["metadata"].(map[string]any)["labels"].(map[string]any)[protocol.TeardownTargetLabel] = "true"
	releasedMiddle := withVersion(deleting(object("middle", "uid-middle", []any{managed}, sharedRef)), "7")
	releasedMiddle["metadata"].(map[string]any)["labels"].(map[string]any)[protocol.TeardownTargetLabel] = "true"
	nudgedMiddle := withVersion(deleting(object("middle", "uid-middle", []any{managed}, sharedRef)), "7")
	nudgedMiddle["metadata"].(map[string]any)["labels"].(map[string]any)[protocol.TeardownTargetLabel] = "true"
	nudgedMiddle["metadata"].(map[string]any)["annotations"] = map[string]any{protocol.TeardownHolderKey("uid-shared"): holders("uid-middle")}
	sharedOfMiddleAndOther := withVersion(deleting(object("shared", "uid-shared", []any{managed, ref + "uid-middle", ref + "uid-other"})), "3")
	sharedOfMiddleAndOther["metadata"].(map[string]any)["labels"].(map[string]any)[protocol.TeardownTargetLabel] = "true"
	other := deleting(object("other", "uid-other", []any{managed}, sharedRef))
	heldMiddle := withVersion(deleting(object("middle", "uid-middle", []any{managed, ref + "uid-leaf"}, sharedRef)), "7")
	warning := func(reason, message string) *fnv1.Result {
		return &fnv1.Result{Severity: fnv1.Severity_SEVERITY_WARNING, Reason: &reason, Message: message}
	}

	cases := map[string]struct {
		input    map[string]any
		required map[string]*fnv1.Resources
		want     *fnv1.RunFunctionResponse
	}{
		"ASweepFirstAsksForEveryObjectOfBothGroups": {
			want: &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: every(map[string]string{})}},
		},
		"ASweepThenAsksForAFewTargetsOfAKindInANamespaceByName": {
			required: map[string]*fnv1.Resources{clusterObjects: resources(a, b, shared), namespacedObjects: {}},
			want:     &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: withConfig(every(map[string]string{}))}},
		},
		"ASweepListsAKindWithMoreTargetsInANamespaceThanItAsksForByName": {
			required: map[string]*fnv1.Resources{clusterObjects: resources(manyConfigs...), namespacedObjects: {}},
			want:     &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: withConfigMaps(every(map[string]string{}))}},
		},
		"ASweepAsksForEachSecretByNameAndListsNoSecrets": {
			// However many: a list would read every Secret of the
			// namespace, every provider's credentials among them.
			required: map[string]*fnv1.Resources{clusterObjects: resources(manySecrets...), namespacedObjects: {}},
			want:     &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: withSecrets(every(map[string]string{}))}},
		},
		"ASweepDeclaresOnTheLiveTargetsOnlyTheFinalizersTheyLack": {
			required: map[string]*fnv1.Resources{clusterObjects: resources(a, b, going, shared), namespacedObjects: {}, configTarget: resources(config)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: withConfig(every(map[string]string{}))},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"ConfigMap team/config":                  partialOf("v1", "ConfigMap", "team", "config", "uid-config", ref+"uid-b"),
					"Object.kubernetes.crossplane.io shared": partialOf("kubernetes.crossplane.io/v1alpha2", "Object", "", "shared", "uid-shared", ref+"uid-b"),
					// Being deleted, and no target: never written to.
				}},
				Output: requesttest.MustStruct(map[string]any{
					"dependents": 3, "references": 4, "protected": 1,
					"repaired": []any{
						map[string]any{"target": "ConfigMap team/config", "finalizers": []any{ref + "uid-b"}},
						map[string]any{"target": "Object.kubernetes.crossplane.io shared", "finalizers": []any{ref + "uid-b"}},
					},
					"skipped": []any{map[string]any{"dependent": "Object.kubernetes.crossplane.io going", "target": "Object.kubernetes.crossplane.io shared", "reason": "DependentDeleting"}},
				}),
			},
		},
		"ASweepLeavesOutTheFinalizersOfAnObjectItsCompositionProtectsWithUsages": {
			required: map[string]*fnv1.Resources{clusterObjects: resources(a, byUsages(b), going, shared), namespacedObjects: {}, configTarget: resources(config)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: withConfig(every(map[string]string{}))},
				Desired:      &fnv1.State{Resources: map[string]*fnv1.Resource{}},
				Output: requesttest.MustStruct(map[string]any{
					"dependents": 3, "references": 4, "protected": 1,
					"skipped": []any{map[string]any{"dependent": "Object.kubernetes.crossplane.io going", "target": "Object.kubernetes.crossplane.io shared", "reason": "DependentDeleting"}},
				}),
			},
		},
		"AMissingTargetIsSkippedNotFatal": {
			required: map[string]*fnv1.Resources{clusterObjects: resources(b, shared), namespacedObjects: {}, configTarget: {}},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: withConfig(every(map[string]string{}))},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"Object.kubernetes.crossplane.io shared": partialOf("kubernetes.crossplane.io/v1alpha2", "Object", "", "shared", "uid-shared", ref+"uid-b"),
				}},
				Output: requesttest.MustStruct(map[string]any{
					"dependents": 1, "references": 2, "protected": 0,
					"repaired": []any{map[string]any{"target": "Object.kubernetes.crossplane.io shared", "finalizers": []any{ref + "uid-b"}}},
					"skipped":  []any{map[string]any{"dependent": "Object.kubernetes.crossplane.io b", "target": "ConfigMap team/config", "reason": "TargetNotFound"}},
					// A's finalizer names no Object this sweep read.
					"stale": []any{map[string]any{"target": "Object.kubernetes.crossplane.io shared", "finalizer": ref + "uid-a"}},
				}),
				Results: []*fnv1.Result{warning("StaleFinalizer", "1 reference finalizer naming no live Object that references its target: Object.kubernetes.crossplane.io shared carries "+ref+"uid-a")},
			},
		},
		"ReportModeDeclaresNothingAndListsWhatIsMissing": {
			input:    map[string]any{"mode": "Report"},
			required: map[string]*fnv1.Resources{clusterObjects: resources(a, shared), namespacedObjects: {}},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: every(map[string]string{})},
				Output:       requesttest.MustStruct(map[string]any{"dependents": 1, "references": 1, "protected": 1}),
			},
		},
		"AnObjectSelectorSweepsOnlyTheObjectsWithItsLabelsAndReportsNoStaleFinalizer": {
			input:    map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"team": "payments"}}},
			required: map[string]*fnv1.Resources{clusterObjects: resources(shared), namespacedObjects: {}},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: every(map[string]string{"team": "payments"})},
				Output:       requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0}),
			},
		},
		"ASelectiveSweepAsksForAnObjectOutsideItsSelectorByName": {
			input:    map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"team": "payments"}}},
			required: map[string]*fnv1.Resources{clusterObjects: resources(a), namespacedObjects: {}},
			want:     &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: withShared(every(map[string]string{"team": "payments"}))}},
		},
		"AWatchOperationHandlesOnlyTheWatchedObject": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: resources(b), configTarget: resources(config)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: withConfig(withShared(map[string]*fnv1.ResourceSelector{}))},
			},
		},
		"AWatchedTargetBeingDeletedAsksForTheObjectsOfItsComposite": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: resources(deletingShared)},
			want:     &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: teardownOf("demo")}},
		},
		"AWatchedTargetBeingDeletedWakesTheDeletingObjectsThatHoldIt": {
			required: map[string]*fnv1.Resources{
				protocol.WatchedResource: resources(deletingShared), teardownCluster: resources(deletingShared, goingA, goingB, a), teardownNamespaced: {},
			},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: teardownOf("demo")},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					// going-a still holds the shared Object: woken at each
					// release; going-b, which let go, is left alone. The
					// shared Object is labelled a target, once.
					"Object.kubernetes.crossplane.io going-a": nudgeOf("going-a", "uid-going-a", "", nil,
						map[string]any{protocol.TeardownHolderKey("uid-shared"): holders("uid-going-a")}),
					"Object.kubernetes.crossplane.io shared": nudgeOf("shared", "uid-shared", "", targetLabel, nil),
				}},
				Output: requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0, "nudged": []any{"Object.kubernetes.crossplane.io going-a", "Object.kubernetes.crossplane.io shared"}}),
			},
		},
		"AHolderThatIsATargetToo": {
			// middle holds the shared Object, its first holder, and no
			// dependent holds middle any more: it is due its holder nudge,
			// never pinned, and ReleasedKey, always pinned. One partial
			// object can't be both: the holder nudge goes now.
			required: map[string]*fnv1.Resources{
				protocol.WatchedResource: resources(deletingSharedOfMiddle), teardownCluster: resources(deletingSharedOfMiddle, releasedMiddle), teardownNamespaced: {},
			},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: teardownOf("demo")},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"Object.kubernetes.crossplane.io middle": nudgeOf("middle", "uid-middle", "", nil,
						map[string]any{protocol.TeardownHolderKey("uid-shared"): holders("uid-middle")}),
				}},
				Output: requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0, "nudged": []any{"Object.kubernetes.crossplane.io middle"}}),
			},
		},
		"AHolderThatIsATargetTooIsReleasedByTheNextOperation": {
			// The holder nudge's write made the next Operation: ReleasedKey,
			// alone now, pinned.
			required: map[string]*fnv1.Resources{protocol.WatchedResource: resources(nudgedMiddle), wire + "target/Object.kubernetes.crossplane.io shared": resources(deletingSharedOfMiddle)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: withShared(map[string]*fnv1.ResourceSelector{})},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"Object.kubernetes.crossplane.io middle": nudgeOf("middle", "uid-middle", "7", nil, map[string]any{protocol.TeardownReleasedKey: "true"}),
				}},
				Output: requesttest.MustStruct(map[string]any{"dependents": 1, "references": 1, "protected": 0, "nudged": []any{"Object.kubernetes.crossplane.io middle"},
					"skipped": []any{map[string]any{"dependent": "Object.kubernetes.crossplane.io middle", "target": "Object.kubernetes.crossplane.io shared", "reason": "DependentDeleting"}}}),
			},
		},
		"AHolderThatIsHeldItselfIsLabelledATargetAndNotWoken": {
			// leaf holds middle, which holds the shared Object: middle can't
			// let go before leaf does, so the shared Object's next holder,
			// other, is woken; middle is labelled a target, pinned.
			required: map[string]*fnv1.Resources{
				protocol.WatchedResource: resources(sharedOfMiddleAndOther), teardownCluster: resources(sharedOfMiddleAndOther, heldMiddle, other), teardownNamespaced: {},
			},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: teardownOf("demo")},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"Object.kubernetes.crossplane.io middle": nudgeOf("middle", "uid-middle", "7", targetLabel, nil),
					"Object.kubernetes.crossplane.io other": nudgeOf("other", "uid-other", "", nil,
						map[string]any{protocol.TeardownHolderKey("uid-shared"): holders("uid-middle", "uid-other")}),
				}},
				Output: requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0, "nudged": []any{"Object.kubernetes.crossplane.io middle", "Object.kubernetes.crossplane.io other"}}),
			},
		},
		"AWatchedTargetNoOneHoldsAnyMoreIsWokenOnce": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: resources(freedShared)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{}},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"Object.kubernetes.crossplane.io shared": nudgeOf("shared", "uid-shared", "42", nil, map[string]any{protocol.TeardownReleasedKey: "true"}),
				}},
				Output: requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0, "nudged": []any{"Object.kubernetes.crossplane.io shared"}}),
			},
		},
		"ReportModeNudgesNothing": {
			input:    map[string]any{"mode": "Report"},
			required: map[string]*fnv1.Resources{protocol.WatchedResource: resources(freedShared)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{}},
				Output:       requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0}),
			},
		},
		"AWatchedResourceThatIsGoneAsksForTheTargetsOfTeardowns": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: {}},
			want:     &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: releasedSelectors(map[string]*fnv1.ResourceSelector{})}},
		},
		"AReleasedTargetIsAskedForWhatItManages": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: {}, releasedCluster: resources(releasedShared), releasedNamespaced: {}},
			want:     &fnv1.RunFunctionResponse{Requirements: &fnv1.Requirements{Resources: withManifest(releasedSelectors(map[string]*fnv1.ResourceSelector{}))}},
		},
		"AReleasedTargetWhoseResourceIsGoneIsWokenOnce": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: {}, releasedCluster: resources(releasedShared), releasedNamespaced: {}, sharedManifest: {}},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: withManifest(releasedSelectors(map[string]*fnv1.ResourceSelector{}))},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"Object.kubernetes.crossplane.io shared": nudgeOf("shared", "uid-shared", "", nil, map[string]any{protocol.TeardownGoneKey: "true"}),
				}},
				Output: requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0, "nudged": []any{"Object.kubernetes.crossplane.io shared"}}),
			},
		},
		"AReleasedTargetWhoseResourceRemainsWaits": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: {}, releasedCluster: resources(releasedShared), releasedNamespaced: {}, sharedManifest: resources(namespace)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: withManifest(releasedSelectors(map[string]*fnv1.ResourceSelector{}))},
				Output:       requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0}),
			},
		},
		"ATargetFreedWhileNoOneWatchedItIsWokenWhenSomethingGoes": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: {}, releasedCluster: resources(freedShared), releasedNamespaced: {}},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: releasedSelectors(map[string]*fnv1.ResourceSelector{})},
				Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
					"Object.kubernetes.crossplane.io shared": nudgeOf("shared", "uid-shared", "42", nil, map[string]any{protocol.TeardownReleasedKey: "true"}),
				}},
				Output: requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0, "nudged": []any{"Object.kubernetes.crossplane.io shared"}}),
			},
		},
		"AWatchedResourceOfAnotherKindNeedsNothingWhileItLives": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: resources(config)},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{}},
				Output:       requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0}),
			},
		},
		"AnUnreadableReferenceIsAWarningNamingTheObjectAndField": {
			required: map[string]*fnv1.Resources{protocol.WatchedResource: resources(object("bad", "uid-bad", []any{managed}, map[string]any{"kind": "ConfigMap"}))},
			want: &fnv1.RunFunctionResponse{
				Requirements: &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{}},
				Output:       requesttest.MustStruct(map[string]any{"dependents": 0, "references": 0, "protected": 0}),
				Results: []*fnv1.Result{warning("InvalidReference",
					"cannot read the references of 1 Object: Object.kubernetes.crossplane.io bad: spec.references[0].dependsOn.name: Required value: names the referenced object")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{Desired: &fnv1.State{}, RequiredResources: tc.required}
			if tc.input != nil {
				req.Input = requesttest.MustStruct(typed(tc.input))
			}
			rsp := requesttest.Run(Run, v1beta1.StepOperation, req)
			want := tc.want
			want.Meta = &fnv1.ResponseMeta{Ttl: durationpb.New(response.DefaultTTL)}
			if want.Desired == nil {
				want.Desired = &fnv1.State{}
			}
			if diff := cmp.Diff(want, rsp, protocmp.Transform()); diff != "" {
				t.Errorf("RunFunction(...): -want, +got:\n%s", diff)
			}
		})
	}
	t.Run("AResponseLargerThanCrossplaneReadsDeclaresNothing", func(t *testing.T) {
		req := &fnv1.RunFunctionRequest{Desired: &fnv1.State{}, RequiredResources: map[string]*fnv1.Resources{clusterObjects: resources(a, b, going, shared), namespacedObjects: {}, configTarget: resources(config)}}
		rsp := response.To(req, response.DefaultTTL)
		if err := Run(context.Background(), &v1beta1.Input{Mode: v1beta1.ModeEnforce}, req, rsp, protocol.Limits{ResponseBytes: 256}, logging.NewNopLogger()); err != nil {
			t.Fatal(err)
		}
		if len(rsp.GetDesired().GetResources()) != 0 {
			t.Errorf("a response past the limit declares %d partial objects, want none", len(rsp.GetDesired().GetResources()))
		}
		if r := rsp.GetResults(); len(r) != 1 || r[0].GetSeverity() != fnv1.Severity_SEVERITY_FATAL || !strings.Contains(r[0].GetMessage(), "more than the 256 Crossplane reads") {
			t.Errorf("results %v, want one Fatal naming the limit", r)
		}
	})
}

// A healthy cluster, every reference finalizer in place, gets no result
// from an Operation, in either mode, sweep or watch: Crossplane turns each
// result into an event, on every Operation. Its shapes are those of
// compositions that compose Objects in public repositories: an Object that
// patches from a user's Secret, one that patches from a ProviderConfig, one
// from its own XR, Objects sharing an Object, a namespaced Object reading a
// ConfigMap; besides, an Object that references nothing, and a Secret and a
// ConfigMap nothing references.
func TestAnOperationOnAConvergedClusterReturnsNoResult(t *testing.T) {
	const (
		managed = "finalizer.managedresource.crossplane.io"
		ref     = "kubernetes.crossplane.io/referred-by-object-"
	)
	obj := func(apiVersion, kind, namespace, name string, finalizers []any, refs ...map[string]any) map[string]any {
		md := map[string]any{"name": name, "uid": "uid-" + name, "resourceVersion": "1", "finalizers": finalizers}
		if namespace != "" {
			md["namespace"] = namespace
		}
		o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
		if kind == "Object" {
			references := make([]any, len(refs))
			for i, r := range refs {
				references[i] = r
			}
			o["spec"] = map[string]any{"references": references, "forProvider": map[string]any{"manifest": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}}
		}
		return o
	}
	patchesFrom := func(apiVersion, kind, namespace, name string) map[string]any {
		t := map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name, "fieldPath": "metadata.uid"}
		if namespace != "" {
			t["namespace"] = namespace
		}
		return map[string]any{"patchesFrom": t}
	}
	dependsOn := func(apiVersion, name string) map[string]any {
		return map[string]any{"dependsOn": map[string]any{"apiVersion": apiVersion, "kind": "Object", "name": name}}
	}
	cluster := []map[string]any{
		obj("kubernetes.crossplane.io/v1alpha2", "Object", "", "database", []any{managed, ref + "uid-app", ref + "uid-worker"}),
		obj("kubernetes.crossplane.io/v1alpha2", "Object", "", "app", []any{managed},
			dependsOn("kubernetes.crossplane.io/v1alpha2", "database"), patchesFrom("v1", "Secret", "team", "db-password")),
		obj("kubernetes.crossplane.io/v1alpha2", "Object", "", "worker", []any{managed},
			dependsOn("kubernetes.crossplane.io/v1alpha1", "database"), patchesFrom("kubernetes.crossplane.io/v1alpha1", "ProviderConfig", "", "default")),
		obj("kubernetes.crossplane.io/v1alpha2", "Object", "", "status", []any{managed}, patchesFrom("example.org/v1", "XApp", "", "my-app")),
		obj("kubernetes.crossplane.io/v1alpha2", "Object", "", "lonely", []any{managed}),
		obj("kubernetes.m.crossplane.io/v1alpha1", "Object", "team", "reader", []any{managed}, patchesFrom("v1", "ConfigMap", "team", "settings")),
		obj("v1", "Secret", "team", "db-password", []any{ref + "uid-app"}),
		obj("v1", "Secret", "team", "unrelated", nil),
		obj("kubernetes.crossplane.io/v1alpha1", "ProviderConfig", "", "default", []any{ref + "uid-worker"}),
		obj("example.org/v1", "XApp", "", "my-app", []any{"composite.apiextensions.crossplane.io", ref + "uid-status"}),
		obj("v1", "ConfigMap", "team", "settings", []any{ref + "uid-reader"}),
		obj("v1", "ConfigMap", "team", "unrelated", nil),
	}
	// fetch answers a requirement as core does: by name a get, else a list
	// of what has the labels, in the selector's namespace if it has one.
	fetch := func(sel *fnv1.ResourceSelector) *fnv1.Resources {
		out := &fnv1.Resources{}
	objects:
		for _, o := range cluster {
			s := requesttest.MustStruct(o)
			id := request.ObjectOf(s).Identity()
			group, _, _ := strings.Cut(sel.GetApiVersion(), "/")
			if !strings.Contains(sel.GetApiVersion(), "/") {
				group = ""
			}
			if id.Group != group || id.Kind != sel.GetKind() || (sel.GetNamespace() != "" && id.Namespace != sel.GetNamespace()) {
				continue
			}
			if name := sel.GetMatchName(); name != "" && (name != id.Name || id.Namespace != sel.GetNamespace()) {
				continue
			}
			for k, v := range sel.GetMatchLabels().GetLabels() {
				if request.ObjectOf(s).Label(k) != v {
					continue objects
				}
			}
			s.Fields["apiVersion"] = structpb.NewStringValue(sel.GetApiVersion())
			out.Items = append(out.Items, &fnv1.Resource{Resource: s})
		}
		return out
	}
	// operate runs an Operation's function to its last call, as core does.
	operate := func(t *testing.T, input map[string]any, watched map[string]any) *fnv1.RunFunctionResponse {
		t.Helper()
		bootstrap := map[string]*fnv1.Resources{}
		if watched != nil {
			bootstrap[protocol.WatchedResource] = &fnv1.Resources{Items: []*fnv1.Resource{{Resource: requesttest.MustStruct(watched)}}}
		}
		req := &fnv1.RunFunctionRequest{Desired: &fnv1.State{}, RequiredResources: maps.Clone(bootstrap)}
		if input != nil {
			req.Input = requesttest.MustStruct(typed(input))
		}
		var last *fnv1.Requirements
		for range 6 {
			rsp := requesttest.Run(Run, v1beta1.StepOperation, proto.Clone(req).(*fnv1.RunFunctionRequest))
			if proto.Equal(rsp.GetRequirements(), last) {
				return rsp
			}
			last = rsp.GetRequirements()
			req.RequiredResources = maps.Clone(bootstrap)
			for name, sel := range last.GetResources() {
				req.RequiredResources[name] = fetch(sel)
			}
		}
		t.Fatal("the requirements never stopped changing")
		return nil
	}
	type operation struct {
		input   map[string]any
		watched map[string]any
	}
	cases := map[string]operation{
		"Sweep":       {},
		"ReportSweep": {input: map[string]any{"mode": "Report"}},
	}
	for _, o := range cluster {
		if o["kind"] == "Object" {
			cases["Watch "+o["metadata"].(map[string]any)["name"].(string)] = operation{watched: o}
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			input := map[string]any{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"}
			maps.Copy(input, tc.input)
			rsp := operate(t, input, tc.watched)
			if diff := cmp.Diff([]*fnv1.Result(nil), rsp.GetResults(), protocmp.Transform()); diff != "" {
				t.Errorf("results: -want, +got:\n%s", diff)
			}
			if n := len(rsp.GetDesired().GetResources()); n != 0 {
				t.Errorf("a converged cluster gets %d desired resources, want none", n)
			}
			// Each reference read, and found protected: the sweep's six.
			out := rsp.GetOutput().AsMap()
			if tc.watched == nil && (out["references"] != 6.0 || out["protected"] != 6.0) {
				t.Errorf("the sweep found %v of %v references protected, want 6 of 6", out["protected"], out["references"])
			}
			if out["references"] != out["protected"] {
				t.Errorf("%v of %v references protected, want every one", out["protected"], out["references"])
			}
		})
	}
}

// typed returns the input with the apiVersion and kind every given input
// carries.
func typed(in map[string]any) map[string]any {
	in = maps.Clone(in)
	in["apiVersion"], in["kind"] = v1beta1.GroupVersion, "Input"
	return in
}
