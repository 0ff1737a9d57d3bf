package view

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// example is a plan with one edge in every state, a held-back resource and
// an external dependency.
func example() (protection.Plan, []protection.Resource) {
	observed := &protection.Observed{UID: "u", Ready: true}
	resources := []protection.Resource{
		{Name: "namespace", Identity: protection.Identity{Kind: "Object"}, Observed: observed, Desired: &protection.Desired{}},
		{Name: "config", Identity: protection.Identity{Kind: "Object"}, Observed: observed, Desired: &protection.Desired{}},
		{Name: "web", Identity: protection.Identity{Kind: "Object"}, Observed: &protection.Observed{UID: "w"}, Desired: &protection.Desired{}},
		{Name: "old", Identity: protection.Identity{Kind: "Object"}, Observed: &protection.Observed{UID: "o", Deleting: true}},
		{Name: "job", Identity: protection.Identity{Kind: "Job", Namespace: "team"}, Desired: &protection.Desired{}},
	}
	plan := protection.Plan{
		Edges: []protection.Edge{
			{Dependent: "config", Target: "namespace", State: protection.Protected},
			{Dependent: "web", Target: "namespace", State: protection.Declared},
			{Dependent: "web", Target: "config", State: protection.TargetDeleting},
			{Dependent: "old", Target: "namespace", State: protection.Releasing},
			{Dependent: "job", Target: "web", Origin: protection.FromInput, Protection: protection.Unprotected, State: protection.Exposed},
		},
		External: []protection.External{{Dependent: "web", Target: objectref.Target{Kind: "Secret", Namespace: "vault", Name: "token"}, Protection: protection.ByUsage, Usage: "usage-web-secret-vault-token", State: protection.Declared}},
		HeldBack: map[string]string{"job": "waits for web to be ready"},
	}
	return plan, resources
}

func TestOf(t *testing.T) {
	plan, resources := example()
	got := Of(plan, resources, true)
	want := Graph{
		Nodes: []Node{
			{Name: "Secret/vault/token", Kind: "Secret", Scope: "Namespaced", State: "external"},
			{Name: "config", Kind: "Object", Scope: "Cluster", State: "ready"},
			{Name: "job", Kind: "Job", Scope: "Namespaced", State: "held"},
			{Name: "namespace", Kind: "Object", Scope: "Cluster", State: "ready"},
			{Name: "old", Kind: "Object", Scope: "Cluster", State: "deleting"},
			{Name: "web", Kind: "Object", Scope: "Cluster", State: "observed"},
		},
		Edges: []Edge{
			{From: "config", To: "namespace", Origin: "reference", Protection: "finalizer", State: "protected"},
			{From: "job", To: "web", Origin: "explicit", Protection: "none", State: "missing"},
			{From: "old", To: "namespace", Origin: "reference", Protection: "finalizer", State: "stale"},
			{From: "web", To: "Secret/vault/token", Origin: "reference", Protection: "usage", State: "pending"},
			{From: "web", To: "config", Origin: "reference", Protection: "finalizer", State: "missing"},
			{From: "web", To: "namespace", Origin: "reference", Protection: "finalizer", State: "pending"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Of(...): -want, +got:\n%s", diff)
	}
	// In Report mode nothing is declared: what Enforce would declare is missing.
	if s := Of(plan, resources, false).Edges[5].State; s != "missing" {
		t.Errorf("Of(..., enforce=false): web → namespace is %q, want missing", s)
	}
}

func TestDrawings(t *testing.T) {
	plan, resources := example()
	g := Of(plan, resources, true)
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

// TestSortWithFewAfter checks the merge against a stable sort on random
// slices: parts sorted or not, of any lengths, with equal keys, of which those
// of the first part must stay first.
func TestSortWithFewAfter(t *testing.T) {
	type element struct{ key, part, index int }
	byKey := func(a, b element) int { return a.key - b.key }
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n, few := rng.IntN(20), rng.IntN(5)
		var s []element
		for i := range n + few {
			part := 0
			if i >= n {
				part = 1
			}
			s = append(s, element{key: rng.IntN(10), part: part, index: i})
		}
		if rng.IntN(2) == 0 {
			slices.SortStableFunc(s[:n], byKey)
		}
		want := slices.Clone(s)
		slices.SortStableFunc(want[:n], byKey)
		slices.SortStableFunc(want[n:], byKey)
		slices.SortStableFunc(want, byKey)
		got := slices.Clone(s)
		sortWithFewAfter(got, n, byKey)
		if !slices.Equal(got, want) {
			t.Fatalf("sortWithFewAfter(%v, %d):\ngot  %v\nwant %v", s, n, got, want)
		}
	}
}
