package oracle

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A res is a composed resource as decoded JSON, built up by its methods.
type res map[string]any

func resource(apiVersion, kind, name string) res {
	r := res{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{}}
	if name != "" {
		r.md()["name"] = name
	}
	return r
}

func object(name string) res     { return resource(ClusterObjectGroup+"/v1alpha2", ObjectKind, name) }
func nsObject(name string) res   { return resource(NamespacedObjectGroup+"/v1alpha1", ObjectKind, name) }
func (r res) md() map[string]any { return r["metadata"].(map[string]any) }

// clusterUsage is a ClusterUsage a composition composes itself: of and by
// each name an apiVersion, a kind, and a resourceRef or resourceSelector.
func clusterUsage(ofAPIVersion, ofKind string, of map[string]any, byAPIVersion, byKind string, by map[string]any) res {
	r := resource(ProtectionAPI, "ClusterUsage", "keep")
	of["apiVersion"], of["kind"] = ofAPIVersion, ofKind
	by["apiVersion"], by["kind"] = byAPIVersion, byKind
	r["spec"] = map[string]any{"of": of, "by": by}
	return r
}

// team is the namespace of the namespaced composites.
const team = "team"

func (r res) inTeam() res { r.md()["namespace"] = team; return r }

// uid gives the observed resource its UID; an Object gets the provider's
// own finalizer too, as provider-kubernetes adds it to every Object whose
// references resolve.
func (r res) uid(uid string) res {
	r.md()["uid"] = uid
	if r["kind"] == ObjectKind {
		return r.fin(ObjectFinalizer)
	}
	return r
}

// unmanaged takes the provider's own finalizer away: an Object whose
// references don't all resolve yet.
func (r res) unmanaged() res {
	fs, _ := r.md()["finalizers"].([]any)
	r.md()["finalizers"] = slices.DeleteFunc(fs, func(f any) bool { return f == ObjectFinalizer })
	return r
}

func (r res) fin(fs ...string) res {
	list, _ := r.md()["finalizers"].([]any)
	for _, f := range fs {
		list = append(list, f)
	}
	r.md()["finalizers"] = list
	return r
}

