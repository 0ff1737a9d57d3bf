package loop

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestReconcileLoopScenarios runs compositions written by hand through the
// reconcile loop and the teardown, each the smallest that shows one behaviour,
// and checks them for every property TestReconcileLoop checks.
func TestReconcileLoopScenarios(t *testing.T) {
	inputOf := func(fields map[string]any) map[string]any {
		in := map[string]any{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"}
		for k, v := range fields {
			in[k] = v
		}
		return in
	}
	dependency := func(resource string, dependsOn ...string) any {
		list := make([]any, len(dependsOn))
		for i, d := range dependsOn {
			list[i] = d
		}
		return map[string]any{"resource": resource, "dependsOn": list}
	}
	shared := []loopSpec{{name: "shared", kind: loopClusterObject}}
	for i := range 10 {
		shared = append(shared, loopSpec{name: "dep-" + string(rune('a'+i)), kind: loopClusterObject, refs: []string{"shared"}})
	}
	cases := map[string]struct {
		namespaced bool
		input      map[string]any
		phases     [][]loopSpec
		changeAt   int
		// deleteExternals has a user delete the external objects when the
		// composite is deleted; slow makes every remote deletion take a step.
		deleteExternals, slow bool
		userDeletes           []loopUserDelete
	}{
		"EveryDependentOfASharedObjectGetsItsFinalizerDespiteTheRace": {
			phases: [][]loopSpec{shared},
		},
		"WaitForReadyCreatesAChainInOrderAndAFanOutInOnePass": {
			input: inputOf(map[string]any{"creation": "WaitForReady"}),
			phases: [][]loopSpec{{
				{name: "ns", kind: loopNamespace},
				{name: "config", kind: loopClusterObject, refs: []string{"ns"}},
				{name: "web-1", kind: loopClusterObject, refs: []string{"config"}},
				{name: "web-2", kind: loopClusterObject, refs: []string{"config"}},
				{name: "web-3", kind: loopClusterObject, refs: []string{"config"}},
			}},
		},
		"AUsageHoldsAnExternalSecretUntilItsUserIsGoneThenReplaysItsDeletion": {
			namespaced:      true,
			input:           inputOf(map[string]any{"protection": "Both"}),
			phases:          [][]loopSpec{{{name: "app", kind: loopNamespacedObject, refs: []string{"external:credentials"}}}},
			deleteExternals: true,
		},
		// Issue 13, bug 1: once observed, a Usage matched .* and got a
		// Usage of its own, one more on every reconcile.
		"UsagesBegetNoUsagesWithADependencyOnEverything": {
			namespaced: true,
			input:      inputOf(map[string]any{"protection": "Usages", "dependencies": []any{dependency(".*", "db")}}),
			phases:     [][]loopSpec{{{name: "app", kind: loopDeployment}, {name: "db", kind: loopConfigMap}}},
		},
		// Issue 13, bug 2: the Usages of a → b-c and a-b → c shared a name.
		"TheUsagesOfEdgesWhoseNamesJoinAlikeAreTwo": {
			namespaced: true,
			input:      inputOf(map[string]any{"protection": "Usages", "dependencies": []any{dependency("a", "b-c"), dependency("a-b", "c")}}),
			phases: [][]loopSpec{{
				{name: "a", kind: loopConfigMap}, {name: "a-b", kind: loopConfigMap}, {name: "b-c", kind: loopConfigMap}, {name: "c", kind: loopConfigMap},
			}},
		},
		// Issue 13, bug 3.
		"ADependencyAlreadyInSpecReferencesIsNotWrittenAgainWithReferencesIgnore": {
			input:  inputOf(map[string]any{"references": "Ignore", "dependencies": []any{dependency("app", "db")}}),
			phases: [][]loopSpec{{{name: "db", kind: loopConfigMap}, {name: "app", kind: loopClusterObject, refs: []string{"db"}}}},
		},
		// Issue 13, bug 4: one Object under two composition resource names.
		"TwoObjectsOfOneUIDCountOneFinalizer": {
			phases: [][]loopSpec{{{name: "db", kind: loopConfigMap}, {name: "app", kind: loopClusterObject, refs: []string{"db"}}, {name: "app-copy", copyOf: "app"}}},
		},
		// Issue 13, bug 6: Crossplane drops a removed resource from observed
		// state in the reconcile that deletes it, and removes its
		// crossplane.io/composite label first.
		"ADependentBeingDeletedAfterItsRemovalIsNotCalledStale": {
			phases:   [][]loopSpec{shared[:3], shared[:2]},
			changeAt: 4,
			slow:     true,
		},
		// The same when the dependent was the composition's last Object of
		// its API group: the function asks for the Objects of the groups the
		// composition still composes.
		"ADependentBeingDeletedAfterItsRemovalIsNotCalledStaleWhenItWasTheLastObjectOfItsGroup": {
			phases:   [][]loopSpec{{{name: "db", kind: loopConfigMap}, {name: "app", kind: loopClusterObject, refs: []string{"db"}}}, {{name: "db", kind: loopConfigMap}}},
			changeAt: 4,
			slow:     true,
		},
		// A Usage stays while its user, removed from the composition, is
		// still being deleted (here, held by an Object's finalizer), so that
		// what it uses is deleted after it.
		"AUsageStaysWhileItsRemovedUserIsStillBeingDeleted": {
			namespaced: true,
			input:      inputOf(map[string]any{"protection": "Usages", "dependencies": []any{dependency("worker", "app")}}),
			phases: [][]loopSpec{
				{{name: "app", kind: loopConfigMap}, {name: "worker", kind: loopSecret}, {name: "web", kind: loopNamespacedObject, refs: []string{"worker"}}},
				{{name: "app", kind: loopConfigMap}, {name: "web", kind: loopNamespacedObject, refs: []string{"worker"}}},
			},
			changeAt: 4,
		},
		// An Object the provider never reconciled has no finalizer of its
		// own, so it goes at once when deleted, and the provider never
		// removes its reference finalizer from what it references.
		"AnObjectWhoseReferencesNeverResolveLeavesNoFinalizerBehind": {
			phases: [][]loopSpec{{{name: "db", kind: loopConfigMap}, {name: "app", kind: loopClusterObject, refs: []string{"db", "external:not-composed"}}}},
		},
		// The provider removes an Object's reference finalizers from what
		// its spec.references name when it is deleted: a dependsOn the
		// function wrote and then dropped leaves its finalizer behind
		// (provider-kubernetes #28).
		"ADependencyRemovedWhileItsDependentLivesIsReleasedOnTeardown": {
			input:    inputOf(map[string]any{"dependencies": []any{dependency("app", "db")}}),
			phases:   [][]loopSpec{{{name: "db", kind: loopConfigMap}, {name: "app", kind: loopClusterObject}}, {{name: "app", kind: loopClusterObject}}},
			changeAt: 4,
		},
		// Issue 13, bug 6, once more: a cluster-scoped composite may compose
		// namespaced Objects, and here the removed dependent was its last.
		// The function asks for the Objects of the groups the composition
		// still composes, of the composite's own, which is the
		// cluster-scoped one, and of those its dependents' targets are
		// labelled with, which is the namespaced one.
		"ARemovedNamespacedObjectOfAClusterScopedCompositeIsNotCalledStale": {
			phases:   [][]loopSpec{{{name: "db", kind: loopConfigMap}, {name: "app", kind: loopNamespacedObject, refs: []string{"db"}}}, {{name: "db", kind: loopConfigMap}}},
			changeAt: 4,
			slow:     true,
		},
		// The removed Object was the cluster-scoped composite's last
		// namespaced one, and a live Object holds it: while it is deleted,
		// what it references must stay. The function asks for the Objects of
		// the groups its dependents use, remembered on their targets, never
		// only for the composite's own group. Three targets, so that the
		// provider's race (provider-kubernetes #371) leaves one of them with
		// only the finalizer the function declared.
		"WhatARemovedLastNamespacedObjectOfAClusterScopedCompositeReferencesGoesAfterIt": {
			phases: [][]loopSpec{
				{{name: "db-1", kind: loopConfigMap}, {name: "db-2", kind: loopConfigMap}, {name: "db-3", kind: loopConfigMap},
					{name: "app", kind: loopNamespacedObject, refs: []string{"db-1", "db-2", "db-3"}}, {name: "web", kind: loopClusterObject, refs: []string{"app"}}},
				{{name: "db-1", kind: loopConfigMap}, {name: "db-2", kind: loopConfigMap}, {name: "db-3", kind: loopConfigMap}, {name: "web", kind: loopClusterObject, refs: []string{"app"}}},
			},
			changeAt: 4,
		},
		// A Usage refuses a deletion; it can't undo one the API server has
		// accepted. Here someone deletes db (kept by an earlier step's
		// finalizer) right after the Usage of db by app is created, before
		// Crossplane's Usage controller marks db in use: the Usage is
		// observed from then on, and db still goes before app.
		"AUsageOfADependencyDeletedBeforeItTookHoldIsNoProtection": {
			namespaced:  true,
			input:       inputOf(map[string]any{"protection": "Usages", "dependencies": []any{dependency("app", "db")}}),
			phases:      [][]loopSpec{{{name: "app", kind: loopSecret}, {name: "db", kind: loopConfigMap, keep: true}}},
			userDeletes: []loopUserDelete{{after: 2, name: "db"}},
		},
		// Issue 26: a Usage orders what the inference rules find; none of
		// them is a reference finalizer, and none holds back creation.
		"AnObjectsProviderConfigGoesAfterItThroughAUsage": {
			input: inputOf(map[string]any{"infer": []any{"ProviderConfigs"}, "creation": "WaitForReady"}),
			phases: [][]loopSpec{{
				{name: "pc", kind: loopKubernetesProviderConfig},
				{name: "app", kind: loopClusterObject, fields: map[string]any{"spec.providerConfigRef": map[string]any{"name": "@pc"}}},
			}},
		},
		"TheWriterOfAProviderConfigsCredentialsGoesAfterIt": {
			namespaced: true,
			input:      inputOf(map[string]any{"infer": []any{"Credentials"}}),
			phases: [][]loopSpec{{
				{name: "pc", kind: loopNamespacedKubernetesProviderConfig, fields: map[string]any{"spec.credentials.secretRef": map[string]any{"name": "kubeconfig"}}},
				{name: "maker", kind: loopNamespacedObject, fields: map[string]any{"spec.forProvider.manifest": map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "kubeconfig"}}}},
			}},
		},
		"ASubnetRemovedBeforeItsVPCLeavesIt": {
			input: inputOf(map[string]any{"infer": []any{"ManagedReferences"}}),
			phases: [][]loopSpec{
				{{name: "vpc", kind: loopVPC}, {name: "subnet", kind: loopSubnet, fields: map[string]any{"spec.forProvider.vpcIdRef": map[string]any{"name": "@vpc"}}}},
				{{name: "vpc", kind: loopVPC}},
			},
			changeAt: 4,
		},
		// A …Ref naming no composed resource names nothing the function
		// orders: not every resource of the namespace.
		"AReferenceToNothingComposedMakesNoEdge": {
			input: inputOf(map[string]any{"infer": []any{"ManagedReferences"}}),
			phases: [][]loopSpec{{
				{name: "vpc", kind: loopVPC},
				{name: "subnet", kind: loopSubnet, fields: map[string]any{"spec.forProvider.vpcIdRef": map[string]any{"name": "elsewhere"}}},
			}},
		},
	}
	f := function(t)
	// In name order, so that each case's composite, and the provider's race
	// in it, is the same on every run.
	for index, name := range slices.Sorted(maps.Keys(cases)) {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			c := loopHandmade(index, tc.namespaced, tc.input, tc.phases...)
			c.changeAt, c.deleteExternals, c.slowRemoteDeletion, c.userDeletes = tc.changeAt, tc.deleteExternals, tc.slow, tc.userDeletes
			r := loopRunComposition(f, c, 371)
			if len(r.violations) > 0 {
				t.Errorf("broken: %v\n%s", r.broken(), r.report(""))
			}
		})
	}
}

