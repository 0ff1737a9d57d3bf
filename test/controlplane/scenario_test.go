//go:build controlplane

package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The composite resource type of the scenario.
const (
	xrGroup      = "race.fn.example.org"
	xrAPIVersion = xrGroup + "/v1alpha1"
	xrKind       = "XRace"
)

var gvrXR = schema.GroupVersionResource{Group: xrGroup, Version: "v1alpha1", Resource: "xraces"}

// refFinalizerPrefix starts the finalizer provider-kubernetes puts on an
// object for each Object that references it; the dependent Object's UID
// follows.
const refFinalizerPrefix = "kubernetes.crossplane.io/referred-by-object-"

// Bounds of the scenario.
const (
	// settleWithout bounds how long the arm without the function waits for
	// every Object to be Ready and for the finalizers to stop changing.
	settleWithout = 150 * time.Second
	// convergeWith bounds how long the function may take to get every
	// finalizer onto the shared Object.
	convergeWith = 90 * time.Second
	// teardownWithout bounds how long the arm without the function watches
	// its XR's deletion; whatever is still going then goes on beside the
	// next XR.
	teardownWithout = 3 * time.Minute
)

// TestReferenceFinalizers reproduces provider-kubernetes #371 on a real
// control plane, then shows that function-dependencies closes it: one shared
// Object (a Namespace) and N dependent Objects (ConfigMaps in it) that
// reference it, composed by function-patch-and-transform, made Ready by
// function-auto-ready, with and without function-dependencies in between.
//
// Without the function, the provider's own finalizers go missing under
// parallel reconciles, how many varies from XR to XR: that arm logs the
// count of each, and checks only that the race showed in at least one of its
// XRs (raceShown), without which the arm with the function would prove
// nothing. Its teardown is a measurement, not a check: how early the shared
// Namespace begins terminating depends on which finalizers the race left,
// and is logged. Its XRs run one after another, alone on the stack. With the
// function, every finalizer must be there, stay there, and order deletion;
// those XRs run side by side (withFunctionSideBySide).
func TestReferenceFinalizers(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_DEPENDENTS", 30)
	// The race shows some of the time: measure it over several XRs. With
	// every finalizer in place, the provider's conflicting finalizer
	// removals make each XR's teardown take one to ten minutes.
	runsWithout := envInt(t, "FD_CONTROLPLANE_RUNS_WITHOUT", 3)
	runsWith := envInt(t, "FD_CONTROLPLANE_RUNS_WITH", 2)

	s := startStack(ctx, t)
	s.createXRD(ctx)
	s.create(ctx, gvrComposition, "", composition("race-without", n, false))
	// Each XR with the function has a Composition of its own
	// (withFunctionSideBySide), created now, so that its revision is there
	// by the time the XR is: an XR created first gets a Warning.
	for i := 1; i <= runsWith; i++ {
		s.create(ctx, gvrComposition, "", composition(fmt.Sprintf("race-with-%d", i), n, true))
	}

	scenario := time.Now()
	var without []arm
	present := map[string]int{}
	for i := 1; i <= runsWithout; i++ {
		a := s.withoutFunction(ctx, fmt.Sprintf("without-%d", i), n)
		without = append(without, a)
		present[a.xr] = a.finalizers
	}
	if err := raceShown(n, present); err != nil {
		t.Error("ERROR:", err)
	}
	with := s.withFunctionSideBySide(ctx, runsWith, n)

	t.Logf("SUMMARY (%d dependents referencing one shared Object, provider-kubernetes v1.2.1 at its default --max-reconcile-rate=100, Crossplane v2.4.0):", n)
	for _, a := range without {
		if !a.deletion.terminated {
			t.Logf("  without function-dependencies, %s: %d/%d finalizers on the shared Object after settling (%d missing, settled %s after creation); the shared Namespace didn't begin terminating within %s of deleting the XR",
				a.xr, a.finalizers, n, n-a.finalizers, a.converged.Round(100*time.Millisecond), teardownWithout)
			continue
		}
		t.Logf("  without function-dependencies, %s: %d/%d finalizers on the shared Object after settling (%d missing, settled %s after creation); on deletion the shared Namespace began terminating with %d/%d remote ConfigMaps and %d/%d dependent Objects still present; teardown %s (%d finalizer-removal conflicts)",
			a.xr, a.finalizers, n, n-a.finalizers, a.converged.Round(100*time.Millisecond), a.deletion.configMapsLeft, n, a.deletion.objectsLeft, a.deletion.dependents, a.deletion.gone.Round(100*time.Millisecond), a.deletion.conflicts)
	}
	for _, a := range with {
		t.Logf("  with function-dependencies, %s: %d/%d finalizers %s after creation; on deletion the shared Namespace began terminating with %d/%d remote ConfigMaps and %d/%d dependent Objects still present; teardown %s (%d finalizer-removal conflicts)",
			a.xr, a.finalizers, n, a.converged.Round(100*time.Millisecond), a.deletion.configMapsLeft, a.deletion.dependents, a.deletion.objectsLeft, a.deletion.dependents, a.deletion.gone.Round(100*time.Millisecond), a.deletion.conflicts)
	}
	if runsWith > 1 {
		t.Logf("  the XRs with the function ran side by side: each one's finalizer-removal conflicts, counted in the provider's log, include the others' while they overlapped")
	}
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start: %s)", time.Since(scenario).Round(time.Second), time.Since(wall).Round(time.Second))
}

// arm is what one XR measured.
type arm struct {
	xr         string
	finalizers int
	converged  time.Duration
	deletion   deletion
}

