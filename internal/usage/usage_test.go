package usage

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var xr = Ref{APIVersion: "example.org/v1", Kind: "App", Namespace: "team", Name: "shop"}

func TestWrite(t *testing.T) {
	cm := Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: "settings"}
	other := Ref{APIVersion: "v1", Kind: "Secret", Namespace: "vault", Name: "token"}
	deploy := Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	bucket := Ref{APIVersion: "s3.aws.upbound.io/v1beta1", Kind: "Bucket", Name: "assets"}
	role := Ref{APIVersion: "iam.aws.upbound.io/v1beta1", Kind: "Role", Name: "writer"}
	edge := func(by, of Ref) Edge {
		return Edge{Key: "usage-a-b", Dependent: "a", Dependency: "b", By: by, Of: of}
	}
	spec := func(of map[string]any, by Ref) map[string]any {
		return map[string]any{"of": of, "by": ref(by, false), "reason": "a depends on b (function-dependencies)", "replayDeletion": true}
	}
	cases := map[string]struct {
		reason  string
		api     string
		edge    Edge
		want    map[string]any
		problem string
	}{
		"SameNamespace": {
			reason: "Two resources in one namespace get a namespaced Usage there, with references in its namespace.",
			api:    ProtectionAPI, edge: edge(deploy, cm),
			want: map[string]any{"apiVersion": ProtectionAPI, "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "namespace": "team"}, "spec": spec(ref(cm, false), deploy)},
		},
		"OtherNamespace": {
			reason: "A dependency in another namespace is named with its namespace, which a Usage with a by allows.",
			api:    ProtectionAPI, edge: edge(deploy, other),
			want: map[string]any{"apiVersion": ProtectionAPI, "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "namespace": "team"}, "spec": spec(ref(other, true), deploy)},
		},
		"ClusterScoped": {
			reason: "Two cluster-scoped resources get a ClusterUsage.",
			api:    ProtectionAPI, edge: edge(role, bucket),
			want: map[string]any{"apiVersion": ProtectionAPI, "kind": "ClusterUsage", "metadata": map[string]any{"name": name(xr, "usage-a-b")}, "spec": spec(ref(bucket, false), role)},
		},
		"CrossplaneV1": {
			reason: "Crossplane v1's Usage is cluster-scoped.",
			api:    ApiextensionsAPI, edge: edge(role, bucket),
			want: map[string]any{"apiVersion": ApiextensionsAPI, "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b")}, "spec": spec(ref(bucket, false), role)},
		},
		"NamespacedOfCluster": {
			reason: "No Usage lets a namespaced resource use a cluster-scoped one: say so rather than emit one that protects nothing.",
			api:    ProtectionAPI, edge: edge(deploy, bucket),
			problem: "the dependent is namespaced and the dependency is cluster-scoped: a namespaced Usage can't refer to a cluster-scoped Bucket, and a ClusterUsage can't refer to a namespaced Deployment",
		},
		"ClusterOfNamespaced": {
			reason: "Nor a cluster-scoped resource use a namespaced one.",
			api:    ProtectionAPI, edge: edge(role, cm),
			problem: "the dependent is cluster-scoped and the dependency is namespaced: a ClusterUsage can't refer to a namespaced ConfigMap, and a namespaced Usage can't be used by a cluster-scoped Role",
		},
		"CrossplaneV1Namespaced": {
			reason: "Crossplane v1's Usage can't protect namespaced resources.",
			api:    ApiextensionsAPI, edge: edge(deploy, cm),
			problem: "apiextensions.crossplane.io/v1beta1 Usages protect cluster-scoped resources only",
		},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			usages, problems := Write(tc.api, xr, []Edge{tc.edge})
			var want map[string]map[string]any
			if tc.want != nil {
				want = map[string]map[string]any{"usage-a-b": tc.want}
			}
			if diff := cmp.Diff(want, usages, cmpEmpty); diff != "" {
				t.Errorf("%s\nWrite(...): -want, +got:\n%s", tc.reason, diff)
			}
			var problem string
			if len(problems) > 0 {
				problem = problems[0].Reason
			}
			if problem != tc.problem {
				t.Errorf("%s\nWrite(...) problem = %q, want %q", tc.reason, problem, tc.problem)
			}
		})
	}
}

var cmpEmpty = cmp.FilterValues(func(a, b map[string]map[string]any) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestName(t *testing.T) {
	long := "usage-" + strings.Repeat("very-long-dependent-name-", 5) + "shared"
	n := name(xr, long)
	if len(n) > maxName {
		t.Errorf("name(...) is %d characters, more than %d: %q", len(n), maxName, n)
	}
	if n != name(xr, long) {
		t.Error("name(...) differs for the same key")
	}
	if n == name(Ref{APIVersion: xr.APIVersion, Kind: xr.Kind, Namespace: xr.Namespace, Name: "other"}, long) {
		t.Error("two composites' Usages of the same edge share a name")
	}
	if got := name(xr, "usage-Web_1-db"); !strings.HasPrefix(got, "usage-web-1-db-") || len(got) != len("usage-web-1-db-")+8 {
		t.Errorf("name(...) = %q, want usage-web-1-db- and 8 hex digits", got)
	}
}
