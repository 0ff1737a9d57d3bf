package view

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// obj is a live Object the provider manages, cluster-scoped unless a
// namespace is given, named as its composition resource, that references
// the targets.
func obj(name, namespace string, references ...object.Target) composed.Resource {
	group := object.ClusterGroup
	if namespace != "" {
		group = object.NamespacedGroup
	}
	return composed.Resource{
		Name: name, APIVersion: group + "/v1alpha1", IsObject: true,
		Identity:   object.Ref{Group: group, Kind: object.Kind, Namespace: namespace, Name: name},
		Observed:   &composed.Observed{UID: "uid-" + name, Finalizers: []string{object.ObjectFinalizer}},
		Desired:    &composed.Desired{},
		References: references,
	}
}

// to is a reference to the cluster-scoped Object of the name.
func to(name string) object.Target {
	return object.Target{Ref: object.Ref{APIVersion: "kubernetes.crossplane.io/v1alpha1", Group: object.ClusterGroup, Kind: object.Kind, Name: name}, Via: "dependsOn"}
}

func f(name string) string { return object.Finalizer("uid-" + name) }

// example is a composition with an edge in every state, each protection,
// a resource in every state, a held-back one and an external dependency, as
// the rules decide it: with Usages of external objects.
func example() (*composed.Graph, []report.Edge, []report.External, map[string]string) {
	namespace := obj("namespace", "")
	namespace.Observed.Ready = true
	// It carries the finalizers of config, and of old, which it releases.
	namespace.Observed.Finalizers = []string{f("config"), f("old")}
	config := obj("config", "", to("namespace"))
	config.Observed.Ready = true
	web := obj("web", "team", to("namespace"), to("cert"), object.Target{Ref: object.Ref{APIVersion: "v1", Kind: "Secret", Namespace: "vault", Name: "token"}, Via: "dependsOn"})
	cert := obj("cert", "")
	cert.Observed.Deleting = true
	old := obj("old", "", to("namespace"))
	old.Observed.Deleting, old.Desired = true, nil
	resources := []composed.Resource{
		namespace, config, web, cert, old,
		{Name: "job", Identity: object.Ref{Kind: "Job", Namespace: "team", Name: "job"}, Desired: &composed.Desired{}, DependsOn: []string{"web"}},
		{Name: "cache", Identity: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: "cache"}, Desired: &composed.Desired{}},
		{Name: "legacy", Identity: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: "legacy"}, Observed: &composed.Observed{UID: "uid-legacy"}},
	}
	g := composed.New(resources, composed.Options{})
	p := protection.Decide(g, protection.Options{Policy: protection.Every, API: protection.Protection, Owner: object.Ref{APIVersion: "example.org/v1", Kind: "App", Name: "shop"}})
	edges, external := report.EdgesOf(g, p)
	return g, edges, external, map[string]string{"job": "waits for web to be ready"}
}

func TestOfShowsTheGraphAsTheReportSeesIt(t *testing.T) {
	g, edges, external, held := example()
	want := Graph{
		Nodes: []Node{
			{Name: "Secret/vault/token", Kind: "Secret", Scope: "Namespaced", State: "external"},
			{Name: "cache", Kind: "ConfigMap", Scope: "Namespaced", State: "creating"},
			{Name: "cert", Kind: "Object", Scope: "Cluster", State: "deleting"},
			{Name: "config", Kind: "Object", Scope: "Cluster", State: "ready"},
			{Name: "job", Kind: "Job", Scope: "Namespaced", State: "held"},
			{Name: "legacy", Kind: "ConfigMap", Scope: "Namespaced", State: "removing"},
			{Name: "namespace", Kind: "Object", Scope: "Cluster", State: "ready"},
			{Name: "old", Kind: "Object", Scope: "Cluster", State: "deleting"},
			{Name: "web", Kind: "Object", Scope: "Namespaced", State: "observed"},
		},
		Edges: []Edge{
			{Dependent: "config", Target: "namespace", Origin: "reference", Protection: "finalizer", State: "protected"},
			{Dependent: "job", Target: "web", Origin: "explicit", Protection: "usage", State: "pending"},
			{Dependent: "old", Target: "namespace", Origin: "reference", Protection: "finalizer", State: "stale"},
			{Dependent: "web", Target: "Secret/vault/token", Origin: "reference", Protection: "usage", State: "pending"},
			{Dependent: "web", Target: "cert", Origin: "reference", Protection: "finalizer", State: "missing"},
			{Dependent: "web", Target: "namespace", Origin: "reference", Protection: "finalizer", State: "pending"},
		},
	}
	if diff := cmp.Diff(want, Of(g, edges, external, held, true)); diff != "" {
		t.Errorf("Of(..., enforce=true): -want, +got:\n%s", diff)
	}
	// In Report mode nothing is declared: what Enforce would declare is
	// missing, the finalizer's and the Usage's alike.
	want.Edges[3].State, want.Edges[5].State = "missing", "missing"
	if diff := cmp.Diff(want, Of(g, edges, external, held, false)); diff != "" {
		t.Errorf("Of(..., enforce=false): -want, +got:\n%s", diff)
	}
}

