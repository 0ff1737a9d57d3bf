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
	// The label tells the function its own Usages when it observes them.
	labels := map[string]any{Label: "true"}
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
			want: map[string]any{"apiVersion": ProtectionAPI, "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "namespace": "team", "labels": labels}, "spec": spec(ref(cm, false), deploy)},
		},
		"OtherNamespace": {
			reason: "A dependency in another namespace is named with its namespace, which a Usage with a by allows.",
			api:    ProtectionAPI, edge: edge(deploy, other),
			want: map[string]any{"apiVersion": ProtectionAPI, "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "namespace": "team", "labels": labels}, "spec": spec(ref(other, true), deploy)},
		},
		"ClusterScoped": {
			reason: "Two cluster-scoped resources get a ClusterUsage.",
			api:    ProtectionAPI, edge: edge(role, bucket),
			want: map[string]any{"apiVersion": ProtectionAPI, "kind": "ClusterUsage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "labels": labels}, "spec": spec(ref(bucket, false), role)},
		},
		"CrossplaneV1": {
			reason: "Crossplane v1's Usage is cluster-scoped.",
			api:    ApiextensionsAPI, edge: edge(role, bucket),
			want: map[string]any{"apiVersion": ApiextensionsAPI, "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "labels": labels}, "spec": spec(ref(bucket, false), role)},
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

// TestKeysAreUniquePerEdge proves that no two edges share a Usage's
// composition resource name, whatever dashes their names hold: the edges
// a → b-c and a-b → c once both got usage-a-b-c, and one Usage replaced the
// other.
func TestKeysAreUniquePerEdge(t *testing.T) {
	keys := map[string]string{}
	add := func(edge, key string) {
		t.Helper()
		if other, taken := keys[key]; taken {
			t.Errorf("edges %s and %s share the key %q", other, edge, key)
		}
		keys[key] = edge
	}
	for _, e := range [][2]string{{"a", "b-c"}, {"a-b", "c"}, {"a-b-c", ""}, {"", "a-b-c"}, {"a", "b"}, {"1-a", "b"}, {"1", "a-b"}} {
		add(e[0]+" → "+e[1], Key(e[0], e[1]))
	}
	for _, x := range [][5]string{
		{"a", "", "Secret", "b", "c"}, {"a", "", "Secret", "b-c", ""}, {"a-b", "", "Secret", "", "c"},
		{"a", "x.io", "Secret", "b", "c"}, {"a", "", "Secret.x", "io", "c"}, {"a", "", "Secret", "", "b-c"},
	} {
		add(x[0]+" → external "+strings.Join(x[1:], "/"), ExternalKey(x[0], x[1], x[2], x[3], x[4]))
	}
	// A composed dependency named like an external object's key part.
	add("a → secret./b/c", Key("a", "secret./b/c"))
}

// TestKeysFollowTheirRule pins the keys by their rule, so that a change to
// it, which renames every Usage a composite has, is a visible decision.
func TestKeysFollowTheirRule(t *testing.T) {
	if got, want := Key("app", "db"), "usage-3-app-db"; got != want {
		t.Errorf("Key(app, db) = %q, want %q: usage-, the dependent's length, then both names", got, want)
	}
	if got, want := ExternalKey("app", "", "Secret", "vault", "token"), "usage-3x-app-secret./vault/token"; got != want {
		t.Errorf("ExternalKey(...) = %q, want %q: usage-, the dependent's length and x, then kind.group/namespace/name", got, want)
	}
}