// labelled gives the resource the label the function adds to a dependent
// Object: the composite's UID, u-app.
func (r res) labelled() res {
	r.md()["labels"] = map[string]any{DependentLabel: "u-app"}
	return r
}
func (r res) deleting() res { r.md()["deletionTimestamp"] = "2026-11-30T00:00:00Z"; return r }
func (r res) ready() res {
	r["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	return r
}

func (r res) refs(refs ...any) res {
	r["spec"] = map[string]any{"references": refs}
	return r
}

// dependsOn is a reference entry: name, then key-value pairs of the target.
func dependsOn(name string, kv ...string) map[string]any { return entry("dependsOn", name, kv...) }

func entry(via, name string, kv ...string) map[string]any {
	t := map[string]any{"name": name}
	for i := 0; i+1 < len(kv); i += 2 {
		t[kv[i]] = kv[i+1]
	}
	return map[string]any{via: t}
}

func f(uid string) string { return FinalizerPrefix + uid }

// state builds a State: desired and observed by name, a cluster-scoped XR.
func state(in Input, desired, observed map[string]res) State {
	s := State{Desired: map[string]map[string]any{}, Observed: map[string]map[string]any{}, XR: map[string]any{"metadata": map[string]any{"name": "app", "uid": "u-app"}}, Input: in}
	for k, v := range desired {
		s.Desired[k] = v
	}
	for k, v := range observed {
		s.Observed[k] = v
	}
	return s
}

// finalizerCarried is a state in which the Object dep references the Object
// shared, both observed, and shared carries dep's reference finalizer.
func finalizerCarried() State {
	return state(Input{}, map[string]res{
		"dep":    object("dep").refs(dependsOn("shared")),
		"shared": object("shared"),
	}, map[string]res{
		"dep":    object("dep").uid("u-dep"),
		"shared": object("shared").uid("u-shared").fin(f("u-dep")),
	})
}

func namespaced(s State) State {
	s.XR = map[string]any{"metadata": map[string]any{"name": "app", "namespace": team, "uid": "u-app"}}
	return s
}

// want holds what a case checks; nil fields are not checked.
type want struct {
	edges      []string // "a → b: declared"
	external   []string // "a → Secret ns/name: exposed"
	finalizers map[string][]string
	condition  string // "False FinalizersPending: message"
	stale      []string
	problems   []string
	references map[string][]Reference
	heldBack   map[string]string
	usages     []map[string]any // manifests
	observedAs []string
	impossible []string
	summary    *Summary
	// summaryMessage is the summary the condition's message ends with.
	summaryMessage string
	results        []Result
	writes         *bool
	asks           []string // the unseen UIDs, when the function must ask for Objects
	// unseenUsers are the names of what the function asks for by name: what
	// its own Usages are used by, or what the references it wrote depend on,
	// that observed state lacks.
	unseenUsers []string
	labels      map[string]map[string]string
	// leftOut are the inferred edges left out: "a → b via field: a → b → a".
	leftOut []string
}

func edges(p *Plan) []string {
	out := []string{}
	for _, e := range p.Edges {
		s := fmt.Sprintf("%s: %s", e, e.State)
		switch e.Origin {
		case OriginExplicit:
			s += " (explicit)"
		case OriginInferred:
			s += " (inferred: " + e.Via + ")"
		}
		out = append(out, s)
	}
	return out
}

func TestExpect(t *testing.T) {
	no := false
	// converged is a composition in which app references shared and the
	// input makes dep depend on it, every finalizer carried and every
	// dependent labelled; the observed dep carries the dependsOn the function
	// writes when written is true.
	converged := func(written bool) State {
		dep := object("dep").uid("u-dep").labelled()
		if written {
			dep = dep.refs(dependsOn("shared", "apiVersion", ClusterObjectGroup+"/v1alpha2", "kind", ObjectKind))
		}
		return state(Input{Dependencies: []Dependency{{Resource: "dep", DependsOn: []string{"shared"}}}}, map[string]res{
			"app":    object("app").refs(dependsOn("shared")),
			"dep":    object("dep"),
			"shared": object("shared"),
		}, map[string]res{
			"app":    object("app").uid("u-app").labelled().refs(dependsOn("shared")),
			"dep":    dep,
			"shared": object("shared").uid("u-shared").fin(f("u-app"), f("u-dep")),
		})
	}
	// protected is what the function makes of a converged composition: every
	// edge protected and the dependsOn written, with the results.
	protected := func(results []Result) want {
		return want{
			edges:      []string{"app → shared: protected", "dep → shared: protected (explicit)"},
			references: map[string][]Reference{"dep": {{APIVersion: ClusterObjectGroup + "/v1alpha2", Kind: ObjectKind, Name: "shared"}}},
			condition:  "True Protected: every live reference between composed resources is protected",
			results:    results,
		}
	}
	cases := map[string]struct {
		reason string
		state  State
		want   want
	}{
		"ReferenceDefaultsToTheObjectsGroup": {
			reason: "A dependsOn without apiVersion and kind names an Object of the referencing Object's own group, in any version.",
			state: state(Input{}, map[string]res{
				"dep":        object("dep").refs(dependsOn("shared")),
				"nsdep":      nsObject("nsdep").inTeam().refs(dependsOn("shared", "namespace", "team")),
				"shared":     object("shared"),
				"shared-nsd": nsObject("shared").inTeam(),
			}, nil),
			want: want{edges: []string{"dep → shared: pending", "nsdep → shared-nsd: pending"}},
		},
		"NoNamespaceIsDefaulted": {
			reason: "A reference without namespace names a cluster-scoped object, as the provider reads it: in a namespaced composite it matches nothing composed.",
			state: namespaced(state(Input{}, map[string]res{
				"dep":    nsObject("dep").refs(dependsOn("shared")),
				"shared": nsObject("shared"),
			}, nil)),
			want: want{edges: []string{}, external: []string{"dep → Object.kubernetes.m.crossplane.io shared: exposed"}, results: nil},
		},
		"AnyVersionMatches": {
			reason: "A reference matches by group, kind, namespace and name: v1alpha2 finds an Object served as v1alpha1.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared", "apiVersion", ClusterObjectGroup+"/v1alpha1")),
				"shared": object("shared"),
			}, nil),
			want: want{edges: []string{"dep → shared: pending"}},
		},
		"PatchesFromWinsOverDependsOn": {
			reason: "A reference that sets both is followed through patchesFrom, as provider-kubernetes does, and reported.",
			state: state(Input{}, map[string]res{
				"dep": object("dep").refs(map[string]any{"dependsOn": map[string]any{"name": "a"}, "patchesFrom": map[string]any{"name": "b", "fieldPath": "x"}}),
				"a":   object("a"),
				"b":   object("b"),
			}, nil),
			want: want{edges: []string{"dep → b: pending"}, problems: []string{"dep spec.references[0] both"}},
		},
		"BadReferenceSkippedOthersKept": {
			reason: "A malformed reference is reported and skipped; everything else still works.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs("a string", dependsOn(""), dependsOn("x", "apiVersion", "a/b/c"), dependsOn("shared")),
				"shared": object("shared"),
			}, nil),
			want: want{
				edges:    []string{"dep → shared: pending"},
				problems: []string{"dep spec.references[0]", "dep spec.references[1]", "dep spec.references[2]"},
				results:  []Result{{Warning, "InvalidReference"}},
			},
		},
		"ObservedNameFirstElseDesired": {
			reason: "A composed resource is found by its observed name when it has one, else by its desired metadata.name.",
			state: state(Input{}, map[string]res{
				"dep":     object("dep").refs(dependsOn("gen-x"), dependsOn("named")),
				"x":       object(""),
				"renamed": object("named"),
			}, map[string]res{
				"x":       object("gen-x").uid("u-x"),
				"renamed": object("old-name").uid("u-r"),
			}),
			want: want{edges: []string{"dep → x: pending"}, external: []string{"dep → Object.kubernetes.crossplane.io named: exposed"}},
		},
		"NamespacedCompositeGivesItsNamespace": {
			reason: "A namespaced composite's resources get its namespace when desired state omits it, as Crossplane does.",
			state: namespaced(state(Input{}, map[string]res{
				"dep": nsObject("dep").refs(dependsOn("cm", "apiVersion", "v1", "kind", "ConfigMap", "namespace", "team")),
				"cm":  resource("v1", "ConfigMap", "cm"),
			}, nil)),
			want: want{edges: []string{"dep → cm: pending"}},
		},
		"LiveDependentsFinalizerDeclared": {
			reason: "A dependent that exists, isn't being deleted and is desired gets its finalizer declared on what it references; pending until applied, and a change, so summarised.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{
				"dep":    object("dep").uid("u-dep").fin(ObjectFinalizer),
				"shared": object("shared").uid("u-shared").fin(ObjectFinalizer),
			}),
			want: want{
				edges:      []string{"dep → shared: declared"},
				finalizers: map[string][]string{"dep": nil, "shared": {f("u-dep")}},
				condition:  "False FinalizersPending: finalizers are declared but not yet applied, or wait for their Object to exist: dep → shared",
				summary:    &Summary{Resources: 2, References: 1, Declared: 1, Added: 1},
				results:    []Result{{Normal, "Summary"}},
			},
		},
		"CarriedFinalizerProtects": {
			reason: "Once observed the referenced resource carries the finalizer, the edge is protected and the condition True.",
			state:  finalizerCarried(),
			want: want{
				edges:      []string{"dep → shared: protected"},
				finalizers: map[string][]string{"dep": nil, "shared": {f("u-dep")}},
				condition:  "True Protected: every live reference between composed resources is protected",
			},
		},
		"EarlierFinalizersKeptMissingFollowSorted": {
			reason: "Finalizers earlier steps declared are kept in their order; the missing reference finalizers follow, sorted.",
			state: state(Input{}, map[string]res{
				"c":      object("c").refs(dependsOn("shared")),
				"a":      object("a").refs(dependsOn("shared")),
				"b":      object("b").refs(dependsOn("shared")),
				"shared": object("shared").fin("example.org/earlier", f("u-b"), ObjectFinalizer),
			}, map[string]res{
				"a": object("a").uid("u-a"), "b": object("b").uid("u-b"), "c": object("c").uid("u-c"),
			}),
			want: want{finalizers: map[string][]string{"a": nil, "b": nil, "c": nil, "shared": {"example.org/earlier", f("u-b"), ObjectFinalizer, f("u-a"), f("u-c")}}},
		},
		"DeletingTargetGetsNoNewFinalizer": {
			reason: "A referenced resource being deleted without the finalizer can't get it (the API server rejects it): reported, not declared.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{
				"dep":    object("dep").uid("u-dep"),
				"shared": object("shared").uid("u-shared").deleting().fin(ObjectFinalizer),
			}),
			want: want{
				edges:      []string{"dep → shared: target deleting"},
				finalizers: map[string][]string{"dep": nil, "shared": nil},
				condition:  "False UnprotectedEdges: referenced resources lack their dependents' finalizers: dep → shared",
				results:    []Result{{Warning, "ReferencedResourceDeleting"}},
			},
		},
		"DeletingTargetKeepsItsFinalizer": {
			reason: "A referenced resource being deleted that carries the finalizer keeps declaring it.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{
				"dep":    object("dep").uid("u-dep"),
				"shared": object("shared").uid("u-shared").deleting().fin(f("u-dep")),
			}),
			want: want{edges: []string{"dep → shared: protected"}, finalizers: map[string][]string{"dep": nil, "shared": {f("u-dep")}}},
		},
		"ReleasingDependentDeclaredOnlyWhileCarried": {
			reason: "A dependent being deleted or no longer desired keeps its finalizer declared only while the observed resource still carries it.",
			state: state(Input{}, map[string]res{
				"going":  object("going").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{
				"going":   object("going").uid("u-going").deleting(),
				"removed": object("removed").uid("u-removed").refs(dependsOn("shared")),
				"shared":  object("shared").uid("u-shared").fin(f("u-going")),
			}),
			want: want{
				edges:      []string{"going → shared: releasing", "removed → shared: releasing"},
				finalizers: map[string][]string{"going": nil, "shared": {f("u-going")}},
				condition:  "True Protected: every live reference between composed resources is protected",
			},
		},
		"DependentWithoutUIDIsPending": {
			reason: "A dependent that doesn't exist yet has no UID to name a finalizer by: the edge is pending, which changes nothing, so no Summary.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{"shared": object("shared").uid("u-shared")}),
			want: want{
				edges:     []string{"dep → shared: pending"},
				condition: "False FinalizersPending: finalizers are declared but not yet applied, or wait for their Object to exist: dep → shared",
				summary:   &Summary{Resources: 2, References: 1, Pending: 1},
				results:   []Result{},
			},
		},
		"RemovedTargetReportedNotResurrected": {
			reason: "A referenced resource the composition removes while a live Object references it is reported, and not added back to desired state.",
			state: state(Input{}, map[string]res{
				"dep": object("dep").refs(dependsOn("shared")),
			}, map[string]res{
				"dep":    object("dep").uid("u-dep"),
				"shared": object("shared").uid("u-shared").fin(f("u-dep")),
			}),
			want: want{
				edges:      []string{"dep → shared: target removed"},
				finalizers: map[string][]string{"dep": nil},
				condition:  "False UnprotectedEdges: referenced resources lack their dependents' finalizers: dep → shared",
				results:    []Result{{Warning, "ReferencedResourceRemoved"}},
			},
		},
		"StaleFinalizerReportedNeverDeclared": {
			reason: "A reference finalizer naming no Object that references the resource here is stale: reported, never declared.",
			state: state(Input{}, map[string]res{
				"shared": object("shared"),
			}, map[string]res{
				"shared": object("shared").uid("u-shared").fin(f("u-gone"), ObjectFinalizer),
			}),
			want: want{
				stale:      []string{"shared " + f("u-gone")},
				finalizers: map[string][]string{"shared": nil},
				results:    []Result{{Warning, "StaleFinalizer"}},
			},
		},
		"ReportModeLeavesDesiredState": {
			reason: "Report mode computes the same and writes nothing: a missing finalizer is then unprotected, and the Summary says what Enforce would change.",
			state: state(Input{Mode: "Report"}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{"dep": object("dep").uid("u-dep")}),
			want: want{
				edges:      []string{"dep → shared: declared"},
				finalizers: map[string][]string{"dep": nil, "shared": nil},
				condition:  "False UnprotectedEdges: referenced resources lack their dependents' finalizers: dep → shared",
				results:    []Result{{Normal, "Summary"}},
				writes:     &no,
			},
		},
		"FatalCycleFailsTheStepWithItsPath": {
			reason: "With onCycle Fatal a cycle fails the step with its path, from its smallest name, the shortest way back.",
			state: state(Input{}, map[string]res{
				"a": object("a").refs(dependsOn("b"), dependsOn("c")),
				"b": object("b").refs(dependsOn("c")),
				"c": object("c").refs(dependsOn("a")),
			}, map[string]res{"a": object("a").uid("u-a"), "b": object("b").uid("u-b"), "c": object("c").uid("u-c")}),
			want: want{
				condition:  "False Cycle: references form a cycle: a → c → a",
				finalizers: map[string][]string{"a": nil, "b": nil, "c": nil},
				results:    []Result{{Fatal, "Cycle"}, {Normal, "Summary"}},
				writes:     &no,
			},
		},
		"WarnedCycleDeclaresNothingInside": {
			reason: "With onCycle Warning no finalizer is declared on an edge inside the cycle; edges into it are still protected.",
			state: state(Input{OnCycle: "Warning"}, map[string]res{
				"a": object("a").refs(dependsOn("b")),
				"b": object("b").refs(dependsOn("a")),
				"c": object("c").refs(dependsOn("a")),
			}, map[string]res{"a": object("a").uid("u-a"), "b": object("b").uid("u-b"), "c": object("c").uid("u-c")}),
			want: want{
				edges:      []string{"a → b: cyclic", "b → a: cyclic", "c → a: declared"},
				finalizers: map[string][]string{"a": {f("u-c")}, "b": nil, "c": nil},
				condition:  "False Cycle: references form a cycle: a → b → a",
				results:    []Result{{Normal, "Summary"}, {Warning, "Cycle"}},
			},
		},
		"ExplicitDependencyWritesADependsOn": {
			reason: "An Object the input says depends on a resource gets a dependsOn naming it by its observed name, else its desired one, and its namespace; written into an Object not observed yet, it is a change.",
			state: namespaced(state(Input{Dependencies: []Dependency{{Resource: "deployment-.*", DependsOn: []string{"config", "quota"}}}}, map[string]res{
				"deployment-api": nsObject("api"),
				"config":         nsObject(""),
				"quota":          nsObject("app-quota"),
			}, map[string]res{"config": nsObject("gen-config").inTeam().uid("u-config")})),
			want: want{
				edges: []string{"deployment-api → config: pending (explicit)", "deployment-api → quota: pending (explicit)"},
				references: map[string][]Reference{"deployment-api": {
					{APIVersion: NamespacedObjectGroup + "/v1alpha1", Kind: ObjectKind, Namespace: "team", Name: "gen-config"},
					{APIVersion: NamespacedObjectGroup + "/v1alpha1", Kind: ObjectKind, Namespace: "team", Name: "app-quota"},
				}},
				results: []Result{{Normal, "Summary"}},
			},
		},
		"ExplicitDependencyNotWrittenTwice": {
			reason: "With references: Ignore the references make no edge, but a dependsOn equal to one already there is not appended again.",
			state: state(Input{References: "Ignore", Dependencies: []Dependency{{Resource: "dep", DependsOn: []string{"shared", "other"}}}}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared", "apiVersion", ClusterObjectGroup+"/v1alpha1"), dependsOn("elsewhere")),
				"shared": object("shared"),
				"other":  object("other"),
			}, nil),
			want: want{
				edges:      []string{"dep → other: pending (explicit)", "dep → shared: pending (explicit)"},
				external:   []string{},
				problems:   []string{},
				references: map[string][]Reference{"dep": {{APIVersion: ClusterObjectGroup + "/v1alpha2", Kind: ObjectKind, Name: "other"}}},
			},
		},
		"AReferenceMakesTheExplicitEdgeAlready": {
			reason: "With references: Infer a dependency the Object references already is one edge, and nothing is written: no Summary.",
			state: state(Input{Dependencies: []Dependency{{Resource: "dep", DependsOn: []string{"shared"}}}}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, nil),
			want: want{edges: []string{"dep → shared: pending"}, references: map[string][]Reference{}, results: []Result{}},
		},
		"PatternsNeverMatchTheFunctionsOwnUsages": {
			reason: "The Usages the function emitted, once observed, are no part of the graph: .* matches the composition's resources only, and the observed Usage protects its edge.",
			state: namespaced(state(Input{Protection: "Usages", Dependencies: []Dependency{{Resource: ".*", DependsOn: []string{"db"}}}}, map[string]res{
				"app": resource("apps/v1", "Deployment", "app"),
				"db":  resource("v1", "ConfigMap", "db"),
			}, map[string]res{
				"app": resource("apps/v1", "Deployment", "app").inTeam().uid("u-app"),
				"db":  resource("v1", "ConfigMap", "db").inTeam().uid("u-db"),
				"whatever-the-function-named-it": {
					"apiVersion": ProtectionAPI, "kind": "Usage",
					"metadata": map[string]any{"name": "u", "namespace": "team", "uid": "u-usage", "labels": map[string]any{UsageLabel: "true"}},
					"spec": map[string]any{
						"of": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": map[string]any{"name": "db"}},
						"by": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "resourceRef": map[string]any{"name": "app"}},
					},
				},
			})),
			want: want{
				edges:      []string{"app → db: protected (explicit)"},
				observedAs: []string{"whatever-the-function-named-it"},
				condition:  "True Protected: every live reference between composed resources is protected",
				summary:    &Summary{Resources: 2, References: 1},
			},
		},
		"AnObservedUsageProtectsOnlyItsOwnEdge": {
			reason: "Edges a → b-c and a-b → c are two edges with a Usage each: the observed Usage of one protects nothing of the other.",
			state: state(Input{Protection: "Usages", Dependencies: []Dependency{{Resource: "a", DependsOn: []string{"b-c"}}, {Resource: "a-b", DependsOn: []string{"c"}}}}, nil, map[string]res{
				"a":   resource("v1", "Namespace", "a").uid("u1"),
				"b-c": resource("v1", "Namespace", "b-c").uid("u2"),
				"a-b": resource("v1", "Namespace", "a-b").uid("u3"),
				"c":   resource("v1", "Namespace", "c").uid("u4"),
				"usage-a-b-c": {
					"apiVersion": ProtectionAPI, "kind": "ClusterUsage",
					"metadata": map[string]any{"name": "u", "labels": map[string]any{UsageLabel: "true"}},
					"spec": map[string]any{
						"of": map[string]any{"apiVersion": "v1", "kind": "Namespace", "resourceRef": map[string]any{"name": "b-c"}},
						"by": map[string]any{"apiVersion": "v1", "kind": "Namespace", "resourceRef": map[string]any{"name": "a"}},
					},
				},
			}),
			want: want{
				edges:      []string{"a → b-c: protected (explicit)", "a-b → c: declared (explicit)"},
				observedAs: []string{"usage-a-b-c", ""},
			},
		},
		"NonObjectDependentGetsAUsageWhereTheStepWritesUsages": {
			reason: "An explicit edge of a resource that is no Object gets a Usage wherever the step writes Usages at all: here for the edges out of the composition.",
			state: state(Input{Protection: "Both", Dependencies: []Dependency{{Resource: "bucket", DependsOn: []string{"ns"}}}}, nil, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b").uid("u1"),
				"ns":     resource("v1", "Namespace", "ns").uid("u2"),
			}),
			want: want{
				edges: []string{"bucket → ns: declared (explicit)"},
				usages: []map[string]any{{
					"apiVersion": ProtectionAPI, "kind": "ClusterUsage", "metadata": map[string]any{},
					"spec": map[string]any{
						"of":     map[string]any{"apiVersion": "v1", "kind": "Namespace", "resourceRef": map[string]any{"name": "ns"}},
						"by":     map[string]any{"apiVersion": "s3.example.org/v1", "kind": "Bucket", "resourceRef": map[string]any{"name": "b"}},
						"reason": "bucket depends on ns (function-dependencies)", "replayDeletion": true,
					},
				}},
				results: []Result{{Normal, "Summary"}},
			},
		},
		"NonObjectDependentIsUnprotectedAndWarnedWithoutUsages": {
			reason: "A step that writes no Usage leaves an explicit edge of a resource that is no Object unprotected, and warns: a Usage by default would fail a composite on a stack without them.",
			state: state(Input{Dependencies: []Dependency{{Resource: "bucket", DependsOn: []string{"ns"}}}}, nil, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b").uid("u1"),
				"ns":     resource("v1", "Namespace", "ns").uid("u2"),
			}),
			want: want{
				edges:     []string{"bucket → ns: exposed (explicit)"},
				usages:    []map[string]any{},
				condition: "False UnprotectedEdges: nothing keeps referenced resources from being deleted before their dependents: bucket → ns",
				results:   []Result{{Warning, "UnprotectedDependencies"}},
			},
		},
		"MixedPendingProtectionsAreEachLabelled": {
			reason: "A pending Usage and a pending finalizer make ProtectionPending, each edge labelled with what protects it, state after state; the summary's pending edges are the finalizer's alone. Inference makes the step write Usages, and leaves the Objects' edges to their finalizers.",
			state: state(Input{Infer: []string{"ProviderConfigs"}, Dependencies: []Dependency{{Resource: "bucket", DependsOn: []string{"ns"}}}}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
				"bucket": resource("s3.example.org/v1", "Bucket", "b"),
				"ns":     resource("v1", "Namespace", "ns"),
			}, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b").uid("u1"),
				"ns":     resource("v1", "Namespace", "ns").uid("u2"),
				"shared": object("shared").uid("u-shared"),
			}),
			want: want{
				edges:     []string{"bucket → ns: declared (explicit)", "dep → shared: pending"},
				condition: "False ProtectionPending: finalizers and Usages are declared but not yet in force, or wait for what they protect to exist: bucket → ns (Usage), dep → shared (finalizer)",
				summary:   &Summary{Resources: 4, References: 2, Declared: 0, Pending: 1, UsagesAdded: 1},
			},
		},
		"AComposedUsageProtectsADeclaredEdge": {
			reason: "A Usage the composition composes itself that names the two ends protects the edge: no warning, and no Usage of the function's, whatever the step writes.",
			state: state(Input{Protection: "Usages", Dependencies: []Dependency{{Resource: "bucket", DependsOn: []string{"ns"}}}}, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b"),
				"ns":     resource("v1", "Namespace", "ns"),
				"keep":   clusterUsage("v1", "Namespace", map[string]any{"resourceRef": map[string]any{"name": "ns"}}, "s3.example.org/v1", "Bucket", map[string]any{"resourceRef": map[string]any{"name": "b"}}),
			}, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b").uid("u1"),
				"ns":     resource("v1", "Namespace", "ns").uid("u2"),
				"keep":   clusterUsage("v1", "Namespace", map[string]any{"resourceRef": map[string]any{"name": "ns"}}, "s3.example.org/v1", "Bucket", map[string]any{"resourceRef": map[string]any{"name": "b"}}).uid("u3"),
			}),
			want: want{
				edges:  []string{"bucket → ns: protected (explicit)"},
				usages: []map[string]any{},
			},
		},
		"AComposedUsageOfNoEdgeChangesNothing": {
			reason: "Without Usages, a composed Usage whose selector selects several resources protects no edge the function knows of: the declared edge is unprotected, and warned about.",
			state: state(Input{Dependencies: []Dependency{{Resource: "bucket", DependsOn: []string{"ns"}}}}, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b"),
				"ns":     resource("v1", "Namespace", "ns"),
				"other":  resource("v1", "Namespace", "other"),
				"keep":   clusterUsage("v1", "Namespace", map[string]any{"resourceSelector": map[string]any{"matchControllerRef": true}}, "s3.example.org/v1", "Bucket", map[string]any{"resourceRef": map[string]any{"name": "b"}}),
			}, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b").uid("u1"),
				"ns":     resource("v1", "Namespace", "ns").uid("u2"),
			}),
			want: want{
				edges:   []string{"bucket → ns: exposed (explicit)"},
				results: []Result{{Warning, "UnprotectedDependencies"}},
			},
		},
		"ExternalReferenceGetsANamespacedUsage": {
			reason: "With usages: External an existing Object's reference outside the composite gets a Usage in the dependent's namespace, naming the dependency's when it differs.",
			state: namespaced(state(Input{Protection: "Both"}, map[string]res{
				"dep": nsObject("app-dep").refs(entry("patchesFrom", "db", "apiVersion", "v1", "kind", "Secret", "namespace", "data")),
			}, map[string]res{"dep": nsObject("app-dep").inTeam().uid("u-dep")})),
			want: want{
				external: []string{"dep → Secret data/db: declared"},
				usages: []map[string]any{{
					"apiVersion": ProtectionAPI, "kind": "Usage", "metadata": map[string]any{"namespace": "team"},
					"spec": map[string]any{
						"of":     map[string]any{"apiVersion": "v1", "kind": "Secret", "resourceRef": map[string]any{"name": "db", "namespace": "data"}},
						"by":     map[string]any{"apiVersion": NamespacedObjectGroup + "/v1alpha1", "kind": "Object", "resourceRef": map[string]any{"name": "app-dep"}},
						"reason": "dep depends on Secret data/db (function-dependencies)", "replayDeletion": true,
					},
				}},
				results: []Result{{Normal, "Summary"}},
			},
		},
		"ClusterScopedEndsGetAClusterUsage": {
			reason: "Two cluster-scoped ends get a ClusterUsage, or with Crossplane v1's API its cluster-scoped Usage.",
			state: state(Input{Protection: "Both", UsageAPI: ApiextensionsAPI}, map[string]res{
				"dep": object("dep").refs(dependsOn("team", "apiVersion", "v1", "kind", "Namespace")),
			}, map[string]res{"dep": object("dep").uid("u-dep")}),
			want: want{usages: []map[string]any{{
				"apiVersion": ApiextensionsAPI, "kind": "Usage", "metadata": map[string]any{},
				"spec": map[string]any{
					"of":     map[string]any{"apiVersion": "v1", "kind": "Namespace", "resourceRef": map[string]any{"name": "team"}},
					"by":     map[string]any{"apiVersion": ClusterObjectGroup + "/v1alpha2", "kind": "Object", "resourceRef": map[string]any{"name": "dep"}},
					"reason": "dep depends on Namespace team (function-dependencies)", "replayDeletion": true,
				},
			}}},
		},
		"BothGivesAnObjectsEdgesAUsageAndKeepsTheirFinalizers": {
			reason: "With protection: Both an edge between Objects gets a Usage, which is what the edge reports, and its finalizer all the same: provider-kubernetes v0 deletes a referenced Object's remote object whatever finalizers keep the Object.",
			state: state(Input{Protection: "Both", UsageAPI: ApiextensionsAPI}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{"dep": object("dep").uid("u-dep"), "shared": object("shared").uid("u-shared")}),
			want: want{
				edges:      []string{"dep → shared: declared"},
				finalizers: map[string][]string{"dep": nil, "shared": {FinalizerPrefix + "u-dep"}},
				usages: []map[string]any{{
					"apiVersion": ApiextensionsAPI, "kind": "Usage", "metadata": map[string]any{},
					"spec": map[string]any{
						"of":     map[string]any{"apiVersion": ClusterObjectGroup + "/v1alpha2", "kind": "Object", "resourceRef": map[string]any{"name": "shared"}},
						"by":     map[string]any{"apiVersion": ClusterObjectGroup + "/v1alpha2", "kind": "Object", "resourceRef": map[string]any{"name": "dep"}},
						"reason": "dep depends on shared (function-dependencies)", "replayDeletion": true,
					},
				}},
			},
		},
		"BothFallsBackToTheFinalizerWhereNoUsageCan": {
			reason: "With protection: Both an edge no Usage of the API can express keeps its finalizer's protection, and the impossible Usage is a warning.",
			state: namespaced(state(Input{Protection: "Both", UsageAPI: ApiextensionsAPI}, map[string]res{
				"dep":    nsObject("dep").inTeam().refs(dependsOn("shared", "namespace", "team")),
				"shared": nsObject("shared").inTeam(),
			}, map[string]res{"dep": nsObject("dep").inTeam().uid("u-dep"), "shared": nsObject("shared").inTeam().uid("u-shared").fin(f("u-dep"))})),
			want: want{
				edges:      []string{"dep → shared: protected"},
				usages:     []map[string]any{},
				impossible: []string{"dep → shared"},
				results:    []Result{{Warning, "UsageImpossible"}},
			},
		},
		"NoUsageAcrossScopes": {
			reason: "No Usage can express a namespaced resource using a cluster-scoped one: a warning, and the edge stays unprotected.",
			state: namespaced(state(Input{Protection: "Both"}, map[string]res{
				"dep": nsObject("dep").refs(dependsOn("team", "apiVersion", "v1", "kind", "Namespace")),
			}, map[string]res{"dep": nsObject("dep").inTeam().uid("u-dep")})),
			want: want{
				external:   []string{"dep → Namespace team: exposed"},
				usages:     []map[string]any{},
				impossible: []string{"dep → Namespace team"},
				results:    []Result{{Warning, "UsageImpossible"}},
			},
		},
		"UsageOnlyOnceBothEndsExist": {
			reason: "A Usage is emitted once both ends exist; until then the edge is pending.",
			state: state(Input{Protection: "Usages", Dependencies: []Dependency{{Resource: "bucket", DependsOn: []string{"ns"}}}}, map[string]res{
				"bucket": resource("s3.example.org/v1", "Bucket", "b"),
				"ns":     resource("v1", "Namespace", "ns"),
			}, map[string]res{"ns": resource("v1", "Namespace", "ns").uid("u-ns")}),
			want: want{edges: []string{"bucket → ns: pending (explicit)"}, usages: []map[string]any{}},
		},
		"WaitForReadyReleasesAFanOutInOnePass": {
			reason: "With creation: WaitForReady every resource that doesn't exist yet and whose dependencies are all observed and ready is released at once; the others wait.",
			state: state(Input{Creation: "WaitForReady"}, map[string]res{
				"ns":   object("ns"),
				"cm":   object("cm"),
				"d1":   object("d1").refs(dependsOn("ns")),
				"d2":   object("d2").refs(dependsOn("ns")),
				"d3":   object("d3").refs(dependsOn("ns")),
				"late": object("late").refs(dependsOn("ns"), dependsOn("cm"), dependsOn("d1")),
			}, map[string]res{"ns": object("ns").uid("u-ns").ready(), "cm": object("cm").uid("u-cm")}),
			want: want{
				heldBack:   map[string]string{"late": "waits for cm, d1 to be ready"},
				finalizers: map[string][]string{"ns": nil, "cm": nil, "d1": nil, "d2": nil, "d3": nil},
				results:    []Result{{Normal, "HeldBack"}},
			},
		},
		"HeldBackUntilTheDependencyIsNamed": {
			reason: "An Object that doesn't exist yet, whose explicit dependency has no name yet, is held back; an existing one never is.",
			state: state(Input{Dependencies: []Dependency{{Resource: "new|old", DependsOn: []string{"unnamed"}}}}, map[string]res{
				"new":     object("new"),
				"old":     object("old"),
				"unnamed": object(""),
			}, map[string]res{"old": object("old").uid("u-old")}),
			want: want{
				heldBack:   map[string]string{"new": "waits for unnamed to be named, to reference it"},
				references: map[string][]Reference{},
				finalizers: map[string][]string{"old": nil, "unnamed": {f("u-old")}},
			},
		},
		"SummaryCountsFinalizersNotEdges": {
			reason: "Two Objects that claim one UID make two edges and one finalizer.",
			state: state(Input{}, map[string]res{
				"a":      object("a").refs(dependsOn("shared")),
				"b":      object("b").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{"a": object("a").uid("same"), "b": object("b").uid("same")}),
			want: want{summary: &Summary{Resources: 3, References: 2, Declared: 1, Added: 1}, finalizers: map[string][]string{"a": nil, "b": nil, "shared": {f("same")}}},
		},
		"AGoingDependentIsNoStaleFinalizer": {
			reason: "A dependent Crossplane is deleting is dropped from observed state; read from the Objects the function asked for, its finalizer is declared while carried, not stale.",
			state: func() State {
				s := state(Input{}, map[string]res{"shared": object("shared")}, map[string]res{"shared": object("shared").uid("u-shared").fin(f("u-going"))})
				going := object("going").uid("u-going").deleting().refs(dependsOn("shared"))
				going.md()["annotations"] = map[string]any{CompositionResourceName: "going"}
				going.md()["ownerReferences"] = []any{map[string]any{"uid": "u-app", "controller": true}}
				// Another composite's resource of the same composition
				// resource name, fetched by name, is none of this one's.
				theirs := object("theirs").uid("u-theirs").refs(dependsOn("shared"))
				theirs.md()["annotations"] = map[string]any{CompositionResourceName: "dep"}
				theirs.md()["ownerReferences"] = []any{map[string]any{"uid": "u-other", "controller": true}}
				s.Required = []map[string]any{going, theirs}
				return s
			}(),
			want: want{
				edges:      []string{"going → shared: releasing"},
				stale:      []string{},
				finalizers: map[string][]string{"shared": {f("u-going")}},
				asks:       []string{"u-going"},
			},
		},
		"AsksForObjectsOnlyWhenAFinalizerNamesAMissingObject": {
			reason: "A reconcile in which every reference finalizer names an observed Object asks for nothing.",
			state:  finalizerCarried(),
			want:   want{asks: []string{}},
		},
		"AsksForObjectsWhenAnOwnUsageIsUsedByAMissingObject": {
			reason: "Crossplane drops a dependent it deletes from observed state; while its Usage is observed, the function asks for the composite's Objects, so that the Usage stays until the dependent is gone.",
			state: func() State {
				u := res{"apiVersion": ProtectionAPI, "kind": "ClusterUsage", "metadata": map[string]any{"name": "u", "uid": "u-usage", "labels": map[string]any{UsageLabel: "true"}},
					"spec": map[string]any{"by": map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": ObjectKind, "resourceRef": map[string]any{"name": "going"}}}}
				return state(Input{Protection: "Both"}, map[string]res{"dep": object("dep")}, map[string]res{"dep": object("dep").uid("u-dep"), "usage": u})
			}(),
			want: want{unseenUsers: []string{"going"}},
		},
		"LabelsEveryDependentObject": {
			reason: "Each desired Object with an edge is labelled with the composite's UID, which Crossplane doesn't strip from a resource it deletes for leaving the composition.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{"dep": object("dep").uid("u-dep"), "shared": object("shared").uid("u-shared")}),
			want: want{labels: map[string]map[string]string{"dep": {DependentLabel: "u-app"}}},
		},
		"AnObjectTheProviderDoesNotManageYetIsPending": {
			reason: "An Object without the provider's own finalizer has references that don't all resolve: it would not release a finalizer declared for it, so none is, until the provider manages it.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared"), dependsOn("nowhere")),
				"shared": object("shared"),
			}, map[string]res{"dep": object("dep").uid("u-dep").unmanaged(), "shared": object("shared").uid("u-shared")}),
			want: want{edges: []string{"dep → shared: pending"}, finalizers: map[string][]string{"dep": nil, "shared": nil}},
		},
		"UnmatchedDependencyIsAWarning": {
			reason: "A pattern that matches nothing is a warning.",
			state:  state(Input{Dependencies: []Dependency{{Resource: "a", DependsOn: []string{"nothing-.*"}}}}, map[string]res{"a": object("a")}, nil),
			want:   want{edges: []string{}, results: []Result{{Warning, "UnmatchedDependency"}}},
		},
		"NoSummaryWhenNothingChanges": {
			reason: "A converged composition, every finalizer carried, every dependent labelled and the dependsOn the function writes already on the observed Object, changes nothing: no Summary result, and no result at all.",
			state:  converged(true),
			want:   protected([]Result{}),
		},
		"SummaryWhenAReferenceIsWritten": {
			reason: "The same composition, but the observed Object lacks the dependsOn the function writes: writing it is a change, so a Summary result, though every edge is protected.",
			state:  converged(false),
			want:   protected([]Result{{Normal, "Summary"}}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { tc.want.check(t, tc.reason, Expect(tc.state)) })
	}
}

