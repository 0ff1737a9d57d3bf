package explicit

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

func TestResolve(t *testing.T) {
	names := []string{"app-api", "app-web", "app.db", "appXdb", "namespace", "config"}
	cases := map[string]struct {
		reason        string
		rules         []Rule
		want          map[string][]string
		wantUnmatched []Unmatched
	}{
		"Names": {
			reason: "Plain names name one resource each.",
			rules:  []Rule{{Resource: "app-api", DependsOn: []string{"namespace", "config"}}},
			want:   map[string][]string{"app-api": {"config", "namespace"}},
		},
		"NameBeatsPattern": {
			reason: "An entry that is a name means that name, although as a pattern its dot would match appXdb too.",
			rules:  []Rule{{Resource: "app.db", DependsOn: []string{"namespace"}}},
			want:   map[string][]string{"app.db": {"namespace"}},
		},
		"AnchoredPatterns": {
			reason:        "Patterns match whole names: app-.* doesn't match namespace, and a fan-out is one rule.",
			rules:         []Rule{{Resource: "app-.*", DependsOn: []string{"name.*", "conf"}}},
			want:          map[string][]string{"app-api": {"namespace"}, "app-web": {"namespace"}},
			wantUnmatched: []Unmatched{{Field: "dependencies[0].dependsOn[1]", Pattern: "conf"}},
		},
		"NoSelfOrRepeats": {
			reason: "A pattern that matches the dependent itself adds no edge to itself; rules that repeat an edge add it once.",
			rules: []Rule{
				{Resource: "app-.*", DependsOn: []string{"app-api"}},
				{Resource: "app-web", DependsOn: []string{"app-api", "app-a.i"}},
			},
			want: map[string][]string{"app-web": {"app-api"}},
		},
		"QuotedPattern": {
			reason: `A pattern is compiled as v1beta1.Pattern compiles it: \Qapp.\E.* quotes its dot, so it matches app.db and not appXdb.`,
			rules:  []Rule{{Resource: `\Qapp.\E.*`, DependsOn: []string{"namespace"}}},
			want:   map[string][]string{"app.db": {"namespace"}},
		},
		"UnmatchedDependent": {
			reason:        "A dependent that matches nothing is reported too.",
			rules:         []Rule{{Resource: "gone", DependsOn: []string{"config"}}},
			want:          map[string][]string{},
			wantUnmatched: []Unmatched{{Field: "dependencies[0].resource", Pattern: "gone"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, unmatched, err := Resolve(tc.rules, names)
			if err != nil {
				t.Fatalf("%s\nResolve(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nResolve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantUnmatched, unmatched); diff != "" {
				t.Errorf("%s\nResolve(...): -want unmatched, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestResolveRefusesRulesPairingMoreThanMaxPairs(t *testing.T) {
	names := make([]string, 400)
	for i := range names {
		names[i] = fmt.Sprintf("r-%03d", i)
	}
	// 300 × 300 fits, alone; the match-all rule after it adds 400 × 400.
	rules := []Rule{{Resource: "r-[0-2].*", DependsOn: []string{"r-[0-2].*"}}, {Resource: ".*", DependsOn: []string{".*"}}}
	if _, _, err := Resolve(rules[:1], names); err != nil {
		t.Fatalf("Resolve(300 × 300): %v, want the 90,000 pairs under the bound", err)
	}
	_, _, err := Resolve(rules, names)
	want := "dependencies[1] pairs 400 resources with 400 dependencies, which makes 250000 pairs with the rules before it, more than the 100000 one input may declare: name the resources, or narrow the patterns"
	if err == nil || err.Error() != want {
		t.Errorf("Resolve(300 × 300, then 400 × 400):\ngot  %v\nwant %s", err, want)
	}
}

// obj is a live Object, as composedtest makes it, that depends on the
// composed resources by the input's word.
func obj(name string, dependsOn ...string) composed.Resource {
	return composedtest.With(composedtest.Object(name), composedtest.DependingOn(dependsOn...))
}

func TestReferencingWritesAReferencePerInputDependencyOfADesiredObject(t *testing.T) {
	shared := object.Ref{APIVersion: "kubernetes.crossplane.io/v1alpha2", Group: object.ClusterGroup, Kind: "Object", Name: "shared"}
	type args struct {
		resources []composed.Resource
		o         composed.Options
	}
	cases := map[string]struct {
		reason string
		args   args
		want   References
	}{
		"ExplicitObject": {
			reason: "An Object that depends on a resource by the input's word gets a dependsOn for it, new while the observed Object lacks it.",
			args:   args{resources: []composed.Resource{obj("shared"), obj("d1", "shared")}},
			want:   References{Write: map[string][]object.Ref{"d1": {shared}}, New: map[string]bool{"d1": true}},
		},
		"OnlyBetweenObjects": {
			reason: "An Object's dependency is written in the order of its edges, and only on what provider-kubernetes can read and update by default: an Object, a ConfigMap, not a Release, for which it would need access it lacks.",
			args: args{resources: []composed.Resource{
				obj("shared"),
				{Name: "cm", APIVersion: "v1", Identity: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: "settings"}, Observed: &composed.Observed{UID: "uid-cm"}, Desired: &composed.Desired{}},
				{Name: "chart", APIVersion: "helm.crossplane.io/v1beta1", Identity: object.Ref{Group: "helm.crossplane.io", Kind: "Release", Name: "chart"}, Observed: &composed.Observed{UID: "uid-chart"}, Desired: &composed.Desired{}},
				obj("d1", "shared", "cm", "chart"),
			}},
			want: References{
				Write: map[string][]object.Ref{"d1": {{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: "settings"}, shared}},
				New:   map[string]bool{"d1": true},
			},
		},
		"NoneOnACycle": {
			reason: "With onCycle: Warning, no dependsOn is written on an edge of a cycle, here one the input closes with an Object's own reference: the provider would wait on both sides to create.",
			args: args{
				resources: []composed.Resource{
					composedtest.With(obj("config", "deploy"), composedtest.Referencing()),
					composedtest.With(obj("deploy"), composedtest.Referencing(composedtest.ClusterObject("config"))),
					obj("other", "config"),
				},
				o: composed.Options{BreakCycles: true},
			},
			want: References{
				Write: map[string][]object.Ref{"other": {{APIVersion: "kubernetes.crossplane.io/v1alpha2", Group: object.ClusterGroup, Kind: "Object", Name: "config"}}},
				New:   map[string]bool{"other": true},
			},
		},
		"ObservedAlready": {
			reason: "A reference the observed Object carries already is written again, since desired state is built afresh, but changes nothing.",
			args:   args{resources: []composed.Resource{obj("shared"), composedtest.With(obj("d1", "shared"), composedtest.CarryingReferences("shared"))}},
			want:   References{Write: map[string][]object.Ref{"d1": {shared}}},
		},
		"NotCreatedYet": {
			reason: "An Object that doesn't exist yet lacks every reference.",
			args:   args{resources: []composed.Resource{obj("shared"), composedtest.With(obj("d1", "shared"), composedtest.NotObserved)}},
			want:   References{Write: map[string][]object.Ref{"d1": {shared}}, New: map[string]bool{"d1": true}},
		},
		"OneNewReferenceMakesTheObjectNew": {
			reason: "An Object that carries some of its references but not all changes.",
			args: args{resources: []composed.Resource{
				obj("shared"), obj("other"),
				composedtest.With(obj("d1", "shared", "other"), composedtest.CarryingReferences("shared")),
			}},
			want: References{
				Write: map[string][]object.Ref{"d1": {{APIVersion: "kubernetes.crossplane.io/v1alpha2", Group: object.ClusterGroup, Kind: "Object", Name: "other"}, shared}},
				New:   map[string]bool{"d1": true},
			},
		},
		"ExplicitAlreadyReferenced": {
			reason: "A dependency the Object already references adds no reference.",
			args:   args{resources: []composed.Resource{obj("shared"), composedtest.With(obj("d1", "shared"), composedtest.Referencing(composedtest.ClusterObject("shared")))}},
		},
		"IgnoredReferencesStillStopADuplicate": {
			reason: "With references ignored, a dependency the Object already references makes an edge of the input, but no second reference.",
			args: args{
				resources: []composed.Resource{obj("shared"), composedtest.With(obj("d1", "shared"), composedtest.Referencing(composedtest.ClusterObject("shared")))},
				o:         composed.Options{IgnoreReferences: true},
			},
		},
		"OneReferenceForTwoVersionsOfAnObject": {
			reason: "Two composed resources for one object, in two versions, get one dependsOn, in the version of the first: the provider finds the object whatever the version.",
			args: args{resources: []composed.Resource{
				composedtest.With(obj("shared-a"), func(r *composed.Resource) { r.Identity.Name = "shared" }),
				composedtest.With(obj("shared-b"), func(r *composed.Resource) {
					r.Identity.Name = "shared"
					r.APIVersion = "kubernetes.crossplane.io/v1alpha1"
				}),
				obj("d1", "shared-a", "shared-b"),
			}},
			want: References{Write: map[string][]object.Ref{"d1": {shared}}, New: map[string]bool{"d1": true}},
		},
		"ExplicitDependencyNotNamed": {
			reason: "A dependency without a name yet can't be referenced: it is unnamed for each Object, whether it exists or not (holding back is the order's to decide).",
			args: args{resources: []composed.Resource{
				composedtest.With(obj("shared"), composedtest.NotObserved, composedtest.Unnamed),
				composedtest.With(obj("new", "shared"), composedtest.NotObserved),
				obj("old", "shared"),
			}},
			want: References{Unnamed: map[string][]string{"new": {"shared"}, "old": {"shared"}}},
		},
		"NotAnObject": {
			reason: "A resource that is not an Object has no spec.references to write.",
			args: args{resources: []composed.Resource{
				obj("shared"),
				{Name: "app", APIVersion: "v1", Identity: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: "app"}, Desired: &composed.Desired{}, DependsOn: []string{"shared"}},
			}},
		},
		"NotDesired": {
			reason: "An Object the composition no longer desires has no desired state to write into.",
			args:   args{resources: []composed.Resource{obj("shared"), composedtest.With(obj("d1", "shared"), composedtest.NotDesired)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Referencing(composed.New(tc.args.resources, tc.args.o))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nReferencing(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