// raceShown returns an error unless provider-kubernetes #371 showed in at
// least one of the runs without the function, each of n dependents, named
// with the count of their finalizers on the shared Object once it settled:
// at least one dependent's missing. A scenario the race spares proves
// nothing about the function's fix, which must then be told, not passed: the
// provider may have changed, or the dependents be too few to race. It is a
// check that doesn't flake because the race, whose toll varies, has never
// come near sparing a whole run: every run recorded, of 20 or 30 dependents
// created at once, kept at most 5 of their finalizers, on both stacks and in
// the Operation test alike. Without runs, it has nothing to check.
func raceShown(n int, present map[string]int) error {
	for _, p := range present {
		if p < n {
			return nil
		}
	}
	if len(present) == 0 {
		return nil
	}
	return fmt.Errorf("provider-kubernetes #371 did not show in %s: all %d dependents' finalizers reached the shared Object in each, so the runs with the function prove nothing about its fix; the provider may have changed, or %d dependents may be too few to race",
		strings.Join(slices.Sorted(maps.Keys(present)), ", "), n, n)
}

// withoutFunction creates an XR whose pipeline lacks function-dependencies,
// waits for the system to settle and counts the finalizers the provider
// managed to add, then deletes the XR and records the order.
func (s *stack) withoutFunction(ctx context.Context, xr string, n int) arm {
	t := s.t
	created := s.createXR(ctx, xr, "race-without")
	a := arm{xr: xr}
	c := s.settle(ctx, xr, n, created, &a)
	t.Logf("%s (no function-dependencies): %d of %d dependents' finalizers on the shared Object once settled (%s after creating the XR); owners of the reference finalizers: %s",
		xr, a.finalizers, n, a.converged.Round(100*time.Millisecond), finalizerOwners(c.shared))
	if a.finalizers == n {
		t.Logf("%s: #371 did not show in this run: the provider added all %d finalizers itself", xr, n)
	} else {
		t.Logf("%s: #371 reproduced: %d dependents have no finalizer on the shared Object, so it may be deleted before them", xr, n-a.finalizers)
	}

	a.deletion = s.deleteXR(ctx, xr, n, teardownWithout)
	if len(a.deletion.left) > 0 {
		t.Logf("%s: still tearing down %s after deleting the XR, carrying on: %s", xr, teardownWithout, strings.Join(a.deletion.left, "; "))
	}
	return a
}

// settle waits until every Object of the XR is Synced and Ready and the
// shared Object's finalizers have been unchanged for ten seconds, recording
// in a how many dependents' finalizers it carries and when they last
// changed. The provider never retries a lost finalizer (#371), so the count
// can't grow after that.
func (s *stack) settle(ctx context.Context, xr string, n int, created time.Time, a *arm) composed {
	last, since := "\x00", time.Now()
	err := s.poll(ctx, settleWithout, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, err := s.composed(ctx, xr, n)
		if err != nil {
			return false, err
		}
		if notReady := c.notReady(); len(notReady) > 0 {
			return false, fmt.Errorf("Objects not yet Synced and Ready: %s", strings.Join(notReady, ", "))
		}
		now := strings.Join(c.shared.GetFinalizers(), ",")
		if now != last {
			last, since = now, time.Now()
			a.finalizers = c.protected()
			a.converged = time.Since(created)
		}
		return time.Since(since) >= 10*time.Second, fmt.Errorf("every Object Synced and Ready; the shared Object's finalizers (%d of %d dependents') last changed %s ago, want 10s unchanged",
			a.finalizers, n, time.Since(since).Round(100*time.Millisecond))
	})
	if err != nil {
		s.t.Fatalf("ERROR: %s: the Objects didn't settle: %v", xr, err)
	}
	c, err := s.composed(ctx, xr, n)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	return c
}

// withFunctionSideBySide runs the XRs with the function, runs of them, side
// by side: each has a composition of its own, race-with-I for XR with-I
// (created beforehand), and the last removes a dependent from its own.
// Their teardowns, which wait on the provider's backoffs for minutes, then
// overlap. The runs without the function ran alone before, so the count of
// finalizers the provider loses is still measured with nothing beside it.
func (s *stack) withFunctionSideBySide(ctx context.Context, runs, n int) []arm {
	var fns []func(context.Context) arm
	for i := 1; i <= runs; i++ {
		xr := fmt.Sprintf("with-%d", i)
		fns = append(fns, func(ctx context.Context) arm { return s.withFunction(ctx, xr, "race-"+xr, n, i == runs) })
	}
	return sideBySide(ctx, fns...)
}

// sideBySide runs each of fns in a goroutine of its own and returns what
// they return, in their order, once all have returned.
//
// A Fatal in one of them ends its goroutine (runtime.Goexit) and fails the
// test; the others go on. A Fatal of the test's own goroutine while they run
// cancels them and waits for them to end, so none outlives the test.
func sideBySide(ctx context.Context, fns ...func(context.Context) arm) []arm {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	arms := make([]arm, len(fns))
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arms[i] = fn(ctx)
		}()
	}
	wg.Wait()
	return arms
}

// withFunction creates an XR whose pipeline runs function-dependencies and
// asserts that every dependent's finalizer reaches the shared Object, stays
// there, and that deleting the XR deletes every dependent's remote object
// before the shared one, leaving nothing behind. With removal, it first
// removes a dependent from the composition and asserts that its finalizer
// leaves the shared Object for good.
func (s *stack) withFunction(ctx context.Context, xr, comp string, n int, removal bool) arm {
	a := s.convergeWith(ctx, xr, comp, n)
	dependents := n
	if removal {
		s.removeDependent(ctx, xr, comp, n)
		dependents = n - 1
	}
	s.deleteOrdered(ctx, &a, dependents)
	return a
}

