package object

import (
	"testing"
)

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