// check checks the plan against what the case wants, field by field.
func (w want) check(t *testing.T, reason string, p *Plan) {
	t.Helper()
	check := func(what string, want, got any) {
		t.Helper()
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s\n%s: -want +got:\n%s", reason, what, diff)
		}
	}
	if w.edges != nil {
		check("edges", w.edges, edges(p))
	}
	if w.external != nil {
		var got []string
		for _, e := range p.External {
			got = append(got, fmt.Sprintf("%s → %s: %s", e.Dependent, e.Target.Describe(), e.State))
		}
		check("external", w.external, got)
	}
	if w.finalizers != nil {
		check("finalizers", w.finalizers, p.Finalizers)
	}
	if w.leftOut != nil {
		var got []string
		for _, l := range p.LeftOut {
			got = append(got, fmt.Sprintf("%s via %s: %s", l.Edge, l.Edge.Via, strings.Join(l.Cycle, " → ")))
		}
		check("left out", w.leftOut, got)
	}
	if w.condition != "" {
		status := map[bool]string{true: "True", false: "False"}[p.Condition.Status]
		check("condition", w.condition, status+" "+p.Condition.Reason+": "+p.Condition.Message())
	}
	if w.stale != nil {
		var got []string
		for _, s := range p.Stale {
			got = append(got, s.Resource+" "+s.Finalizer)
		}
		check("stale", w.stale, got)
	}
	if w.problems != nil {
		var got []string
		for _, pr := range p.Problems {
			s := pr.Resource + " " + pr.Field
			if pr.Both {
				s += " both"
			}
			got = append(got, s)
		}
		check("problems", w.problems, got)
	}
	if w.references != nil {
		check("references", w.references, p.References)
	}
	if w.heldBack != nil {
		got := map[string]string{}
		for n, h := range p.HeldBack {
			got[n] = h.String()
		}
		check("held back", w.heldBack, got)
	}
	if w.usages != nil {
		var got []map[string]any
		for _, u := range p.Usages {
			got = append(got, u.Manifest())
		}
		check("usages", w.usages, got)
	}
	if w.observedAs != nil {
		var got []string
		for _, u := range p.Usages {
			got = append(got, u.ObservedAs)
		}
		check("usages observed as", w.observedAs, got)
	}
	if w.impossible != nil {
		var got []string
		for _, u := range p.Impossible {
			got = append(got, u.Dependent+" → "+u.Dependency)
		}
		check("impossible usages", w.impossible, got)
	}
	if w.summary != nil {
		check("summary", *w.summary, p.Summary())
	}
	if w.summaryMessage != "" {
		check("summary message", w.summaryMessage, p.SummaryMessage())
	}
	if w.results != nil {
		check("results", w.results, p.Results())
	}
	if w.unseenUsers != nil {
		var got []string
		for _, a := range p.Asks {
			if a.Name != "" {
				got = append(got, a.Name)
			}
		}
		check("asks by name for", w.unseenUsers, got)
	}
	if w.labels != nil {
		check("labels", w.labels, p.Labels)
	}
	if w.asks != nil {
		var got []string
		if p.AsksForObjects() {
			got = p.Unseen
		}
		check("asks for Objects naming", w.asks, got)
	}
	if w.writes != nil {
		check("writes", *w.writes, p.Writes())
	}
}