// convergeWith creates an XR of comp, a composition with the function, and
// asserts that every dependent's finalizer gets onto the shared Object, the
// XR reports its deletion ordered, and the finalizers stay.
func (s *stack) convergeWith(ctx context.Context, xr, comp string, n int) arm {
	t := s.t
	created := s.createXR(ctx, xr, comp)
	a := arm{xr: xr}
	c := s.converge(ctx, xr, n, created, &a)
	t.Logf("%s (with function-dependencies): %d of %d dependents' finalizers on the shared Object %s after creating the XR; owners: %s",
		xr, a.finalizers, n, a.converged.Round(100*time.Millisecond), finalizerOwners(c.shared))

	s.awaitDeletionOrdered(ctx, xr, created)

	// Level-triggered: the finalizers must stay.
	if err := s.hold(ctx, 10*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		c, err := s.composed(ctx, xr, n)
		if err != nil {
			return err
		}
		if p := c.protected(); p != n {
			return fmt.Errorf("only %d of %d finalizers left on the shared Object", p, n)
		}
		return nil
	}); err != nil {
		t.Errorf("ERROR: %s: the finalizers didn't stay: %v", xr, err)
	}
	return a
}

// deleteOrdered deletes the XR of a, whose shared Object has dependents, and
// asserts that the shared Namespace began terminating only after every
// dependent's ConfigMap was gone, and that nothing was left behind.
func (s *stack) deleteOrdered(ctx context.Context, a *arm, dependents int) {
	t, xr := s.t, a.xr
	s.logWarnings(ctx, xr)

	a.deletion = s.deleteXR(ctx, xr, dependents, teardown(dependents))
	d := a.deletion
	if !d.terminated {
		t.Errorf("ERROR: %s: the shared Namespace never began terminating within %s", xr, teardown(dependents))
	}
	if d.configMapsLeft > 0 {
		t.Errorf("ERROR: %s: the shared Namespace began terminating while %d of %d dependents' remote ConfigMaps still existed: %s",
			xr, d.configMapsLeft, dependents, strings.Join(d.configMapsLeftNames, ", "))
	}
	if d.objectsLeft > 0 {
		// Each of these had already deleted its ConfigMap and released the
		// shared Object, which is what the finalizer protects; the provider
		// removes an Object's own finalizer right after the reference ones,
		// so the shared Object's reconcile can start in between.
		t.Logf("%s: note: %d dependent Objects had released the shared Object but not yet disappeared when its Namespace began terminating: %s",
			xr, d.objectsLeft, strings.Join(d.objectsLeftNames, ", "))
	}
	if len(d.left) > 0 {
		t.Errorf("ERROR: %s: left behind %s after deleting the XR: %s", xr, teardown(dependents), strings.Join(d.left, "; "))
	}
}

// converge waits until every dependent's finalizer is on the shared Object,
// recording in a how long that took, and fails the test if it takes longer
// than convergeWith.
func (s *stack) converge(ctx context.Context, xr string, n int, created time.Time, a *arm) composed {
	var c composed
	err := s.poll(ctx, convergeWith, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		if c, err = s.composed(ctx, xr, n); err != nil {
			return false, err
		}
		a.finalizers = c.protected()
		return a.finalizers == n, fmt.Errorf("%d of %d finalizers on the shared Object", a.finalizers, n)
	})
	a.converged = time.Since(created)
	if err != nil {
		s.t.Fatalf("ERROR: %s (with function-dependencies): every dependent's finalizer should be on the shared Object within %s: %v", xr, convergeWith, err)
	}
	return c
}

