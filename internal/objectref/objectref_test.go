package objectref

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestParse(t *testing.T) {
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
			got, errs := Parse(tc.group, refs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nParse(...): -want targets, +got:\n%s", tc.reason, diff)
			}
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, e.Error())
			}
			if diff := cmp.Diff(tc.wantErrs, gotErrs); diff != "" {
				t.Errorf("%s\nParse(...): -want errors, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestFinalizerRoundTrip(t *testing.T) {
	f := Finalizer("d74a5845-2645-4931-9f7a-868814c1edb8")
	if f != "kubernetes.crossplane.io/referred-by-object-d74a5845-2645-4931-9f7a-868814c1edb8" {
		t.Errorf("Finalizer(...) = %q, not provider-kubernetes's name", f)
	}
	if uid, ok := UIDOf(f); !ok || uid != "d74a5845-2645-4931-9f7a-868814c1edb8" {
		t.Errorf("UIDOf(%q) = %q, %t", f, uid, ok)
	}
	if _, ok := UIDOf(ObjectFinalizer); ok {
		t.Errorf("UIDOf(%q) says it is a reference finalizer", ObjectFinalizer)
	}
}

func TestIsObject(t *testing.T) {
	for _, c := range []struct {
		group, kind string
		want        bool
	}{
		{ClusterGroup, "Object", true},
		{NamespacedGroup, "Object", true},
		{ClusterGroup, "ProviderConfig", false},
		{"", "Object", false},
		{"example.org", "Object", false},
	} {
		if got := IsObject(c.group, c.kind); got != c.want {
			t.Errorf("IsObject(%q, %q) = %t, want %t", c.group, c.kind, got, c.want)
		}
	}
}

func TestRef(t *testing.T) {
	cases := map[string]struct {
		ref          Ref
		string, path string
	}{
		"Namespaced": {
			ref:    Ref{APIVersion: "v1", Kind: "Secret", Namespace: "vault", Name: "token"},
			string: "Secret vault/token", path: "Secret/vault/token",
		},
		"ClusterScopedOfAGroup": {
			ref:    Ref{APIVersion: ClusterGroup + "/v1alpha2", Group: ClusterGroup, Kind: Kind, Name: "shared"},
			string: "Object.kubernetes.crossplane.io shared", path: "Object/shared",
		},
		"NamespacedOfAGroup": {
			ref:    Ref{Group: NamespacedGroup, Kind: Kind, Namespace: "team", Name: "web"},
			string: "Object.kubernetes.m.crossplane.io team/web", path: "Object/team/web",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.ref.String(); got != tc.string {
				t.Errorf("String() = %q, want %q: kind.group, then namespace/name", got, tc.string)
			}
			if got := tc.ref.Path(); got != tc.path {
				t.Errorf("Path() = %q, want %q: kind/namespace/name, without what is empty", got, tc.path)
			}
			other := tc.ref
			other.APIVersion = "example.org/v9"
			if tc.ref.ID() != other.ID() || tc.ref.ID().APIVersion != "" {
				t.Errorf("ID() of %+v = %+v, and of another version %+v: want one identity, without apiVersion", tc.ref, tc.ref.ID(), other.ID())
			}
			if id := tc.ref.ID(); id.String() != tc.string {
				t.Errorf("ID() prints %q, want %q: the identity prints as the object", id.String(), tc.string)
			}
		})
	}
}
