package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

// edge is an edge with what protects it, in a state.
func edge(d, t string, p Protection, s protection.State) Edge {
	return Edge{Edge: composed.Edge{Dependent: d, Target: t, Broken: s == protection.Cyclic}, Protection: p, State: s}
}

// planned returns the facts of a graph of these edges alone, each in its
// state as the rule of its protection decided it, in Enforce mode.
func planned(edges ...Edge) Facts {
	f := Facts{
		Graph:      &composed.Graph{},
		Protection: protection.Plan{Edges: make([]protection.Verdict, len(edges))},
		Enforce:    true,
	}
	for i, e := range edges {
		f.Graph.Edges = append(f.Graph.Edges, e.Edge)
		switch e.Protection {
		case ByFinalizer:
			f.Protection.Edges[i] = protection.Verdict{By: protection.ByFinalizer, State: e.State}
		case ByUsage:
			f.Protection.Edges[i] = protection.Verdict{By: protection.ByUsage, State: e.State}
		case Unprotected:
			f.Protection.Edges[i] = protection.Verdict{State: protection.Exposed}
			if e.Broken {
				f.Protection.Edges[i].State = protection.Cyclic
			}
		}
	}
	return f
}

func TestConditionIsFalseForTheWorstProblem(t *testing.T) {
	report := func(f Facts) Facts { f.Enforce = false; return f }
	withCycle := func(f Facts) Facts { f.Graph.Cycles = [][]string{{"a", "b", "a"}}; return f }
	cases := map[string]struct {
		reason string
		facts  Facts
		// want's message is followed by ". " and the summary.
		want Condition
	}{
		"NoEdges": {
			reason: "A composition without references has nothing to protect.",
			facts:  planned(),
			want:   Condition{Status: true, Reason: ReasonProtected, Message: "every live reference between composed resources is protected"},
		},
		"ReleasingDoesNotCount": {
			reason: "The edges of dependents on their way out need no protection.",
			facts:  planned(edge("a", "s", ByFinalizer, protection.Protected), edge("b", "s", ByFinalizer, protection.Releasing)),
			want:   Condition{Status: true, Reason: ReasonProtected, Message: "every live reference between composed resources is protected"},
		},
		"UsagesProtectToo": {
			reason: "An edge whose Usage is observed is protected as one whose finalizer is.",
			facts:  planned(edge("a", "s", ByFinalizer, protection.Protected), edge("b", "s", ByUsage, protection.Protected)),
			want:   Condition{Status: true, Reason: ReasonProtected, Message: "every live reference between composed resources is protected"},
		},
		"PendingInEnforce": {
			reason: "Declared but not yet observed, and dependents without a UID, are pending.",
			facts:  planned(edge("a", "s", ByFinalizer, protection.Declared), edge("b", "s", ByFinalizer, protection.Pending)),
			want:   Condition{Reason: ReasonFinalizersPending, Message: "finalizers are declared but not yet applied, or wait for their Object to exist: a → s, b → s"},
		},
		"UsagePendingInEnforce": {
			reason: "A Usage emitted but not observed yet is pending as a finalizer is, and the condition says Usages.",
			facts:  planned(edge("a", "s", ByUsage, protection.Declared), edge("b", "s", ByUsage, protection.Pending)),
			want:   Condition{Reason: ReasonUsagesPending, Message: "Usages are declared but not yet in force, or wait for both their ends to exist: a → s, b → s"},
		},
		"MixedPending": {
			reason: "Pending finalizers and Usages together are pending protection, each edge labelled with what protects it.",
			facts:  planned(edge("a", "s", ByUsage, protection.Declared), edge("b", "s", ByFinalizer, protection.Declared), edge("c", "s", ByFinalizer, protection.Pending)),
			want: Condition{Reason: ReasonProtectionPending,
				Message: "finalizers and Usages are declared but not yet in force, or wait for what they protect to exist: a → s (Usage), b → s (finalizer), c → s (finalizer)"},
		},
		"UsageMissingInReport": {
			reason: "In Report mode a Usage not yet observed is missing, and the condition says Usages.",
			facts:  report(planned(edge("a", "s", ByUsage, protection.Declared), edge("b", "s", ByUsage, protection.Protected))),
			want:   Condition{Reason: ReasonUnprotectedEdges, Message: "referenced resources lack their dependents' Usages: a → s"},
		},
		"MissingInReport": {
			reason: "In Report mode nothing is declared, so a missing finalizer is unprotected.",
			facts:  report(planned(edge("a", "s", ByFinalizer, protection.Declared), edge("b", "s", ByFinalizer, protection.Pending))),
			want:   Condition{Reason: ReasonUnprotectedEdges, Message: "referenced resources lack their dependents' finalizers: a → s"},
		},
		"ExposedIsUnprotected": {
			reason: "An edge nothing protects, such as an input dependency of a resource that is not an Object without Usages, is unprotected.",
			facts:  planned(edge("a", "s", ByFinalizer, protection.Declared), edge("app", "db", Unprotected, protection.Exposed)),
			want:   Condition{Reason: ReasonUnprotectedEdges, Message: "nothing keeps referenced resources from being deleted before their dependents: app → db"},
		},
		"UnprotectedBeatsPending": {
			reason: "Edges the function can't protect are worse than pending ones, listed state after state.",
			facts: planned(
				edge("a", "s", ByFinalizer, protection.Declared), edge("b", "t", ByFinalizer, protection.TargetDeleting),
				edge("c", "s", ByFinalizer, protection.TargetRemoved), edge("d", "s", ByUsage, protection.Pending),
			),
			want: Condition{Reason: ReasonUnprotectedEdges, Message: "referenced resources lack their dependents' finalizers: c → s, b → t"},
		},
		"UnprotectedOfEveryKind": {
			reason: "Edges missing their protection in several ways are each labelled with their own.",
			facts: planned(
				edge("b", "t", ByFinalizer, protection.TargetDeleting), edge("c", "s", ByFinalizer, protection.TargetRemoved),
				edge("d", "s", ByUsage, protection.TargetDeleting), edge("app", "db", Unprotected, protection.Exposed),
			),
			want: Condition{Reason: ReasonUnprotectedEdges,
				Message: "referenced resources lack what keeps them from being deleted before their dependents: c → s (finalizer), b → t (finalizer), d → s (Usage), app → db (unprotected)"},
		},
		"CycleBeatsAll": {
			reason: "A cycle is the worst problem.",
			facts:  withCycle(planned(edge("a", "b", ByFinalizer, protection.Cyclic), edge("b", "a", ByFinalizer, protection.Cyclic), edge("c", "s", ByFinalizer, protection.TargetRemoved))),
			want:   Condition{Reason: ReasonCycle, Message: "references form a cycle: a → b → a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Of(tc.facts)
			want := tc.want
			want.Message += ". " + got.Summary
			if diff := cmp.Diff(want, got.Condition); diff != "" {
				t.Errorf("%s\nOf(...).Condition: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestMessagesNameAFewAndCountTheRest proves that thousands of problems make
// messages that name a few and count the rest.
func TestMessagesNameAFewAndCountTheRest(t *testing.T) {
	var edges []Edge
	var stale []protection.Stale
	for i := range 5000 {
		edges = append(edges, edge(fmt.Sprintf("dependent-%04d", i), "shared", ByFinalizer, protection.TargetRemoved))
		stale = append(stale, protection.Stale{Resource: "shared", Finalizer: fmt.Sprintf("f-%04d", i)})
	}
	f := planned(edges...)
	f.Protection.Stale = stale
	r := Of(f)
	if c := r.Condition; !strings.HasSuffix(c.Message, "dependent-0009 → shared and 4990 more. "+r.Summary) || len(c.Message) > 1024 {
		t.Errorf("condition message is not bounded: %d bytes, ends %q", len(c.Message), c.Message[max(0, len(c.Message)-200):])
	}
	for _, r := range r.Results {
		if len(r.Message) > 2048 {
			t.Errorf("%s result message is %d bytes", r.Reason, len(r.Message))
		}
	}
}

// f is composedtest.Finalizer, short for the tables.
var f = composedtest.Finalizer

var xr = object.Ref{APIVersion: "example.org/v1", Kind: "App", Name: "shop"}

// decision is how the rules decide the resources.
type decision struct {
	resources []composed.Resource
	graph     composed.Options
	usages    protection.Policy
	// observed are the keys of the Usages that exist, as the function
	// wrote them.
	observed []string
}

// facts are what the rules decide, in Enforce mode.
func (d decision) facts() Facts {
	g := composed.New(d.resources, d.graph)
	o := protection.Options{Policy: d.usages, API: protection.Protection, Owner: xr}
	if len(d.observed) > 0 {
		written := protection.Decide(g, o).Usages
		o.Observed = map[string]map[string]any{}
		for _, key := range d.observed {
			o.Observed[key] = written[key]
		}
	}
	return Facts{
		Graph:      g,
		Protection: protection.Decide(g, o),
		References: explicit.Referencing(g),
		Enforce:    true,
	}
}

// TestSummaryOnlyWhenTheFunctionChangesWhatIsObserved proves that the Normal
// Summary result is there only when the function changes what is observed,
// or in Report mode would: its message is the summary, which the condition's
// message always ends with.
func TestSummaryOnlyWhenTheFunctionChangesWhatIsObserved(t *testing.T) {
	shared := composedtest.Object("shared")
	protected := composedtest.With(shared, composedtest.Carrying(f("d1")))
	cases := map[string]struct {
		reason string
		facts  Facts
		want   bool
	}{
		"Protected": {
			reason: "Declaring the finalizers the observed targets carry changes nothing.",
			facts:  decision{resources: []composed.Resource{protected, composedtest.Object("d1", "shared")}}.facts(),
		},
		"NoEdges": {
			reason: "Without edges there is nothing to change.",
			facts:  decision{resources: []composed.Resource{shared, composedtest.ConfigMap("app")}}.facts(),
		},
		"FinalizerTheTargetLacks": {
			reason: "A finalizer declared that the observed target lacks changes it.",
			facts:  decision{resources: []composed.Resource{composedtest.With(protected, composedtest.Carrying()), composedtest.Object("d1", "shared")}}.facts(),
			want:   true,
		},
		"FinalizerAnEarlierStepDeclared": {
			reason: "A finalizer the observed target lacks changes it even when an earlier step declared it already.",
			facts: decision{resources: []composed.Resource{
				composedtest.With(shared, func(r *composed.Resource) { r.Desired.Finalizers = []string{f("d1")} }), composedtest.Object("d1", "shared"),
			}}.facts(),
			want: true,
		},
		"FinalizerOfATargetNotCreatedYet": {
			reason: "A target that doesn't exist yet is created with the finalizer.",
			facts:  decision{resources: []composed.Resource{composedtest.With(shared, composedtest.NotObserved), composedtest.Object("d1", "shared")}}.facts(),
			want:   true,
		},
		"ReportMode": {
			reason: "In Report mode the function would change the target.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{shared, composedtest.Object("d1", "shared")}}.facts()
				f.Enforce = false
				return f
			}(),
			want: true,
		},
		"FatalCycle": {
			reason: "A cycle that fails the step leaves desired state unchanged, but the function would change the targets.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{composedtest.Object("a", "b"), composedtest.Object("b", "a")}}.facts()
				f.CyclesFatal = true
				return f
			}(),
			want: true,
		},
		"PendingReleasingAndUnprotectable": {
			reason: "Edges pending, releasing, cyclic, or whose target is removed or being deleted change nothing.",
			facts: decision{
				resources: []composed.Resource{
					composedtest.With(shared, composedtest.Carrying(f("going"))),
					composedtest.With(composedtest.Object("new", "shared"), composedtest.NotObserved),
					composedtest.With(composedtest.Object("going", "shared"), composedtest.Deleting),
					composedtest.Object("gone-from", "removed"), composedtest.With(composedtest.Object("removed"), composedtest.NotDesired),
					composedtest.Object("to", "deleting"), composedtest.With(composedtest.Object("deleting"), composedtest.Deleting),
					composedtest.Object("a", "b"), composedtest.Object("b", "a"),
				},
				graph: composed.Options{BreakCycles: true},
			}.facts(),
		},
		"UsageNotObserved": {
			reason: "A Usage emitted that isn't observed yet changes what is observed.",
			facts:  decision{resources: []composed.Resource{composedtest.ConfigMap("db"), composedtest.ConfigMap("app", "db")}, usages: protection.Every}.facts(),
			want:   true,
		},
		"UsageObserved": {
			reason: "A Usage that is observed already changes nothing.",
			facts: decision{
				resources: []composed.Resource{composedtest.ConfigMap("db"), composedtest.ConfigMap("app", "db")},
				usages:    protection.Every, observed: []string{protection.Key("app", "db")},
			}.facts(),
		},
		"ExternalUsageNotObserved": {
			reason: "A Usage of an object outside the composition that isn't observed yet changes what is observed.",
			facts:  decision{resources: []composed.Resource{protected, composedtest.Object("d1", "shared", "elsewhere")}, usages: protection.Every}.facts(),
			want:   true,
		},
		"ExternalUsageObserved": {
			reason: "One that is observed changes nothing.",
			facts: decision{
				resources: []composed.Resource{protected, composedtest.Object("d1", "shared", "elsewhere")},
				usages:    protection.Every, observed: []string{protection.ExternalKey("d1", object.ClusterGroup, object.Kind, "", "elsewhere")},
			}.facts(),
		},
		"NewReference": {
			reason: "A reference written that the observed Object lacks changes it, though its target carries the finalizer already.",
			facts:  decision{resources: []composed.Resource{protected, composedtest.With(composedtest.Object("d1"), composedtest.DependingOn("shared"))}}.facts(),
			want:   true,
		},
		"ObservedReference": {
			reason: "A reference the observed Object carries already changes nothing.",
			facts:  decision{resources: []composed.Resource{protected, composedtest.With(composedtest.Object("d1"), composedtest.DependingOn("shared"), composedtest.CarryingReferences("shared"))}}.facts(),
		},
		"NewReferenceHeldBack": {
			reason: "A reference written on a resource held back is not written yet: holding back has a result of its own.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{protected, composedtest.With(composedtest.Object("d1"), composedtest.NotObserved, composedtest.DependingOn("shared"))}}.facts()
				f.HeldBack = map[string]string{"d1": "waits for shared to be ready"}
				return f
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Of(tc.facts)
			var summaries []Result
			for _, r := range got.Results {
				if r.Reason == ReasonSummary {
					summaries = append(summaries, r)
				}
			}
			var want []Result
			if tc.want {
				want = []Result{{Severity: Normal, Reason: ReasonSummary, Message: got.Summary}}
			}
			if diff := cmp.Diff(want, summaries); diff != "" {
				t.Errorf("%s\nOf(...): -want Summary results, +got:\n%s", tc.reason, diff)
			}
			if !strings.HasSuffix(got.Condition.Message, ". "+got.Summary) {
				t.Errorf("%s\nOf(...).Condition.Message = %q, want it to end with . and the summary %q", tc.reason, got.Condition.Message, got.Summary)
			}
		})
	}
}

func TestSummaryCountsWhatTheFunctionFoundAndDeclared(t *testing.T) {
	resources := []composed.Resource{
		composedtest.Object("shared"),
		composedtest.With(composedtest.Object("other"), func(r *composed.Resource) { r.Identity.Name = "shared" }),
		composedtest.Object("d1", "shared", "elsewhere"),
		composedtest.With(composedtest.Object("d2", "shared"), composedtest.NotObserved),
		composedtest.With(composedtest.Object("d3", "shared"), func(r *composed.Resource) { r.Observed.UID = "uid-d1" }),
	}
	cases := map[string]struct {
		reason string
		facts  func(Facts) Facts
		want   string
	}{
		"Enforce": {
			reason: "It counts resources, edges between them, external ones, the finalizers declared (one for two Objects that claim one UID) and the edges pending.",
			facts:  func(f Facts) Facts { return f },
			want:   "5 composed resources, 6 references between them and 1 to an external object, 1 of them unprotected; 2 reference finalizers added, 2 finalizers pending until their Objects exist",
		},
		"Report": {
			reason: "In Report mode the finalizers are to declare.",
			facts:  func(f Facts) Facts { f.Enforce = false; return f },
			want:   "5 composed resources, 6 references between them and 1 to an external object, 1 of them unprotected; 2 reference finalizers to add (Report mode: desired state left unchanged), 2 finalizers pending until their Objects exist",
		},
		"FatalCycle": {
			reason: "A fatal cycle fails the step: the finalizers are to declare.",
			facts:  func(f Facts) Facts { f.CyclesFatal = true; f.Graph.Cycles = [][]string{{"a", "b", "a"}}; return f },
			want:   "5 composed resources, 6 references between them and 1 to an external object, 1 of them unprotected; 2 reference finalizers to add (the cycle failed the step: desired state left unchanged), 2 finalizers pending until their Objects exist",
		},
		"CycleWithoutFailing": {
			reason: "A cycle that doesn't fail the step declares them.",
			facts:  func(f Facts) Facts { f.Graph.Cycles = [][]string{{"a", "b", "a"}}; return f },
			want:   "5 composed resources, 6 references between them and 1 to an external object, 1 of them unprotected; 2 reference finalizers added, 2 finalizers pending until their Objects exist",
		},
		"ReferencesNotInferred": {
			reason: "It counts the reference fields inference left out because nothing singles out their target, only where there are some.",
			facts:  func(f Facts) Facts { f.NotInferred = 2; return f },
			want:   "5 composed resources, 6 references between them and 1 to an external object, 1 of them unprotected; 2 reference finalizers added, 2 finalizers pending until their Objects exist; 2 references not inferred: nothing singles out their target",
		},
		"PendingUsagesAreNoFinalizers": {
			reason: "Edges whose Usage is pending are not counted among the finalizers pending until their Object exists.",
			facts: func(f Facts) Facts {
				for i, e := range f.Graph.Edges {
					if e.Dependent == "d2" {
						f.Protection.Edges[i] = protection.Verdict{By: protection.ByUsage, State: protection.Pending}
					}
				}
				return f
			},
			want: "5 composed resources, 6 references between them (2 of them by Usages) and 1 to an external object, 1 of them unprotected; 2 reference finalizers added",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Of(tc.facts(decision{resources: resources}.facts())).Summary
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nOf(...).Summary: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestResultsSayWhatNeedsAttentionInAFixedOrder(t *testing.T) {
	shared := composedtest.Object("shared")
	cases := map[string]struct {
		reason string
		facts  Facts
		want   []Result
	}{
		"Nothing": {
			reason: "A composition whose edges are all protected needs no attention.",
			facts:  decision{resources: []composed.Resource{composedtest.With(shared, composedtest.Carrying(f("d1"))), composedtest.Object("d1", "shared")}}.facts(),
		},
		"FatalCycle": {
			reason: "A cycle that fails the step is fatal, and comes first.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{composedtest.Object("a", "b"), composedtest.Object("b", "a")}}.facts()
				f.CyclesFatal = true
				return f
			}(),
			want: []Result{
				{Severity: Fatal, Reason: ReasonCycle, Message: "cannot order deletion: references form a cycle: a → b → a"},
				{Severity: Normal, Reason: ReasonSummary, Message: "2 composed resources, 2 references between them and none to external objects; 2 reference finalizers to add (the cycle failed the step: desired state left unchanged)"},
			},
		},
		"BrokenCycle": {
			reason: "A cycle that doesn't fail the step is a warning: its edges get no finalizer.",
			facts:  decision{resources: []composed.Resource{composedtest.Object("a", "b"), composedtest.Object("b", "a")}, graph: composed.Options{BreakCycles: true}}.facts(),
			want:   []Result{{Severity: Warning, Reason: ReasonCycle, Message: "references form a cycle, so nothing protects its edges and no dependsOn is written on them: a → b → a"}},
		},
		"InferredCycle": {
			reason: "Inferred edges that would close a cycle are a warning, whatever onCycle says, each named with its field and its cycle; the cycle of declared edges stays the input's to judge.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{
					composedtest.With(composedtest.ConfigMap("pc", "maker"), composedtest.Inferring("spec.credentials.secretRef", "maker")),
					composedtest.With(composedtest.ConfigMap("maker"), composedtest.Inferring("spec.providerConfigRef", "pc")),
					composedtest.With(composedtest.Object("a", "b"), composedtest.Inferring("spec.cRef", "c")),
					composedtest.Object("b", "a"),
					composedtest.With(composedtest.ConfigMap("c"), composedtest.Inferring("spec.aRef", "a")),
				}, usages: protection.Every}.facts() // infer writes Usages, so the declared pc → maker gets one.
				f.CyclesFatal = true
				return f
			}(),
			want: []Result{
				{Severity: Fatal, Reason: ReasonCycle, Message: "cannot order deletion: references form a cycle: a → b → a"},
				{Severity: Normal, Reason: ReasonSummary, Message: "5 composed resources, 3 references between them (1 of them by Usages) and none to external objects; 2 reference finalizers and 1 Usage to add (the cycle failed the step: desired state left unchanged)"},
				{Severity: Warning, Reason: ReasonInferredCycle, Message: "inferred references would close a cycle, so they are left out and nothing orders their deletion: " +
					"a → c (via spec.cRef; cycle a → c → a), c → a (via spec.aRef; cycle c → a → c), maker → pc (via spec.providerConfigRef; cycle maker → pc → maker)"},
			},
		},
		"InferredCycleAlone": {
			reason: "An inferred edge left out fails nothing and leaves the condition to the edges that remain.",
			facts: decision{resources: []composed.Resource{
				composedtest.With(composedtest.Object("maker"), composedtest.Inferring("spec.providerConfigRef", "pc")),
				composedtest.With(composedtest.ConfigMap("pc"), composedtest.Inferring("spec.credentials.secretRef", "maker")),
			}}.facts(),
			want: []Result{{Severity: Warning, Reason: ReasonInferredCycle, Message: "inferred references would close a cycle, so they are left out and nothing orders their deletion: " +
				"maker → pc (via spec.providerConfigRef; cycle maker → pc → maker), pc → maker (via spec.credentials.secretRef; cycle pc → maker → pc)"}},
		},
		"SharedObject": {
			reason: "Composed resources desired as one object are a warning naming them and the object: Crossplane applies each one's desired state to it in turn.",
			facts: decision{resources: []composed.Resource{
				composedtest.ConfigMap("config"), composedtest.With(composedtest.ConfigMap("config"), func(r *composed.Resource) { r.Name = "config-again" }),
			}}.facts(),
			want: []Result{{Severity: Warning, Reason: ReasonShared, Message: "composed resources are one object, to which Crossplane applies the desired state of each in turn, and each is protected as its dependents need: " +
				"config, config-again (ConfigMap team/config)"}},
		},
		"TargetRemoved": {
			reason: "A target the composition no longer includes is named once, with its dependents.",
			facts: decision{resources: []composed.Resource{
				composedtest.With(shared, composedtest.Carrying(f("d1"), f("d2")), composedtest.NotDesired), composedtest.Object("d1", "shared"), composedtest.Object("d2", "shared"),
			}}.facts(),
			want: []Result{{Severity: Warning, Reason: ReasonTargetRemoved, Message: "the composition no longer includes resources that live Objects still reference, so they may be deleted first: shared (referenced by d1, d2)"}},
		},
		"TargetDeleting": {
			reason: "A target being deleted without its dependent's finalizer can't be given it any more.",
			facts:  decision{resources: []composed.Resource{composedtest.With(shared, composedtest.Deleting), composedtest.Object("d1", "shared")}}.facts(),
			want:   []Result{{Severity: Warning, Reason: ReasonTargetDeleting, Message: "referenced resources are being deleted without their dependents' finalizers, which can no longer be added: d1 → shared"}},
		},
		"External": {
			reason: "A reference to an object outside the composition (a user's Secret, a ProviderConfig, the composite) is no problem by itself: the summary counts it, and nothing needs attention.",
			facts:  decision{resources: []composed.Resource{composedtest.Object("d1", "elsewhere")}}.facts(),
			want:   nil,
		},
		"ExternalUsage": {
			reason: "The Usage emitted for one is a change.",
			facts:  decision{resources: []composed.Resource{composedtest.Object("d1", "elsewhere")}, usages: protection.Every}.facts(),
			want:   []Result{{Severity: Normal, Reason: ReasonSummary, Message: "1 composed resource, 0 references between them and 1 to an external object, 0 of them unprotected; 1 Usage added"}},
		},
		"Stale": {
			reason: "A reference finalizer of no Object that references the resource here is stale.",
			facts:  decision{resources: []composed.Resource{composedtest.With(shared, composedtest.Carrying(f("gone"), "example.org/other"))}}.facts(),
			want: []Result{{Severity: Warning, Reason: ReasonStaleFinalizer, Message: "reference finalizers name no Object that references the resource in this composition, so they are not declared: Crossplane drops those only it applied, and any the provider added stay until their Object, if it still exists, releases them or someone removes them (provider-kubernetes #28): " +
				"shared " + f("gone") + " (of no Object of this composite)"}},
		},
		"StaleInReportMode": {
			reason: "Report mode labels no dependent, so a finalizer naming no resource it sees may be a dependent's that Crossplane is deleting: not warned about. One naming an Object that doesn't reference the resource is stale all the same.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{composedtest.With(shared, composedtest.Carrying(f("gone"), f("d1"))), composedtest.Object("d1")}}.facts()
				f.Enforce = false
				return f
			}(),
			want: []Result{{Severity: Warning, Reason: ReasonStaleFinalizer, Message: "reference finalizers name no Object that references the resource in this composition, so they are not declared: Crossplane drops those only it applied, and any the provider added stay until their Object, if it still exists, releases them or someone removes them (provider-kubernetes #28): " +
				"shared " + f("d1") + " (of Object d1, which doesn't reference it)"}},
		},
		"HeldBack": {
			reason: "Resources held back from creation have a Normal result of their own, in name order, and are no change.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{shared, composedtest.With(composedtest.Object("d1"), composedtest.NotObserved, composedtest.DependingOn("shared")), composedtest.With(composedtest.ConfigMap("job"), composedtest.NotObserved)}}.facts()
				f.HeldBack = map[string]string{"job": "waits for web to be ready", "d1": "waits for shared to be ready"}
				return f
			}(),
			want: []Result{{Severity: Normal, Reason: ReasonHeldBack, Message: "resources are held back from creation until their dependencies allow: d1 (waits for shared to be ready), job (waits for web to be ready)"}},
		},
		"WaitingTooLong": {
			reason: "A resource held back too long behind a dependency that exists is a Warning that names both, the dependency's kind and how long, and the ways out.",
			facts: func() Facts {
				f := decision{resources: []composed.Resource{shared, composedtest.With(composedtest.Object("d1"), composedtest.NotObserved, composedtest.DependingOn("shared"))}}.facts()
				f.HeldBack = map[string]string{"d1": "waits for shared to be ready"}
				f.Waiting = []Waiting{{Resource: "d1", Target: "shared", Kind: "Object"}}
				return f
			}(),
			want: []Result{
				{Severity: Normal, Reason: ReasonHeldBack, Message: "resources are held back from creation until their dependencies allow: d1 (waits for shared to be ready)"},
				{Severity: Warning, Reason: ReasonWaitingTooLong, Message: "resources held back by creation: WaitForReady have waited long for dependencies that exist and are not ready, which may never come if the kind reports no Ready condition: d1 waits for shared (Object, not ready for over 10 minutes); mark the dependency ready in an earlier step (patch-and-transform's readinessChecks: [{type: None}], or function-auto-ready before this step), or use creation: Immediate"},
			},
		},
		"Unmatched": {
			reason: "Dependencies in the input that match no composed resource are named by field.",
			facts: func() Facts {
				f := decision{}.facts()
				f.Unmatched = []explicit.Unmatched{{Field: "dependencies[0].dependsOn[1]", Pattern: "conf"}}
				return f
			}(),
			want: []Result{{Severity: Warning, Reason: ReasonUnmatched, Message: `dependencies in the input match no composed resource: dependencies[0].dependsOn[1] "conf"`}},
		},
		"UsageImpossible": {
			reason: "An edge no Usage can protect is named with why; the Usage of the other edge is a change.",
			facts: decision{
				resources: []composed.Resource{
					composedtest.ConfigMap("db"), composedtest.ConfigMap("app", "db"),
					{Name: "bucket", APIVersion: "s3.aws.upbound.io/v1beta1", Identity: object.Ref{Group: "s3.aws.upbound.io", Kind: "Bucket", Name: "assets"}, Observed: &composed.Observed{UID: "uid-bucket"}, Desired: &composed.Desired{}},
					composedtest.ConfigMap("web", "bucket"),
				},
				usages: protection.Every,
			}.facts(),
			want: []Result{
				{Severity: Normal, Reason: ReasonSummary, Message: "4 composed resources, 2 references between them (1 of them by Usages) and none to external objects; 1 Usage added"},
				{Severity: Warning, Reason: ReasonUsageImpossible, Message: "no Usage can protect these edges, so none is emitted: " +
					"web → bucket (the dependent is namespaced and the dependency is cluster-scoped: a namespaced Usage can't refer to a cluster-scoped Bucket, and a ClusterUsage can't refer to a namespaced ConfigMap)"},
			},
		},
		"UnprotectedDependencies": {
			reason: "Dependencies the input declares that no finalizer can protect, in a step that writes no Usage, are named once, with the field that protects them.",
			facts: decision{resources: []composed.Resource{
				composedtest.ConfigMap("db"), composedtest.ConfigMap("app", "db"), composedtest.ConfigMap("cache", "db"),
			}}.facts(),
			want: []Result{{Severity: Warning, Reason: ReasonUnprotectedDeps, Message: "no reference finalizer can protect these dependencies, and this step writes no Usage, so nothing keeps a dependency from being deleted before its dependent; protection: Usages protects them with Usages: app → db, cache → db"}},
		},
		"DeclaredDependenciesGetUsages": {
			reason: "Where the step writes Usages, a Usage protects them: nothing to warn about.",
			facts: decision{resources: []composed.Resource{
				composedtest.ConfigMap("db"), composedtest.ConfigMap("app", "db"),
			}, usages: protection.Every, observed: []string{protection.Key("app", "db")}}.facts(),
		},
		"InvalidReference": {
			reason: "References that can't be read are named with the problem.",
			facts: func() Facts {
				f := decision{}.facts()
				f.Invalid = []InvalidReference{{Resource: "d1", Problem: "spec.references[0]: Required value"}}
				return f
			}(),
			want: []Result{{Severity: Warning, Reason: ReasonInvalidReference, Message: "cannot read references: d1: spec.references[0]: Required value"}},
		},
		"EveryOneInItsPlace": {
			reason: "Results come in a fixed order: a fatal cycle, the summary, a cycle warned about, inferred edges left out, removed and deleting targets, stale finalizers, held back, unmatched, impossible Usages, unprotected dependencies, invalid references.",
			facts: func() Facts {
				f := decision{
					resources: []composed.Resource{
						composedtest.Object("a", "b"), composedtest.Object("b", "a"),
						composedtest.With(composedtest.Object("removed"), composedtest.NotDesired), composedtest.Object("r", "removed"),
						composedtest.With(composedtest.Object("deleting"), composedtest.Deleting), composedtest.Object("x", "deleting"),
						composedtest.Object("e", "elsewhere"),
						composedtest.With(shared, composedtest.Carrying(f("gone"))), composedtest.Object("d1", "shared"),
						composedtest.With(composedtest.ConfigMap("i1"), composedtest.Inferring("spec.i2Ref", "i2")),
						composedtest.With(composedtest.ConfigMap("i2"), composedtest.Inferring("spec.i1Ref", "i1")),
					},
					graph: composed.Options{BreakCycles: true},
				}.facts()
				f.HeldBack = map[string]string{"job": "waits for web to be ready"}
				f.Unmatched = []explicit.Unmatched{{Field: "dependencies[0].resource", Pattern: "gone"}}
				f.Protection.Unusable = []protection.Problem{{Edge: protection.Edge{Dependent: "app", Target: "db"}, Reason: "why"}}
				f.Protection.Unprotected = []protection.Edge{{Dependent: "job", Target: "web"}}
				f.Invalid = []InvalidReference{{Resource: "d1", Problem: "bad"}}
				return f
			}(),
			want: []Result{
				{Severity: Normal, Reason: ReasonSummary, Message: "11 composed resources, 5 references between them and 1 to an external object, 1 of them unprotected; 1 reference finalizer added"},
				{Severity: Warning, Reason: ReasonCycle},
				{Severity: Warning, Reason: ReasonInferredCycle},
				{Severity: Warning, Reason: ReasonTargetRemoved},
				{Severity: Warning, Reason: ReasonTargetDeleting},
				{Severity: Warning, Reason: ReasonStaleFinalizer},
				{Severity: Normal, Reason: ReasonHeldBack},
				{Severity: Warning, Reason: ReasonUnmatched},
				{Severity: Warning, Reason: ReasonUsageImpossible},
				{Severity: Warning, Reason: ReasonUnprotectedDeps},
				{Severity: Warning, Reason: ReasonInvalidReference},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Of(tc.facts).Results
			// A wanted result without a message is wanted in its place, whatever
			// its message.
			if len(got) == len(tc.want) {
				for i := range got {
					if tc.want[i].Message == "" {
						got[i].Message = ""
					}
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nOf(...).Results: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestExternalReferencesAreCountedByProtectionNotWarnedAbout proves that the
// summary says how many references leave the composition and how many of
// those no Usage protects, and that none of them is a result by itself: one
// no Usage can express is counted unprotected, and warned about only when
// Usages were asked for; one whose Usage is emitted isn't unprotected.
func TestExternalReferencesAreCountedByProtectionNotWarnedAbout(t *testing.T) {
	token := object.Target{Ref: object.Ref{APIVersion: "v1", Kind: "Secret", Namespace: "vault", Name: "token"}, Index: 0, Via: "dependsOn"}
	// A cluster-scoped Object can't use a namespaced Secret; a namespaced
	// Object can.
	a := composedtest.Object("a")
	a.References = []object.Target{token}
	b := composedtest.Object("b")
	b.Identity.Group, b.Identity.Namespace, b.References = object.NamespacedGroup, "vault", []object.Target{token}
	for name, tc := range map[string]struct {
		policy      protection.Policy
		unprotected int
		results     []string
	}{
		"WithoutUsages":               {policy: protection.None, unprotected: 2},
		"WithUsagesOfExternalObjects": {policy: protection.Every, unprotected: 1, results: []string{ReasonSummary}},
	} {
		t.Run(name, func(t *testing.T) {
			r := Of(decision{resources: []composed.Resource{a, b}, usages: tc.policy}.facts())
			if want := fmt.Sprintf("2 to external objects, %d of them unprotected;", tc.unprotected); !strings.Contains(r.Summary, want) {
				t.Errorf("Of(...).Summary = %q, want it to say %q", r.Summary, want)
			}
			var reasons []string
			for _, res := range r.Results {
				reasons = append(reasons, res.Reason)
			}
			if diff := cmp.Diff(tc.results, reasons); diff != "" {
				t.Errorf("Of(...).Results' reasons: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestEdgesOfSaysWhatProtectsEachEdge proves that each edge is said to be
// protected by what orders its deletion, as the protection rules decided:
// the Usage where both protect, nothing where neither does.
func TestEdgesOfSaysWhatProtectsEachEdge(t *testing.T) {
	target := object.Target{Ref: object.Ref{Kind: "Secret", Namespace: "vault", Name: "token"}}
	g := &composed.Graph{
		Edges: []composed.Edge{
			{Dependent: "a", Target: "s"},
			{Dependent: "app", Target: "db", Origin: composed.FromInput},
			{Dependent: "b", Target: "c", Origin: composed.FromInput},
			{Dependent: "c", Target: "b", Origin: composed.FromInput, Broken: true},
			{Dependent: "d", Target: "s", Broken: true},
			{Dependent: "e", Target: "s"},
		},
		External: []composed.External{{Dependent: "a", Target: target}, {Dependent: "b", Target: target}},
	}
	// e's edge has both (protection: Both): the Usage is what orders the
	// deletion where the finalizer doesn't, so it is what the edge reports.
	p := protection.Plan{
		Edges: []protection.Verdict{
			{By: protection.ByFinalizer, State: protection.Protected},
			{By: protection.ByUsage, State: protection.Declared},
			{State: protection.Exposed},
			{State: protection.Cyclic},
			{By: protection.ByFinalizer, State: protection.Cyclic},
			{By: protection.ByFinalizer | protection.ByUsage, State: protection.Declared},
		},
		External: []protection.Verdict{{State: protection.Exposed}, {By: protection.ByUsage, State: protection.Pending}},
	}
	edges, external := EdgesOf(g, p)
	wantEdges := []Edge{
		{Edge: g.Edges[0], Protection: ByFinalizer, State: protection.Protected},
		{Edge: g.Edges[1], Protection: ByUsage, State: protection.Declared},
		{Edge: g.Edges[2], Protection: Unprotected, State: protection.Exposed},
		{Edge: g.Edges[3], Protection: Unprotected, State: protection.Cyclic},
		{Edge: g.Edges[4], Protection: ByFinalizer, State: protection.Cyclic},
		{Edge: g.Edges[5], Protection: ByUsage, State: protection.Declared},
	}
	if diff := cmp.Diff(wantEdges, edges); diff != "" {
		t.Errorf("EdgesOf(...): -want edges, +got:\n%s", diff)
	}
	wantExternal := []External{
		{External: g.External[0], Protection: Unprotected, State: protection.Exposed},
		{External: g.External[1], Protection: ByUsage, State: protection.Pending},
	}
	if diff := cmp.Diff(wantExternal, external); diff != "" {
		t.Errorf("EdgesOf(...): -want external edges, +got:\n%s", diff)
	}
}