// logWarnings logs the Warning events of the XR: the function's warnings
// reach the XR as events.
func (s *stack) logWarnings(ctx context.Context, xr string) {
	events, err := s.client.Resource(gvrEvent).Namespace("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + xr + ",type=Warning"})
	if err != nil {
		s.t.Fatalf("ERROR: cannot list the events of %s: %v", xr, err)
	}
	for _, e := range events.Items {
		reason, _, _ := unstructured.NestedString(e.Object, "reason")
		message, _, _ := unstructured.NestedString(e.Object, "message")
		count, _, _ := unstructured.NestedInt64(e.Object, "count")
		s.t.Logf("%s: Warning event %s (x%d): %s", xr, reason, count, message)
	}
	if len(events.Items) == 0 {
		s.t.Logf("%s: no Warning events", xr)
	}
}

// awaitDeletionOrdered asserts that the XR's DeletionOrdered condition turns
// True.
//
// The condition is the one the XR's last reconcile wrote. The function
// declares a dependent's finalizer only once provider-kubernetes manages the
// Object, so the finalizers come in a few reconciles as the provider takes
// the Objects on (all 30 within about 2 s), and the condition turns True on
// the reconcile after the last of them. Crossplane's circuit breaker, open
// for every XR of this test with or without the function (its log says so),
// holds that reconcile back for up to a minute or so, hence the wait.
func (s *stack) awaitDeletionOrdered(ctx context.Context, xr string, since time.Time) {
	// The XR as last read: a failed read, whose error poll reports, leaves
	// it as it was, never nil.
	u := obj(map[string]any{})
	err := s.poll(ctx, 3*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		got, err := s.client.Resource(gvrXR).Get(ctx, xr, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		u = got
		return conditionTrue(u, "DeletionOrdered"), nil
	})
	if err != nil {
		s.t.Errorf("ERROR: %s: the DeletionOrdered condition should turn True: %v; %s", xr, err, describeCondition(u, "DeletionOrdered"))
		return
	}
	s.t.Logf("%s: %s (%s after creating the XR); %s", xr, describeCondition(u, "DeletionOrdered"), time.Since(since).Round(100*time.Millisecond), describeCondition(u, "Ready"))
}

// removeDependent removes the last dependent from comp, its composition, while the
// XR lives, and asserts that its finalizer leaves the shared Object and is
// never added again.
func (s *stack) removeDependent(ctx context.Context, xr, comp string, n int) {
	t := s.t
	c, err := s.composed(ctx, xr, n)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	removed := c.dependents[len(c.dependents)-1]
	finalizer := refFinalizerPrefix + string(removed.GetUID())
	if !slices.Contains(c.shared.GetFinalizers(), finalizer) {
		t.Fatalf("ERROR: %s: the shared Object lacks %s before the removal", xr, finalizer)
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rec := &recorder{}
	s.watch(wctx, rec, "Object", s.client.Resource(gvrObject), metav1.ListOptions{FieldSelector: "metadata.name=" + c.shared.GetName()})
	// How the removed dependent goes, labels included: a function that asks
	// for the composite's Objects by label finds only those that carry it.
	recRemoved := &recorder{}
	s.watch(wctx, recRemoved, "Object", s.client.Resource(gvrObject), metav1.ListOptions{FieldSelector: "metadata.name=" + removed.GetName()})

	// The events the XR has so far, to tell the ones the removal raises.
	xrObj, err := s.client.Resource(gvrXR).Get(ctx, xr, metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	eventsBefore, err := s.eventsOf(ctx, xrObj.GetUID())
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	staleLogged := s.crossplaneLines(staleFinalizerLogged, `Name:"`+xr+`"`)

	begin := time.Now()
	compObj, err := s.client.Resource(gvrComposition).Get(ctx, comp, metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	pipeline, _, _ := unstructured.NestedSlice(compObj.Object, "spec", "pipeline")
	step := pipeline[0].(map[string]any)
	resources := step["input"].(map[string]any)["resources"].([]any)
	step["input"].(map[string]any)["resources"] = resources[:len(resources)-1]
	must(t, unstructured.SetNestedSlice(compObj.Object, pipeline, "spec", "pipeline"))
	if _, err := s.client.Resource(gvrComposition).Update(ctx, compObj, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("ERROR: cannot remove %s from the composition: %v", removed.GetName(), err)
	}

	var released time.Duration
	if err := s.poll(ctx, 120*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := s.client.Resource(gvrObject).Get(ctx, removed.GetName(), metav1.GetOptions{})
		if err == nil {
			return false, fmt.Errorf("%s still exists", removed.GetName())
		}
		if !kerrors.IsNotFound(err) {
			return false, err
		}
		shared, err := s.client.Resource(gvrObject).Get(ctx, c.shared.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		released = time.Since(begin)
		return !slices.Contains(shared.GetFinalizers(), finalizer), fmt.Errorf("%s is gone, but its finalizer is still on the shared Object", removed.GetName())
	}); err != nil {
		t.Fatalf("ERROR: %s: after removing %s from the composition: %v", xr, removed.GetName(), err)
	}
	// Several reconciles of the XR happen in this time: realtime
	// compositions reconcile it whenever a composed resource changes.
	time.Sleep(15 * time.Second)
	stop()

	s.logRemoval(xr, removed.GetName(), begin, recRemoved)
	s.assertNoStaleFinalizerWarning(ctx, xr, xrObj.GetUID(), removed.GetName(), eventsBefore, staleLogged)

	changes, werr := rec.result()
	if werr != nil {
		t.Fatalf("ERROR: watching the shared Object: %v", werr)
	}
	gone := -1
	var timeline []string
	for i, ch := range changes {
		has := slices.Contains(ch.finalizers, finalizer)
		timeline = append(timeline, fmt.Sprintf("%s: %d reference finalizers, the removed one's %s", ch.at.Sub(begin).Round(10*time.Millisecond), refFinalizers(ch.finalizers), map[bool]string{true: "present", false: "absent"}[has]))
		switch {
		case !has && gone < 0:
			gone = i
		case has && gone >= 0:
			t.Errorf("ERROR: %s: the removed dependent's finalizer %s came back on the shared Object at resourceVersion %d, %s after it had left",
				xr, finalizer, ch.rv, ch.at.Sub(changes[gone].at).Round(time.Millisecond))
			gone = -1
		}
	}
	t.Logf("%s: removed %s from the composition: the Object was gone and its finalizer off the shared Object %s later; watched the shared Object for 15 s more; its changes after the removal: %s",
		xr, removed.GetName(), released.Round(100*time.Millisecond), strings.Join(timeline, "; "))

	after, err := s.composed(ctx, xr, n-1)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	if p := after.protected(); p != n-1 {
		t.Errorf("ERROR: %s: after the removal, %d of the %d remaining dependents' finalizers are on the shared Object", xr, p, n-1)
	}
	s.awaitDeletionOrdered(ctx, xr, begin)
}

// logRemoval logs how a dependent removed from the composition went: when
// it lost the crossplane.io/composite label, began deleting and was gone.
func (s *stack) logRemoval(xr, removed string, begin time.Time, rec *recorder) {
	changes, err := rec.result()
	if err != nil {
		s.t.Fatalf("ERROR: watching %s: %v", removed, err)
	}
	var unlabelled, deleting, gone string
	for _, ch := range changes {
		at := fmt.Sprintf("%s (revision %d)", ch.at.Sub(begin).Round(10*time.Millisecond), ch.rv)
		if _, ok := ch.labels["crossplane.io/composite"]; !ok && unlabelled == "" {
			unlabelled = at
		}
		if ch.deleting && deleting == "" {
			deleting = at
		}
		if ch.deleted {
			gone = at
		}
	}
	s.t.Logf("%s: the removed dependent %s, after its removal from the composition: crossplane.io/composite label gone %s, deleting %s, gone %s",
		xr, removed, orNever(unlabelled), orNever(deleting), orNever(gone))
}

func orNever(at string) string {
	if at == "" {
		return "never"
	}
	return at
}

// staleFinalizerLogged is in the line Crossplane's event broadcaster logs
// (--debug) for every StaleFinalizer event it is asked to record, before the
// recorder's spam filter can drop it; the line names the object as
// Name:"<name>".
const staleFinalizerLogged = "reason: 'StaleFinalizer'"

// assertNoStaleFinalizerWarning asserts that removing a dependent from the
// composition raised no StaleFinalizer Warning on the XR: the removed
// dependent's finalizer is going with it, and calling it stale is a false
// alarm (issue 13, bug 6). It reads the events from the API server, and
// Crossplane's log as a second witness, because the event recorder's spam
// filter may drop an XR's Warnings once it has had many.
func (s *stack) assertNoStaleFinalizerWarning(ctx context.Context, xr string, uid types.UID, removed string, before []objectEvent, staleLoggedBefore int) {
	t := s.t
	after, err := s.eventsOf(ctx, uid)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	var warnings, stale []string
	for _, e := range raised(before, after) {
		if e.typ != "Warning" {
			continue
		}
		warnings = append(warnings, e.String())
		if e.reason == "StaleFinalizer" {
			stale = append(stale, e.String())
		}
	}
	warningsBefore := int64(0)
	for _, e := range before {
		if e.typ == "Warning" && e.api == "v1" {
			warningsBefore += e.count
		}
	}
	logged := s.crossplaneLines(staleFinalizerLogged, `Name:"`+xr+`"`) - staleLoggedBefore
	t.Logf("%s: while %s was removed from the composition and deleted: %d Warning events raised on the XR (it had %d before): %s; Crossplane logged %d StaleFinalizer results for it",
		xr, removed, len(warnings), warningsBefore, orNone(warnings), logged)
	if len(stale) > 0 {
		t.Errorf("ERROR: %s: removing %s from the composition raised a StaleFinalizer Warning on the XR while it was being deleted (a false alarm: its finalizer is going with it): %s",
			xr, removed, strings.Join(stale, "; "))
	} else if logged > 0 {
		t.Errorf("ERROR: %s: removing %s from the composition made Crossplane record %d StaleFinalizer Warnings on the XR (in its log; the API server has none, so the event recorder dropped them)",
			xr, removed, logged)
	}
}

func orNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, "; ")
}

// deletion is what deleting an XR showed.
type deletion struct {
	dependents int
	// terminated is whether the shared Namespace began terminating.
	terminated bool
	// configMapsLeft counts the dependents' remote ConfigMaps that still
	// existed when the shared Namespace began terminating.
	configMapsLeft      int
	configMapsLeftNames []string
	// objectsLeft counts the dependent Objects that still existed then.
	objectsLeft      int
	objectsLeftNames []string
	// sharedGone is how long until the shared Object was gone, or 0 if
	// it wasn't.
	sharedGone time.Duration
	// gone is how long until nothing was left, or the bound.
	gone time.Duration
	// left describes what was left when the bound passed.
	left []string
	// conflicts counts the provider's failed Updates removing a reference
	// finalizer from the shared Object.
	conflicts int
	// timeline is the deletion as the API server's watches showed it.
	timeline timeline
}

// teardown bounds how long deleting an XR whose shared Object carries n
// reference finalizers may take until nothing is left. Each dependent
// removes its finalizer from the shared Object with a full Update; deleted
// all at once, they conflict with each other, and provider-kubernetes
// retries each with exponential backoff capped at a minute and no jitter, so
// that they go on colliding in lockstep and about one finalizer comes off per
// minute at worst.
func teardown(n int) time.Duration {
	return 4*time.Minute + time.Duration(n)*65*time.Second
}

// removeConflict is how provider-kubernetes logs a conflict removing a
// reference finalizer (with --debug).
const removeConflict = "cannot remove finalizer from referenced resource: Operation cannot be fulfilled"

// How Crossplane core logs its webhook refusing a deletion a Usage blocks,
// and its Usage controller replaying one.
const (
	usageRefused  = "found, deletion not allowed"
	usageReplayed = "Replaying deletion of the used resource"
)

// reconcilingObjectsOf is how provider-kubernetes (with --debug) logs the
// start of a reconcile of one of the XR's Objects, all named after it.
func reconcilingObjectsOf(xr string) string {
	return "Reconciling\t{\"controller\": \"managed/object.kubernetes.crossplane.io\", \"request\": {\"name\":\"" + xr + "-"
}

// deleteXR deletes the XR, records every change of its Objects, the shared
// Namespace and the ConfigMaps in it from the API server's watches, and
// waits until nothing is left. The API server's resource versions order the
// changes: they are etcd revisions, global across types.
func (s *stack) deleteXR(ctx context.Context, xr string, n int, bound time.Duration) deletion {
	return s.deleteOwner(ctx, xr, n, bound, "XR", s.client.Resource(gvrXR), xr, nil)
}

// deleteOwner is deleteXR deleting, instead of the XR, what owns it: its
// kind, its API and its name. With a claim, nothing is left once the claim,
// the XR and everything they composed are gone.
//
// during, if not nil, runs beside the deletion from its start, as a fault
// would; the deletion is over only when it has returned too, and its error
// fails the test.
func (s *stack) deleteOwner(ctx context.Context, xr string, n int, bound time.Duration, kind string, owner dynamic.ResourceInterface, name string, during func(context.Context) error) deletion {
	t := s.t
	c, err := s.composed(ctx, xr, n)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	ns := namespaceOf(xr)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rec := &recorder{}
	s.watch(wctx, rec, "Object", s.client.Resource(gvrObject), metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr})
	s.watch(wctx, rec, "Namespace", s.client.Resource(gvrNamespace), metav1.ListOptions{FieldSelector: "metadata.name=" + ns})
	configMaps := s.watch(wctx, rec, "ConfigMap", s.client.Resource(gvrConfigMap).Namespace(ns), metav1.ListOptions{})
	s.watch(wctx, rec, "Usage", s.client.Resource(s.gvrUsage()), metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr})
	var operations []unstructured.Unstructured
	if !s.releases.v1 {
		operations = s.watch(wctx, rec, "Operation", s.client.Resource(gvrOperation), metav1.ListOptions{})
	}
	remote := 0
	for _, cm := range configMaps {
		if strings.HasPrefix(cm.GetName(), "cm-") {
			remote++
		}
	}
	if remote != n {
		t.Fatalf("ERROR: %s: %d of %d remote ConfigMaps exist before deletion", xr, remote, n)
	}

	conflicts := s.count("provider-kubernetes", removeConflict)
	refusals, replays := s.count("crossplane", usageRefused), s.count("crossplane", usageReplayed)
	reconciling := reconcilingObjectsOf(xr)
	reconciles := s.count("provider-kubernetes", reconciling)
	before := s.requestsSoFar(ctx)
	begin := time.Now()
	if err := owner.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("ERROR: cannot delete %s %s: %v", kind, name, err)
	}
	duringErr := make(chan error, 1)
	dctx, cancelDuring := context.WithCancel(ctx)
	defer cancelDuring()
	if during != nil {
		go func() { duringErr <- during(dctx) }()
	} else {
		duringErr <- nil
	}
	d := deletion{dependents: n}
	var left []string
	err = s.poll(ctx, bound, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		left = nil
		if kind != "XR" {
			if _, err := owner.Get(ctx, name, metav1.GetOptions{}); !kerrors.IsNotFound(err) {
				left = append(left, "the "+kind)
			}
		}
		if _, err := s.client.Resource(gvrXR).Get(ctx, xr, metav1.GetOptions{}); !kerrors.IsNotFound(err) {
			left = append(left, "the XR")
		}
		objs, err := s.client.Resource(gvrObject).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr})
		if err != nil {
			return false, err
		}
		for _, o := range objs.Items {
			left = append(left, fmt.Sprintf("Object %s (deleting: %t, finalizers: %v)", o.GetName(), o.GetDeletionTimestamp() != nil, o.GetFinalizers()))
		}
		nsObj, err := s.client.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
		switch {
		case err == nil:
			phase, _, _ := unstructured.NestedString(nsObj.Object, "status", "phase")
			left = append(left, fmt.Sprintf("Namespace %s (%s)", ns, phase))
		case !kerrors.IsNotFound(err):
			return false, err
		}
		return len(left) == 0, fmt.Errorf("left: %s", strings.Join(left, "; "))
	})
	d.gone = time.Since(begin)
	if derr := awaitDuring(duringErr, cancelDuring); derr != nil {
		t.Errorf("ERROR: %s: during the deletion: %v", xr, derr)
	}
	cost := s.requestsSoFar(ctx).since(before)
	if err != nil {
		d.left = left
	}
	// Let the watches deliver the last events.
	time.Sleep(time.Second)
	stop()
	d.conflicts = s.count("provider-kubernetes", removeConflict) - conflicts
	reconciles = s.count("provider-kubernetes", reconciling) - reconciles
	changes, werr := rec.result()
	if werr != nil {
		t.Fatalf("ERROR: watching the deletion of %s: %v", xr, werr)
	}

	// The shared Namespace began terminating at its first change with a
	// deletion timestamp.
	var terminating *change
	for i := range changes {
		if ch := &changes[i]; ch.kind == "Namespace" && ch.deleting {
			terminating = ch
			break
		}
	}
	deleted := map[string]change{}
	for _, ch := range changes {
		if ch.deleted {
			deleted[ch.kind+"/"+ch.name] = ch
		}
	}
	d.timeline = timelineOf(changes, begin, c, ns, d.conflicts)
	d.timeline.Reconciles = reconciles
	d.timeline.Refusals = s.count("crossplane", usageRefused) - refusals
	d.timeline.Replays = s.count("crossplane", usageReplayed) - replays
	d.timeline.Operations = created(changes, "Operation", operations)
	d.timeline.NudgeLog = nudges(changes, begin)
	d.timeline.Nudges = len(d.timeline.NudgeLog)
	d.timeline.Begin = begin
	d.timeline.APIWrites, d.timeline.APIConflicts = cost.writes, cost.conflicts
	if terminating == nil {
		t.Logf("%s: the shared Namespace %s did not begin terminating within %s", xr, ns, bound)
		return d
	}
	d.terminated = true
	var lastCM, lastObj, firstCM time.Time
	for _, cm := range configMaps {
		if !strings.HasPrefix(cm.GetName(), "cm-") {
			continue
		}
		ch, ok := deleted["ConfigMap/"+cm.GetName()]
		if !ok || ch.rv > terminating.rv {
			d.configMapsLeft++
			d.configMapsLeftNames = append(d.configMapsLeftNames, cm.GetName())
		}
		if ok && ch.at.After(lastCM) {
			lastCM = ch.at
		}
		if ok && (firstCM.IsZero() || ch.at.Before(firstCM)) {
			firstCM = ch.at
		}
	}
	for _, o := range c.dependents {
		ch, ok := deleted["Object/"+o.GetName()]
		if !ok || ch.rv > terminating.rv {
			d.objectsLeft++
			d.objectsLeftNames = append(d.objectsLeftNames, o.GetName())
		}
		if ok && ch.at.After(lastObj) {
			lastObj = ch.at
		}
	}
	at := func(ts time.Time) string {
		if ts.IsZero() {
			return "never"
		}
		return ts.Sub(begin).Round(10 * time.Millisecond).String()
	}
	nsGone := time.Time{}
	if ch, ok := deleted["Namespace/"+ns]; ok {
		nsGone = ch.at
	}
	if ch, ok := deleted["Object/"+c.shared.GetName()]; ok {
		d.sharedGone = ch.at.Sub(begin)
	}
	t.Logf("%s deletion (times after deleting the %s; order by etcd revision): first remote ConfigMap deleted %s, last %s; last dependent Object gone %s; shared Namespace began terminating %s (revision %d) with %d/%d remote ConfigMaps and %d/%d dependent Objects still present; Namespace gone %s; nothing left after %s; the provider hit %d conflicts removing reference finalizers",
		xr, kind, at(firstCM), at(lastCM), at(lastObj), at(terminating.at), terminating.rv, d.configMapsLeft, n, d.objectsLeft, n, at(nsGone), d.gone.Round(100*time.Millisecond), d.conflicts)
	return d
}

