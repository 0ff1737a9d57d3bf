package explicit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
			got, unmatched := Resolve(tc.rules, names)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nResolve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantUnmatched, unmatched); diff != "" {
				t.Errorf("%s\nResolve(...): -want unmatched, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
