package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

func edge(d, t string, s protection.EdgeState) protection.Edge {
	return protection.Edge{Dependent: d, Target: t, State: s}
}

func TestCondition(t *testing.T) {
	cases := map[string]struct {
		reason string
		facts  Facts
		want   Condition
	}{
		"NoEdges": {
			reason: "A composition without references has nothing to protect.",
			facts:  Facts{Enforce: true},
			want:   Condition{Status: true, Reason: ReasonProtected, Message: "every live reference between composed resources is protected by a finalizer (0)"},
		},
		"ReleasingDoesNotCount": {
			reason: "The edges of dependents on their way out need no protection.",
			facts:  Facts{Enforce: true, Plan: protection.Plan{Edges: []protection.Edge{edge("a", "s", protection.Protected), edge("b", "s", protection.Releasing)}}},
			want:   Condition{Status: true, Reason: ReasonProtected, Message: "every live reference between composed resources is protected by a finalizer (1)"},
		},
		"PendingInEnforce": {
			reason: "Declared but not yet observed, and dependents without a UID, are pending.",
			facts:  Facts{Enforce: true, Plan: protection.Plan{Edges: []protection.Edge{edge("a", "s", protection.Declared), edge("b", "s", protection.Pending)}}},
			want:   Condition{Reason: ReasonFinalizersPending, Message: "finalizers are declared but not yet applied, or wait for their Object to exist: a → s, b → s"},
		},
		"MissingInReport": {
			reason: "In Report mode nothing is declared, so a missing finalizer is unprotected.",
			facts:  Facts{Plan: protection.Plan{Edges: []protection.Edge{edge("a", "s", protection.Declared), edge("b", "s", protection.Pending)}}},
			want:   Condition{Reason: ReasonUnprotectedEdges, Message: "referenced resources lack their dependents' finalizers: a → s"},
		},
		"UnprotectedBeatsPending": {
			reason: "Edges the function can't protect are worse than pending ones.",
			facts:  Facts{Enforce: true, Plan: protection.Plan{Edges: []protection.Edge{edge("a", "s", protection.Declared), edge("b", "s", protection.TargetRemoved), edge("c", "t", protection.TargetDeleting)}}},
			want:   Condition{Reason: ReasonUnprotectedEdges, Message: "referenced resources lack their dependents' finalizers: b → s, c → t"},
		},
		"CycleBeatsAll": {
			reason: "A cycle is the worst problem.",
			facts:  Facts{Enforce: true, Plan: protection.Plan{Cycles: [][]string{{"a", "b", "a"}}, Edges: []protection.Edge{edge("c", "s", protection.TargetRemoved)}}},
			want:   Condition{Reason: ReasonCycle, Message: "references form a cycle: a → b → a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, _ := Make(tc.facts)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nMake(...): -want condition, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestBoundedMessages proves that thousands of problems make messages that
// name a few and count the rest.
func TestBoundedMessages(t *testing.T) {
	var p protection.Plan
	for i := range 5000 {
		p.Edges = append(p.Edges, edge(fmt.Sprintf("dependent-%04d", i), "shared", protection.TargetRemoved))
		p.Stale = append(p.Stale, protection.Stale{Resource: "shared", Finalizer: fmt.Sprintf("f-%04d", i)})
	}
	c, results := Make(Facts{Enforce: true, Plan: p})
	if !strings.HasSuffix(c.Message, "dependent-0009 → shared and 4990 more") || len(c.Message) > 1024 {
		t.Errorf("condition message is not bounded: %d bytes, ends %q", len(c.Message), c.Message[max(0, len(c.Message)-60):])
	}
	for _, r := range results {
		if len(r.Message) > 2048 {
			t.Errorf("%s result message is %d bytes", r.Reason, len(r.Message))
		}
	}
}

func TestExternalWarning(t *testing.T) {
	target := objectref.Target{Kind: "Secret", Namespace: "vault", Name: "token", Index: 0, Via: "dependsOn"}
	p := protection.Plan{External: []protection.External{
		{Dependent: "a", Target: target, Protection: protection.Unprotected},
		{Dependent: "b", Target: target, Protection: protection.ByUsage},
	}}
	_, results := Make(Facts{Enforce: true, Plan: p})
	var warned []string
	for _, r := range results {
		if r.Reason == ReasonExternalReference {
			warned = append(warned, r.Message)
		}
	}
	want := []string{"references to objects outside this composition can't be protected by it: a spec.references[0].dependsOn → Secret vault/token"}
	if diff := cmp.Diff(want, warned); diff != "" {
		t.Errorf("an external edge a Usage protects is warned about: -want, +got:\n%s", diff)
	}
}