// duringEnds bounds how long, after the deletion's own wait, what runs
// beside it (deleteOwner's during) may take to end. crashMidway, the one
// there is, ends within 100 s of the first dependent going, which is before
// the deletion is over: a kill (up to killedExit), 10 s down, then up to a
// minute for the component to be ready again.
const duringEnds = 3 * time.Minute

// awaitDuring waits, within duringEnds, for what runs beside a deletion to
// return its error. Past that, it cancels it, gives it a minute to return,
// and returns an error that says so.
func awaitDuring(errs <-chan error, cancel context.CancelFunc) error {
	select {
	case err := <-errs:
		return err
	case <-time.After(duringEnds):
	}
	cancel()
	select {
	case err := <-errs:
		return fmt.Errorf("waited %s after the deletion for what ran beside it (a fault) to end, then cancelled it: %v", duringEnds, err)
	case <-time.After(time.Minute):
		return fmt.Errorf("waited %s after the deletion for what ran beside it (a fault) to end, and a minute more once cancelled: it never returned", duringEnds)
	}
}

// composed is an XR's composed Objects.
type composed struct {
	shared     *unstructured.Unstructured
	dependents []*unstructured.Unstructured
}

// composed returns the XR's shared Object and its n dependents, or an error
// until they all exist.
func (s *stack) composed(ctx context.Context, xr string, n int) (composed, error) {
	return s.objectsLabelled(ctx, "crossplane.io/composite="+xr, xr+"-shared", n)
}