// A loopSpec is a resource of a composition written by hand: its name, kind
// and the composition resource names it references ("external:<name>" for
// an object the composite doesn't compose), or the resource it is a copy of;
// keep gives it an earlier step's finalizer, which keeps it while the
// composite lives once it is deleted.
type loopSpec struct {
	name   string
	kind   *loopKind
	refs   []string
	copyOf string
	keep   bool
	// fields are set in its body by dotted path; a string "@<name>" is the
	// metadata.name of the resource of that composition resource name.
	fields map[string]any
}

// The kinds of the inference scenarios.
var (
	loopKubernetesProviderConfig           = &loopKind{[]string{"kubernetes.crossplane.io/v1alpha1"}, "ProviderConfig", false}
	loopNamespacedKubernetesProviderConfig = &loopKind{[]string{"kubernetes.m.crossplane.io/v1alpha1"}, "ProviderConfig", true}
	loopVPC                                = &loopKind{[]string{"ec2.aws.upbound.io/v1beta1"}, "VPC", false}
	loopSubnet                             = &loopKind{[]string{"ec2.aws.upbound.io/v1beta1"}, "Subnet", false}
)

// loopNamed replaces each string "@<name>" in v by the metadata.name of the
// resource of that composition resource name.
func loopNamed(v any, made map[string]*loopResource) any {
	switch v := v.(type) {
	case string:
		if name, ok := strings.CutPrefix(v, "@"); ok {
			return made[name].objName
		}
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = loopNamed(e, made)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = loopNamed(e, made)
		}
		return out
	}
	return v
}

