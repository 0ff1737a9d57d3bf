package protection

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

func TestComposedUsagesProtectTheEdgesTheirEndsNameOnce(t *testing.T) {
	// Resources in name order: app 0, db 1, db-copy 2 (one object under two
	// names), pc 3, web 4.
	db := composedtest.ConfigMap("db")
	twin := db
	twin.Name = "db-copy"
	resources := []composed.Resource{composedtest.ConfigMap("app"), db, twin, composedtest.Object("pc"), composedtest.ConfigMap("web")}
	labels := map[string]map[string]string{"app": {"tier": "front", "app": "shop"}, "web": {"tier": "front"}, "pc": {"role": "config"}}
	cm := func(name string) End { return End{Kind: "ConfigMap", Namespace: "team", Name: name} }
	selecting := func(namespace string, l map[string]string) End {
		return End{Kind: "ConfigMap", Namespace: namespace, Selector: true, MatchLabels: l}
	}
	cases := map[string]struct {
		reason string
		usages []Composed
		want   map[Ends]bool
	}{
		"ByName": {
			reason: "A Usage by resourceRef protects the edge between every composed resource of each end's identity, and says whether it exists.",
			usages: []Composed{{Target: cm("db"), Dependent: cm("app"), Observed: true}},
			want:   map[Ends]bool{{Dependent: 0, Target: 1}: true, {Dependent: 0, Target: 2}: true},
		},
		"NotYetObserved": {
			reason: "One the composition desires but that doesn't exist yet protects nothing yet.",
			usages: []Composed{{Target: cm("db"), Dependent: cm("web")}},
			want:   map[Ends]bool{{Dependent: 4, Target: 1}: false, {Dependent: 4, Target: 2}: false},
		},
		"AnyOneObservedWins": {
			reason: "Of two Usages of one edge, one that exists protects it.",
			usages: []Composed{{Target: cm("db"), Dependent: cm("web")}, {Target: cm("db"), Dependent: cm("web"), Observed: true}},
			want:   map[Ends]bool{{Dependent: 4, Target: 1}: true, {Dependent: 4, Target: 2}: true},
		},
		"BySelectorOfOne": {
			reason: "A selector whose labels select exactly one composed resource of its kind names it.",
			usages: []Composed{{Target: cm("db"), Dependent: selecting("team", map[string]string{"app": "shop"}), Observed: true}},
			want:   map[Ends]bool{{Dependent: 0, Target: 1}: true, {Dependent: 0, Target: 2}: true},
		},
		"BySelectorOfSeveral": {
			reason: "Where several are selected Crossplane picks one the function can't tell: the Usage protects no edge it knows of.",
			usages: []Composed{{Target: cm("db"), Dependent: selecting("team", map[string]string{"tier": "front"})}},
		},
		"SelectorInAnotherNamespace": {
			reason: "A namespaced Usage's selector looks in its namespace only.",
			usages: []Composed{{Target: cm("db"), Dependent: selecting("elsewhere", map[string]string{"app": "shop"})}},
		},
		"ClusterUsageSelectorLooksEverywhere": {
			reason: "A cluster-scoped Usage's selector looks in every namespace.",
			usages: []Composed{{Target: End{Group: object.ClusterGroup, Kind: object.Kind, Selector: true, MatchLabels: map[string]string{"role": "config"}}, Dependent: selecting("", map[string]string{"app": "shop"})}},
			want:   map[Ends]bool{{Dependent: 0, Target: 3}: false},
		},
		"OtherKind": {
			reason: "An end names a resource of its group and kind only.",
			usages: []Composed{{Target: End{Kind: "Secret", Namespace: "team", Name: "db"}, Dependent: cm("app")}},
		},
		"NoEnd": {
			reason: "An end with neither a resourceRef nor a selector names nothing.",
			usages: []Composed{{Target: End{Kind: "ConfigMap", Namespace: "team"}, Dependent: cm("app")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := composed.New(resources, composed.Options{})
			byName := Labels{}
			for name, l := range labels {
				byName[name] = []map[string]string{nil, l}
			}
			got := ComposedEdges(g, tc.usages, byName)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nComposedEdges(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// body is a Usage as read, from its map.
type body map[string]any

func (b body) Value(path ...string) any {
	var v any = map[string]any(b)
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func TestAComposedUsagesEndsAreWhereCrossplanesUsageControllerLooks(t *testing.T) {
	usage := func(kind string) composed.Resource {
		return composed.Resource{Name: "u", Identity: object.Ref{Group: protectionGroup, Kind: kind, Namespace: "team", Name: "u"}, Desired: &composed.Desired{}}
	}
	spec := func(of, by map[string]any) body { return body{"spec": map[string]any{"of": of, "by": by}} }
	named := func(name, namespace string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": map[string]any{"name": name, "namespace": namespace}}
	}
	selecting := func(namespace string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "resourceSelector": map[string]any{"namespace": namespace, "matchLabels": map[string]any{"app": "shop"}}}
	}
	shop := map[string]string{"app": "shop"}
	cases := map[string]struct {
		reason string
		u      body
		r      composed.Resource
		want   Composed
	}{
		"NamespacedByName": {
			reason: "A namespaced Usage's ends are in its namespace, but for a spec.of that names another.",
			u:      spec(named("db", "data"), named("app", "elsewhere")),
			r:      usage("Usage"),
			want:   Composed{Target: End{Kind: "ConfigMap", Namespace: "data", Name: "db", MatchLabels: map[string]string{}}, Dependent: End{Kind: "ConfigMap", Namespace: "team", Name: "app", MatchLabels: map[string]string{}}},
		},
		"NamespacedBySelector": {
			reason: "A namespaced Usage's selector of spec.of looks in the namespace it says, else in the Usage's.",
			u:      spec(selecting("data"), selecting("")),
			r:      usage("Usage"),
			want:   Composed{Target: End{Kind: "ConfigMap", Namespace: "data", Selector: true, MatchLabels: shop}, Dependent: End{Kind: "ConfigMap", Namespace: "team", Selector: true, MatchLabels: shop}},
		},
		"ClusterScoped": {
			reason: "A ClusterUsage's ends have no namespace: its selectors look in every namespace.",
			u:      spec(named("db", "data"), selecting("data")),
			r:      composedtest.With(usage("ClusterUsage"), func(r *composed.Resource) { r.Observed = &composed.Observed{} }),
			want:   Composed{Target: End{Kind: "ConfigMap", Name: "db", MatchLabels: map[string]string{}}, Dependent: End{Kind: "ConfigMap", Selector: true, MatchLabels: shop}, Observed: true},
		},
		"InvalidAPIVersion": {
			reason: "An end of an invalid apiVersion has no kind, so that it names nothing.",
			u:      spec(map[string]any{"apiVersion": "a/b/c", "kind": "ConfigMap", "resourceRef": map[string]any{"name": "db"}}, named("app", "")),
			r:      usage("Usage"),
			want:   Composed{Target: End{Namespace: "team", Name: "db", MatchLabels: map[string]string{}}, Dependent: End{Kind: "ConfigMap", Namespace: "team", Name: "app", MatchLabels: map[string]string{}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ReadComposed(tc.u, tc.r)); diff != "" {
				t.Errorf("%s\nReadComposed(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAUsageOfTheFunctionIsUsedByWhatItsSpecBySays(t *testing.T) {
	u := body{"metadata": map[string]any{"namespace": "team"}, "spec": map[string]any{"by": map[string]any{"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object", "resourceRef": map[string]any{"name": "app"}}}}
	got, ok := UsedBy(u)
	want := object.Ref{APIVersion: "kubernetes.m.crossplane.io/v1alpha1", Group: "kubernetes.m.crossplane.io", Kind: "Object", Namespace: "team", Name: "app"}
	if diff := cmp.Diff(want, got); diff != "" || !ok {
		t.Errorf("UsedBy(...) = _, %t: -want, +got:\n%s", ok, diff)
	}
	u["spec"].(map[string]any)["by"].(map[string]any)["apiVersion"] = "a/b/c"
	if _, ok := UsedBy(u); ok {
		t.Error("UsedBy(...) of an invalid apiVersion = _, true, want false: it names nothing to ask for")
	}
}