// objectsLabelled returns the Objects the label selector selects, as the
// shared one and its n dependents, or an error until they all exist.
func (s *stack) objectsLabelled(ctx context.Context, selector, shared string, n int) (composed, error) {
	list, err := s.client.Resource(gvrObject).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return composed{}, err
	}
	var c composed
	for i := range list.Items {
		o := &list.Items[i]
		if o.GetName() == shared {
			c.shared = o
		} else {
			c.dependents = append(c.dependents, o)
		}
	}
	slices.SortFunc(c.dependents, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	if c.shared == nil || len(c.dependents) != n {
		return c, fmt.Errorf("%d of %d Objects exist", len(list.Items), n+1)
	}
	return c, nil
}

// protected counts the dependents whose finalizer is on the shared Object.
func (c composed) protected() int {
	on := map[string]bool{}
	for _, f := range c.shared.GetFinalizers() {
		on[f] = true
	}
	count := 0
	for _, d := range c.dependents {
		if on[refFinalizerPrefix+string(d.GetUID())] {
			count++
		}
	}
	return count
}

// refFinalizers counts the reference finalizers among finalizers.
func refFinalizers(finalizers []string) int {
	n := 0
	for _, f := range finalizers {
		if strings.HasPrefix(f, refFinalizerPrefix) {
			n++
		}
	}
	return n
}