// TestReadReference pins the reference rule on the entries whose reading is
// easy to get wrong.
func TestReadReference(t *testing.T) {
	for name, tc := range map[string]struct {
		entry    any
		want     Target
		ok, both bool
	}{
		"EmptyApiVersionIsDefaulted": {entry: dependsOn("a", "apiVersion", ""), ok: true,
			want: Target{Identity: Identity{Group: ClusterObjectGroup, Kind: ObjectKind, Name: "a"}, APIVersion: ClusterObjectGroup + "/v1alpha1", Via: "dependsOn"}},
		"CoreGroup": {entry: dependsOn("a", "apiVersion", "v1", "kind", "Secret"), ok: true,
			want: Target{Identity: Identity{Kind: "Secret", Name: "a"}, APIVersion: "v1", Via: "dependsOn"}},
		"NullPatchesFromFallsBackToDependsOn": {entry: map[string]any{"patchesFrom": nil, "dependsOn": map[string]any{"name": "a"}}, ok: true,
			want: Target{Identity: Identity{Group: ClusterObjectGroup, Kind: ObjectKind, Name: "a"}, APIVersion: ClusterObjectGroup + "/v1alpha1", Via: "dependsOn"}},
		"BothSetInvalidPatchesFrom": {entry: map[string]any{"patchesFrom": "x", "dependsOn": map[string]any{"name": "a"}}, both: true},
		"NameOfAnotherType":         {entry: map[string]any{"dependsOn": map[string]any{"name": 3.0}}},
		"TwoSlashes":                {entry: dependsOn("a", "apiVersion", "a/b/c")},
		"NotAnObject":               {entry: []any{"a"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok, both := ReadReference(ClusterObjectGroup, 0, tc.entry)
			if got != tc.want || ok != tc.ok || both != tc.both {
				t.Errorf("ReadReference(%v) = %+v, %t, %t; want %+v, %t, %t", tc.entry, got, ok, both, tc.want, tc.ok, tc.both)
			}
		})
	}
}

