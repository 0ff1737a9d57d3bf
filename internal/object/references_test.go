package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestReferences(t *testing.T) {
	cases := map[string]struct {
		reason     string
		group      string
		references string
		want       []Target
		wantErrs   []string
	}{
		"NoReferences": {
			reason:     "An Object without references references nothing.",
			group:      ClusterGroup,
			references: `null`,
		},
		"ClusterDefaults": {
			reason:     "A dependsOn without apiVersion and kind names a cluster-scoped Object, as the CRD defaults it.",
			group:      ClusterGroup,
			references: `[{"dependsOn": {"name": "shared"}}]`,
			want:       []Target{{Ref: Ref{APIVersion: "kubernetes.crossplane.io/v1alpha1", Group: ClusterGroup, Kind: Kind, Name: "shared"}, Index: 0, Via: "dependsOn"}},
		},
		"NamespacedDefaultsWithoutNamespace": {
			reason:     "A namespaced Object's dependsOn defaults to a namespaced Object, and its namespace is not defaulted.",
			group:      NamespacedGroup,
			references: `[{"dependsOn": {"name": "shared"}}]`,
			want:       []Target{{Ref: Ref{APIVersion: "kubernetes.m.crossplane.io/v1alpha1", Group: NamespacedGroup, Kind: Kind, Name: "shared"}, Index: 0, Via: "dependsOn"}},
		},
		"ExplicitKind": {
			reason:     "An explicit apiVersion and kind name any kind; the version is dropped.",
			group:      NamespacedGroup,
			references: `[{"dependsOn": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "team"}}]`,
			want:       []Target{{Ref: Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: "cm"}, Index: 0, Via: "dependsOn"}},
		},
		"PatchesFrom": {
			reason:     "A patchesFrom reference is a dependency too.",
			group:      ClusterGroup,
			references: `[{"patchesFrom": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "name": "shared", "fieldPath": "status.atProvider.manifest.metadata.uid"}, "toFieldPath": "data.uid"}]`,
			want:       []Target{{Ref: Ref{APIVersion: "kubernetes.crossplane.io/v1alpha2", Group: ClusterGroup, Kind: Kind, Name: "shared"}, Index: 0, Via: "patchesFrom"}},
		},
		"BothPatchesFromWins": {
			reason:     "With both set the provider uses patchesFrom; so does the function, and it says so.",
			group:      ClusterGroup,
			references: `[{"dependsOn": {"name": "a"}, "patchesFrom": {"name": "b", "fieldPath": "x"}}]`,
			want:       []Target{{Ref: Ref{APIVersion: "kubernetes.crossplane.io/v1alpha1", Group: ClusterGroup, Kind: Kind, Name: "b"}, Index: 0, Via: "patchesFrom"}},
			wantErrs:   []string{`spec.references[0]: Invalid value: "dependsOn and patchesFrom": sets both; provider-kubernetes uses patchesFrom and ignores dependsOn`},
		},
		"NotAList": {
			reason:     "references that aren't a list are reported without their value.",
			group:      ClusterGroup,
			references: `{"dependsOn": {"name": "a"}}`,
			wantErrs:   []string{`spec.references: Invalid value: "object": must be a list of references`},
		},
		"BadEntriesSkippedOthersKept": {
			reason:     "Each bad reference is reported and skipped; the good ones are still read.",
			group:      ClusterGroup,
			references: `["shared", {}, {"dependsOn": "shared"}, {"dependsOn": {}}, {"dependsOn": {"name": 7}}, {"dependsOn": {"name": "ok", "kind": ["Object"]}}, {"dependsOn": {"apiVersion": "a/b/c", "name": "x"}}, {"dependsOn": {"name": "good"}}]`,
			want:       []Target{{Ref: Ref{APIVersion: "kubernetes.crossplane.io/v1alpha1", Group: ClusterGroup, Kind: Kind, Name: "good"}, Index: 7, Via: "dependsOn"}},
			wantErrs: []string{
				`spec.references[0]: Invalid value: "string": must be an object with dependsOn or patchesFrom`,
				`spec.references[1]: Required value: must set dependsOn or patchesFrom`,
				`spec.references[2].dependsOn: Invalid value: "string": must be an object`,
				`spec.references[3].dependsOn.name: Required value: names the referenced object`,
				`spec.references[4].dependsOn.name: Invalid value: "number": must be a string`,
				`spec.references[5].dependsOn.kind: Invalid value: "list": must be a string`,
				`spec.references[6].dependsOn.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			refs := &structpb.Value{}
			if err := protojson.Unmarshal([]byte(tc.references), refs); err != nil {
				t.Fatal(err)
			}
			got, errs := ParseReferences(tc.group, refs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nparseReferences(...): -want targets, +got:\n%s", tc.reason, diff)
			}
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, e.Error())
			}
			if diff := cmp.Diff(tc.wantErrs, gotErrs); diff != "" {
				t.Errorf("%s\nparseReferences(...): -want errors, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