// notReady names the Objects that are not both Synced and Ready.
func (c composed) notReady() []string {
	var names []string
	for _, o := range append([]*unstructured.Unstructured{c.shared}, c.dependents...) {
		if !conditionTrue(o, "Synced") || !conditionTrue(o, "Ready") {
			names = append(names, o.GetName())
		}
	}
	return names
}

// finalizerOwners says which field managers own the reference finalizers of
// an object, and how many each.
func finalizerOwners(u *unstructured.Unstructured) string {
	var parts []string
	for _, mf := range u.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Finalizers map[string]any `json:"f:finalizers"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		count := 0
		for k := range fields.Metadata.Finalizers {
			if strings.HasPrefix(k, `v:"`+refFinalizerPrefix) {
				count++
			}
		}
		if count > 0 {
			parts = append(parts, fmt.Sprintf("%s (%s) %d", mf.Manager, mf.Operation, count))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// createXRD defines the XR: with Crossplane v2 a cluster-scoped XR of
// apiextensions.crossplane.io/v2; with v1 one of apiextensions.crossplane.io/v1,
// which has no scope, with a claim.
func (s *stack) createXRD(ctx context.Context) {
	gvr := gvrXRD
	spec := map[string]any{
		"group": xrGroup,
		"names": map[string]any{"kind": xrKind, "plural": gvrXR.Resource},
		"versions": []any{map[string]any{
			"name": "v1alpha1", "served": true, "referenceable": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"spec": map[string]any{"type": "object"}},
			}},
		}},
	}
	if s.releases.v1 {
		gvr.Version = "v1"
		spec["claimNames"] = map[string]any{"kind": claimKind, "plural": gvrClaim.Resource}
	} else {
		spec["scope"] = "Cluster"
	}
	s.create(ctx, gvr, "", obj(map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "CompositeResourceDefinition",
		"metadata": map[string]any{"name": gvrXR.Resource + "." + xrGroup},
		"spec":     spec,
	}))
	s.await(ctx, "the XRD to be established", 60*time.Second, func(ctx context.Context) (bool, error) {
		u, err := s.client.Resource(gvr).Get(ctx, gvrXR.Resource+"."+xrGroup, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(u, "Established"), nil
	})
}