// TestOfPutsAnExternalNodeAfterAComposedOneOfItsName proves that an object
// outside the composition named like a composed resource comes after it, as
// do its edges.
func TestOfPutsAnExternalNodeAfterAComposedOneOfItsName(t *testing.T) {
	twin := obj("Object/twin", "")
	twin.Identity.Name = "other"
	d := obj("d", "", to("twin"), to("other"))
	g := composed.New([]composed.Resource{d, twin}, composed.Options{})
	edges, external := report.EdgesOf(g, protection.Decide(g, protection.Options{}))
	want := Graph{
		Nodes: []Node{
			{Name: "Object/twin", Kind: "Object", Scope: "Cluster", State: "observed"},
			{Name: "Object/twin", Kind: "Object", Scope: "Cluster", State: "external"},
			{Name: "d", Kind: "Object", Scope: "Cluster", State: "observed"},
		},
		Edges: []Edge{
			{Dependent: "d", Target: "Object/twin", Origin: "reference", Protection: "finalizer", State: "pending"},
			{Dependent: "d", Target: "Object/twin", Origin: "reference", Protection: "none", State: "missing"},
		},
	}
	if diff := cmp.Diff(want, Of(g, edges, external, nil, true)); diff != "" {
		t.Errorf("Of(...): -want, +got:\n%s", diff)
	}
}

// drawn is the graph the golden files draw: one edge in every state, a
// held-back resource and an external dependency.
func drawn() Graph {
	return Graph{
		Nodes: []Node{
			{Name: "Secret/vault/token", Kind: "Secret", Scope: "Namespaced", State: "external"},
			{Name: "config", Kind: "Object", Scope: "Cluster", State: "ready"},
			{Name: "job", Kind: "Job", Scope: "Namespaced", State: "held"},
			{Name: "namespace", Kind: "Object", Scope: "Cluster", State: "ready"},
			{Name: "old", Kind: "Object", Scope: "Cluster", State: "deleting"},
			{Name: "web", Kind: "Object", Scope: "Cluster", State: "observed"},
		},
		Edges: []Edge{
			{Dependent: "config", Target: "namespace", Origin: "reference", Protection: "finalizer", State: "protected"},
			{Dependent: "job", Target: "web", Origin: "explicit", Protection: "none", State: "missing"},
			{Dependent: "old", Target: "namespace", Origin: "reference", Protection: "finalizer", State: "stale"},
			{Dependent: "web", Target: "Secret/vault/token", Origin: "reference", Protection: "usage", State: "pending"},
			{Dependent: "web", Target: "config", Origin: "reference", Protection: "finalizer", State: "missing"},
			{Dependent: "web", Target: "namespace", Origin: "reference", Protection: "finalizer", State: "pending"},
			{Dependent: "web", Target: "old", Origin: "reference", Protection: "finalizer", State: Unjudged},
		},
	}
}

func TestDrawingsMatchTheGoldenFiles(t *testing.T) {
	g := drawn()
	for file, draw := range map[string]func(Graph) string{"example.mmd": Mermaid, "example.dot": DOT} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata", file)
			got := draw(g)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path) //nolint:gosec // A golden file of this package.
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s: -want, +got (go test -update rewrites it):\n%s", file, diff)
			}
		})
	}
}