// loopHandmade makes a composition of the specs: explicit names, every
// reference in full, a readiness delay of 1.
func loopHandmade(index int, namespaced bool, input map[string]any, phases ...[]loopSpec) *loopComposition {
	c := &loopComposition{index: index, namespaced: namespaced, xrName: fmt.Sprintf("xr%d", index), input: input,
		externals: loopExternals(namespaced), delays: map[string]int{}, features: map[string]bool{}}
	made := map[string]*loopResource{}
	for _, specs := range phases {
		var phase []*loopResource
		for _, s := range specs {
			if r, ok := made[s.name]; ok {
				phase = append(phase, r)
				continue
			}
			var r *loopResource
			if s.copyOf != "" {
				copied := *made[s.copyOf]
				copied.name = s.name
				r = &copied
			} else {
				r = &loopResource{name: s.name, kind: s.kind, apiVersion: s.kind.apiVersions[0], objName: c.xrName + "-" + s.name}
				if s.kind.namespaced && !namespaced {
					r.namespace = "ns-a"
				}
				for _, to := range s.refs {
					r.refs = append(r.refs, c.fullReference(made[to], to))
				}
				if s.keep {
					r.finalizers = []string{xpOtherFinalizer}
				}
				for path, v := range s.fields {
					r.set(path, loopNamed(v, made))
				}
			}
			c.delays[s.name] = 1
			made[s.name] = r
			phase = append(phase, r)
		}
		c.phases = append(c.phases, phase)
	}
	return c
}