func (s *stack) createXR(ctx context.Context, name, composition string) time.Time {
	created := time.Now()
	s.create(ctx, gvrXR, "", obj(map[string]any{
		"apiVersion": xrAPIVersion, "kind": xrKind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"crossplane": map[string]any{"compositionRef": map[string]any{"name": composition}}},
	}))
	return created
}

// namespaceOf is the shared Namespace an XR composes.
func namespaceOf(xr string) string { return "race-" + xr }

// composition composes one shared Object, a Namespace, and n dependent
// Objects, ConfigMaps in it, each referencing the shared Object by name
// with the provider's default apiVersion and kind. Names derive from the XR's.
func composition(name string, n int, withFunction bool) *unstructured.Unstructured {
	format := func(fmt string) map[string]any {
		return map[string]any{"type": "string", "string": map[string]any{"type": "Format", "fmt": fmt}}
	}
	patch := func(to, fmt string) map[string]any {
		return map[string]any{"type": "FromCompositeFieldPath", "fromFieldPath": "metadata.name", "toFieldPath": to, "transforms": []any{format(fmt)}}
	}
	resources := []any{map[string]any{
		"name": "shared",
		"base": map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"spec": map[string]any{"forProvider": map[string]any{"manifest": map[string]any{"apiVersion": "v1", "kind": "Namespace"}}},
		},
		"patches": []any{patch("metadata.name", "%s-shared"), patch("spec.forProvider.manifest.metadata.name", "race-%s")},
	}}
	for i := 1; i <= n; i++ {
		resources = append(resources, map[string]any{
			"name": fmt.Sprintf("dependent-%02d", i),
			"base": map[string]any{
				"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
				"spec": map[string]any{
					"references": []any{map[string]any{"dependsOn": map[string]any{"name": "set-by-a-patch"}}},
					"forProvider": map[string]any{"manifest": map[string]any{
						"apiVersion": "v1", "kind": "ConfigMap",
						"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i)},
						"data":     map[string]any{"index": strconv.Itoa(i)},
					}},
				},
			},
			"patches": []any{
				patch("metadata.name", fmt.Sprintf("%%s-dependent-%02d", i)),
				patch("spec.references[0].dependsOn.name", "%s-shared"),
				patch("spec.forProvider.manifest.metadata.namespace", "race-%s"),
			},
		})
	}
	if providerWatches() {
		for _, r := range resources {
			spec := r.(map[string]any)["base"].(map[string]any)["spec"].(map[string]any)
			spec["watch"] = true
		}
	}
	return pipelineComposition(name, resources, withFunction)
}

// pipelineComposition composes the resources, function-patch-and-transform's
// input, then runs function-dependencies, if withFunction, as the step
// order-deletion without an input (withInput gives it one), and
// function-auto-ready last.
func pipelineComposition(name string, resources []any, withFunction bool) *unstructured.Unstructured {
	pipeline := []any{map[string]any{
		"step":        "render",
		"functionRef": map[string]any{"name": "function-patch-and-transform"},
		"input":       map[string]any{"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources", "resources": resources},
	}}
	if withFunction {
		pipeline = append(pipeline, map[string]any{"step": "order-deletion", "functionRef": map[string]any{"name": "function-dependencies"}})
	}
	pipeline = append(pipeline, map[string]any{"step": "ready", "functionRef": map[string]any{"name": "function-auto-ready"}})
	return obj(map[string]any{
		"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"compositeTypeRef": map[string]any{"apiVersion": xrAPIVersion, "kind": xrKind},
			"mode":             "Pipeline",
			"pipeline":         pipeline,
		},
	})
}

// providerWatches is whether FD_CONTROLPLANE_PROVIDER_WATCHES asks for the
// provider's alpha watches (--enable-watches) and composes every Object with
// spec.watch: true: an experiment of issue 17.
func providerWatches() bool { return os.Getenv("FD_CONTROLPLANE_PROVIDER_WATCHES") != "" }

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 1 {
		t.Fatalf("ERROR: %s=%q is not a positive number", name, v)
	}
	return i
}