// TestExpectIsDeterministic checks that the oracle answers the same whatever
// the order of Go's maps: the tiers compare the function's ordered lists
// with its.
func TestExpectIsDeterministic(t *testing.T) {
	s := state(Input{OnCycle: "Warning"}, map[string]res{
		"a": object("a").refs(dependsOn("b")), "b": object("b").refs(dependsOn("c")), "c": object("c").refs(dependsOn("a"), dependsOn("d")), "d": object("d"),
	}, map[string]res{"a": object("a").uid("u-a"), "c": object("c").uid("u-c")})
	first := Expect(s)
	for range 20 {
		again := Expect(s)
		if !slices.Equal(edges(first), edges(again)) || !maps.EqualFunc(first.Finalizers, again.Finalizers, slices.Equal) ||
			first.Condition.Message() != again.Condition.Message() {
			t.Fatalf("Expect answers differently for one state: %v, %v", edges(first), edges(again))
		}
	}
}

// TestConditionMessage pins the condition's whole message: what the
// condition says, then ". " and the summary, whose verb says when desired
// state is left unchanged.
func TestConditionMessage(t *testing.T) {
	cases := map[string]struct {
		reason string
		state  State
		want   string
	}{
		"ProtectedThenTheSummary": {
			reason: "A True condition says every live reference is protected, without a count, then the summary.",
			state:  finalizerCarried(),
			want: "every live reference between composed resources is protected. " +
				"2 composed resources, 1 reference between them and none to external objects; nothing added",
		},
		"PendingEdgesThenTheSummary": {
			reason: "A False condition names its edges, then the summary counts the pending ones and the external references.",
			state: state(Input{}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared"), dependsOn("db", "apiVersion", "v1", "kind", "Secret", "namespace", "data")),
				"shared": object("shared"),
			}, nil),
			want: "finalizers are declared but not yet applied, or wait for their Object to exist: dep → shared. " +
				"2 composed resources, 1 reference between them and 1 to an external object, 1 of them unprotected; nothing added, 1 finalizer pending until its Object exists",
		},
		"ReportModeSaysWhatItWouldDeclare": {
			reason: "In Report mode the summary's finalizers are still to declare, and desired state is left unchanged.",
			state: state(Input{Mode: "Report"}, map[string]res{
				"dep":    object("dep").refs(dependsOn("shared")),
				"shared": object("shared"),
			}, map[string]res{"dep": object("dep").uid("u-dep")}),
			want: "referenced resources lack their dependents' finalizers: dep → shared. " +
				"2 composed resources, 1 reference between them and none to external objects; 1 reference finalizer to add (Report mode: desired state left unchanged)",
		},
		"AFatalCycleSaysWhatItWouldDeclare": {
			reason: "When a cycle fails the step the summary's finalizers are still to declare, and desired state is left unchanged.",
			state: state(Input{}, map[string]res{
				"a": object("a").refs(dependsOn("b")),
				"b": object("b").refs(dependsOn("a")),
			}, map[string]res{"a": object("a").uid("u-a"), "b": object("b").uid("u-b")}),
			want: "references form a cycle: a → b → a. " +
				"2 composed resources, 2 references between them and none to external objects; 2 reference finalizers to add (the cycle failed the step: desired state left unchanged)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Expect(tc.state)
			if diff := cmp.Diff(tc.want, p.ConditionMessage()); diff != "" {
				t.Errorf("%s\nConditionMessage(): -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(p.Condition.Message()+". "+p.SummaryMessage(), p.ConditionMessage()); diff != "" {
				t.Errorf("%s\nConditionMessage() is not Condition.Message() + \". \" + SummaryMessage(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWritesGraph pins the input's graph field: the graph goes into the
// context only when the input asks for it.
func TestWritesGraph(t *testing.T) {
	cases := map[string]struct {
		reason string
		input  map[string]any
		want   bool
	}{
		"NoneByDefault": {
			reason: "A step without input, or without the field, gets graph: None and writes no graph.",
			want:   false,
		},
		"None": {
			reason: "graph: None writes no graph.",
			input:  map[string]any{"graph": "None"},
			want:   false,
		},
		"Context": {
			reason: "graph: Context writes the graph into the context.",
			input:  map[string]any{"graph": "Context"},
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Expect(state(ReadInput(tc.input), nil, nil))
			if diff := cmp.Diff(tc.want, p.WritesGraph()); diff != "" {
				t.Errorf("%s\nWritesGraph(): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
