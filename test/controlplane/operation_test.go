//go:build controlplane

package controlplane

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
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
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
)

var (
	gvrOperation               = schema.GroupVersionResource{Group: "ops.crossplane.io", Version: "v1alpha1", Resource: "operations"}
	gvrWatchOperation          = schema.GroupVersionResource{Group: "ops.crossplane.io", Version: "v1alpha1", Resource: "watchoperations"}
	gvrClusterRole             = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	gvrClusterRoleBinding      = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	gvrSubjectAccessReview     = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}
	gvrFunction                = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "functions"}
	gvrDeploymentRuntimeConfig = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1beta1", Resource: "deploymentruntimeconfigs"}
)

// What Crossplane v2.4.0's Operations put on the control plane.
const (
	// operationFieldOwner starts the field manager each Operation applies
	// its desired resources with; the Operation's UID follows.
	operationFieldOwner = "ops.crossplane.io/operation/"
	// The annotations a WatchOperation puts on each Operation it creates.
	watchedNameAnnotation = "ops.crossplane.io/watched-resource-name"
	watchedRVAnnotation   = "ops.crossplane.io/watched-resource-resourceversion"
)

// What the test puts on its Objects.
const (
	// setLabel names the set an Object belongs to.
	setLabel = "controlplane.test/set"
	// waveAnnotation is what each reconcile wave changes on the dependents.
	waveAnnotation = "controlplane.test/wave"
)

// Bounds of the Operation scenario.
const (
	// settleUnwatched bounds how long a set of Objects without any
	// Operation may take until every Object is Ready and the shared
	// Object's finalizers stop changing.
	settleUnwatched = 150 * time.Second
	// watchRepairs bounds how long from creating the WatchOperation until
	// every finalizer the provider lost is on the shared Object, and
	// watchProtects how long from creating a set with the WatchOperation in
	// place until every finalizer is there. A new set makes a burst of
	// Operations, several per dependent, that apply to the shared Object at
	// once; the API server times out applies that lose the race to it for
	// 34 s (its default request timeout), and Crossplane retries them.
	watchRepairs  = 90 * time.Second
	watchProtects = 2 * time.Minute
	// operationsFinish bounds how long the Operations one change of the
	// Objects makes take to finish.
	operationsFinish = 2 * time.Minute
	// operationsQuiet is how long no new Operation may appear before the
	// Operations count as finished.
	operationsQuiet = 3 * time.Second
	// reconcileWaves is how often every dependent is touched.
	reconcileWaves = 10
)

// TestOperationRestoresLostReferenceFinalizersAndOrdersDeletion runs
// function-dependencies as the Operation step of the WatchOperation in
// example/operation/watch-objects.yaml, on Objects created directly, as the
// bug report (provider-kubernetes #371) does: no Composition, one shared
// Object (a Namespace) and N dependent Objects (ConfigMaps in it) that
// reference it, created at once so that the provider's reconciles race.
//
// A first set is left without any Operation until it settles, and the
// finalizers the provider lost are counted, at least one (raceShown: else
// there is nothing to restore); then the WatchOperation is created, and
// must restore them all. A second set is created with the
// WatchOperation in place, and must get them all. Every dependent is then
// touched ten times, and the shared Objects' managedFields must not grow
// past the first wave. Last, with the WatchOperation of
// example/operation/watch-namespaces.yaml added, every Object is deleted at
// once: each shared Object's Namespace must begin terminating only after
// every dependent has released the shared Object and deleted its ConfigMap,
// the Operations' teardown nudges must follow their rules, and nothing may
// be left. Every Operation must succeed.
//
// Before that, without the Objects: the ClusterRole of
// example/operation/install.yaml must be accepted and grant what an
// Operation applies, its other documents must validate, and a server-side
// apply of a partial object carrying a UID, as the function declares it,
// must be refused when no object of that UID has the name.
func TestOperationRestoresLostReferenceFinalizersAndOrdersDeletion(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_OPERATION_DEPENDENTS", 20)

	s := startStack(ctx, t)
	s.checkOperationsEnabled(ctx)
	s.checkInstallManifest(ctx)
	refusals := s.checkApplyNeedsTheUID(ctx)

	scenario := time.Now()
	lost := objectSet{name: "op-lost", n: n}
	lost.created = s.createSet(ctx, lost)
	unwatched := s.settleUnwatched(ctx, lost)
	if err := raceShown(n, map[string]int{lost.name: unwatched.finalizers}); err != nil {
		t.Error("ERROR:", err)
	}

	tctx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	ops := s.trackOperations(tctx)
	repair := s.installWatchOperation(ctx, ops, lost)

	watched := objectSet{name: "op-watched", n: n}
	protect := s.protectNewSet(ctx, ops, &watched)

	waves := s.touchWaves(ctx, ops, lost, watched)
	s.logWatchOperation(ctx, repair.watchOperation)

	// The WatchOperation of the Namespaces the shared Objects manage wakes
	// each once its Namespace is gone.
	s.watchWith(ctx, "watch-namespaces.yaml")
	before := len(ops.snapshot())
	td := s.deleteSets(ctx, lost, watched)
	s.awaitOperations(ctx, ops, "the Operations of the teardown", nil)
	duringTeardown := len(ops.snapshot()) - before
	counts := s.checkOperations(ops)

	t.Logf("SUMMARY (WatchOperation example/operation/watch-objects.yaml running function-dependencies; %d dependent Objects referencing one shared Object per set, created directly; provider-kubernetes v1.2.1 at its default --max-reconcile-rate=100, Crossplane v2.4.0 with --enable-operations):", n)
	t.Logf("  without any Operation: %d/%d finalizers on the shared Object once settled (%d missing; settled %s after creation)",
		unwatched.finalizers, n, n-unwatched.finalizers, unwatched.settled.Round(100*time.Millisecond))
	t.Logf("  WatchOperation created after the Objects: %d/%d %s after creating it (Watching %s after; first Operation %s after; Operations for %d of %d unchanged Objects, the watch's initial list, the last %s after)",
		n, n, at(repair.complete), at(repair.watching), at(repair.firstOperation), repair.initial, n+1, at(repair.lastInitial))
	t.Logf("    its Operations: %s", repair.operations)
	t.Logf("  Objects created with the WatchOperation in place: %d/%d %s after creation began; reference finalizers added by the provider: %d, by Operations: %d (in %d managedFields entries)",
		n, n, protect.complete.Round(100*time.Millisecond), protect.byProvider, protect.byOperations, protect.operationEntries)
	t.Logf("    its Operations: %s", protect.operations)
	for _, set := range []objectSet{lost, watched} {
		var counts []string
		for _, w := range waves {
			counts = append(counts, strconv.Itoa(w.fields[set.shared()]))
		}
		t.Logf("  managedFields entries of %s before the waves and after each of %d: %s", set.shared(), reconcileWaves, strings.Join(counts, " "))
	}
	var took []string
	for _, w := range waves[1:] {
		took = append(took, fmt.Sprintf("%s (%d Operations, %d applied)", w.took.Round(100*time.Millisecond), w.operations, w.applied))
	}
	t.Logf("  reconcile waves (every dependent touched, until its Operations finished): %s", strings.Join(took, ", "))
	for _, d := range td.sets {
		t.Logf("  teardown of %s: last dependent Object gone %s, last ConfigMap deleted %s, Namespace terminating %s (%d/%d ConfigMaps left then), shared Object gone %s (%d dependents after it); %d teardown nudges for %d releases",
			d.set, at(d.lastDependentGone), at(d.lastConfigMapGone), at(d.namespaceTerminating), d.configMapsLeft, n, at(d.sharedGone), d.dependentsAfterShared, d.nudges, d.releases)
	}
	t.Logf("  teardown: nothing left %s after deleting every Object at once; the provider hit %d conflicts removing reference finalizers; %d Operations ran meanwhile",
		td.gone.Round(100*time.Millisecond), td.conflicts, duringTeardown)
	t.Logf("  Operations: %d created, %d Succeeded, %d failed, %d retried after a failure (%d of them then Succeeded), %d never finished",
		counts.total, counts.succeeded, counts.failed, counts.retried, counts.retriedSucceeded, counts.running)
	for _, r := range refusals {
		t.Logf("  server-side apply of a partial ConfigMap %s: refused (HTTP %d): %s", r.what, r.code, r.message)
	}
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start: %s)", time.Since(scenario).Round(time.Second), time.Since(wall).Round(time.Second))
}

// at rounds a duration for the summary, or says never.
func at(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(10 * time.Millisecond).String()
}

// An objectSet is one shared Object, which manages a Namespace, and n
// dependent Objects, which manage ConfigMaps in it and reference the
// shared Object.
type objectSet struct {
	name    string
	n       int
	created time.Time
}

func (o objectSet) shared() string         { return o.name + "-shared" }
func (o objectSet) dependent(i int) string { return fmt.Sprintf("%s-dependent-%02d", o.name, i) }
func (o objectSet) namespace() string      { return o.name }

// objects are the set's Objects, as the bug report has them.
func (o objectSet) objects() (*unstructured.Unstructured, []*unstructured.Unstructured) {
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "labels": map[string]any{setLabel: o.name}}
	}
	shared := obj(map[string]any{
		"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
		"metadata": meta(o.shared()),
		"spec": map[string]any{"forProvider": map[string]any{"manifest": map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": o.namespace()},
		}}},
	})
	var dependents []*unstructured.Unstructured
	for i := 1; i <= o.n; i++ {
		dependents = append(dependents, obj(map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"metadata": meta(o.dependent(i)),
			"spec": map[string]any{
				"references": []any{map[string]any{"dependsOn": map[string]any{"name": o.shared()}}},
				"forProvider": map[string]any{"manifest": map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i), "namespace": o.namespace()},
					"data":     map[string]any{"index": strconv.Itoa(i)},
				}},
			},
		}))
	}
	return shared, dependents
}

// createSet creates the shared Object, then every dependent at once, each
// from a goroutine of its own, so that the provider reconciles them in
// parallel. It returns when creation began.
func (s *stack) createSet(ctx context.Context, set objectSet) time.Time {
	shared, dependents := set.objects()
	begin := time.Now()
	s.create(ctx, gvrObject, "", shared)
	errs := make([]error, len(dependents))
	var wg sync.WaitGroup
	for i, d := range dependents {
		wg.Go(func() {
			_, errs[i] = s.client.Resource(gvrObject).Create(ctx, d, metav1.CreateOptions{})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.t.Fatalf("ERROR: cannot create the dependents of %s: %v", set.name, err)
	}
	s.t.Logf("%s: created the shared Object and %d dependents in %s", set.name, set.n, time.Since(begin).Round(time.Millisecond))
	return begin
}

// objectsOf returns the set's Objects, or an error until they all exist.
func (s *stack) objectsOf(ctx context.Context, set objectSet) (composed, error) {
	c, err := s.objectsLabelled(ctx, setLabel+"="+set.name, set.shared(), set.n)
	if err != nil {
		return c, fmt.Errorf("%s: %w", set.name, err)
	}
	return c, nil
}

// checkOperationsEnabled asserts what the Operations need: the ops CRDs,
// Crossplane's alpha flag, and function-dependencies's revision declaring
// the operation capability.
func (s *stack) checkOperationsEnabled(ctx context.Context) {
	t := s.t
	for _, crd := range []string{"operations.ops.crossplane.io", "cronoperations.ops.crossplane.io", "watchoperations.ops.crossplane.io"} {
		u, err := s.client.Resource(gvrCRD).Get(ctx, crd, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ERROR: the CRD %s (from core's cluster/crds) is missing: %v", crd, err)
		}
		if !conditionTrue(u, "Established") {
			t.Fatalf("ERROR: the CRD %s is not established: %s", crd, describeCondition(u, "Established"))
		}
	}
	if s.crossplaneLines("Alpha feature enabled", "EnableAlphaOperations") == 0 {
		t.Fatalf("ERROR: Crossplane didn't log enabling EnableAlphaOperations: is --enable-operations passed?")
	}
	rev, err := s.client.Resource(gvrFunctionRevision).Get(ctx, "function-dependencies-local", metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	caps, _, _ := unstructured.NestedStringSlice(rev.Object, "status", "capabilities")
	if !slices.Contains(caps, "operation") {
		t.Fatalf("ERROR: function-dependencies's FunctionRevision declares capabilities %v, without operation", caps)
	}
	t.Logf("Operations enabled: the three ops.crossplane.io CRDs established, Crossplane logged EnableAlphaOperations, function-dependencies's revision declares %v", caps)
}

// checkInstallManifest creates the ClusterRole of
// example/operation/install.yaml and asserts that it grants what an
// Operation needs on the kinds it lists; its Function and
// DeploymentRuntimeConfig are validated by a dry-run create: a Function
// created for real would send the package manager to fetch the package,
// and its revisions would compete with the one the test registers.
func (s *stack) checkInstallManifest(ctx context.Context) {
	t := s.t
	file := filepath.Join(s.root, "example", "operation", "install.yaml")
	const user = "install-yaml-check"
	var kinds []string
	for _, doc := range readYAML(t, file) {
		kinds = append(kinds, doc.GetKind())
		switch doc.GetKind() {
		case "Function", "DeploymentRuntimeConfig":
			gvr := map[string]schema.GroupVersionResource{"Function": gvrFunction, "DeploymentRuntimeConfig": gvrDeploymentRuntimeConfig}[doc.GetKind()]
			if _, err := s.client.Resource(gvr).Create(ctx, doc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("ERROR: %s: the API server refuses %s %s: %v", file, doc.GetKind(), doc.GetName(), err)
			}
		case "ClusterRole":
			if doc.GetLabels()["rbac.crossplane.io/aggregate-to-crossplane"] != "true" {
				t.Errorf("ERROR: %s: ClusterRole %s lacks the label Crossplane's ClusterRole aggregates", file, doc.GetName())
			}
			s.create(ctx, gvrClusterRole, "", doc)
			s.create(ctx, gvrClusterRoleBinding, "", obj(map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
				"metadata": map[string]any{"name": user},
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": doc.GetName()},
				"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
			}))
			s.checkAccess(ctx, file, doc.GetName(), user)
			if err := s.client.Resource(gvrClusterRoleBinding).Delete(ctx, user, metav1.DeleteOptions{}); err != nil {
				t.Fatal("ERROR:", err)
			}
		default:
			t.Errorf("ERROR: %s: a %s the test doesn't know", file, doc.GetKind())
		}
	}
	t.Logf("%s: the API server accepts its %s (Function and DeploymentRuntimeConfig in a dry run)", file, strings.Join(kinds, ", "))
}

// installAccess is what example/operation/install.yaml's ClusterRole must
// grant on each resource, and what it must not: an Operation reads the
// kinds it protects and patches finalizers onto them, lists no Secret, and
// deletes nothing.
var installAccess = []access{
	{"kubernetes.crossplane.io", "objects", []string{"get", "list", "watch", "patch"}, nil},
	{"kubernetes.m.crossplane.io", "objects", []string{"get", "list", "watch", "patch"}, nil},
	{"", "namespaces", []string{"get", "list", "watch", "patch"}, nil},
	{"", "configmaps", []string{"get", "list", "watch", "patch"}, []string{"delete"}},
	// The function asks for each referenced Secret by name and never lists
	// them: no provider's credentials are read to repair a finalizer.
	{"", "secrets", []string{"get", "patch"}, []string{"list", "watch", "delete"}},
}

// An access is the verbs a role grants on a resource of a group, and verbs
// it doesn't.
type access struct {
	group, resource string
	granted, denied []string
}

// checkAccess asserts installAccess for user, whom a ClusterRoleBinding
// just created binds to the ClusterRole of file. The API server's RBAC
// authorizer reads roles and bindings from an informer, so a review sent at
// once can be denied what the role grants: the first grant is asked until
// allowed, and only then is every grant and denial asserted.
func (s *stack) checkAccess(ctx context.Context, file, role, user string) {
	t := s.t
	first := installAccess[slices.IndexFunc(installAccess, func(a access) bool { return len(a.granted) > 0 })]
	w, err := s.awaitCache(ctx, "the RBAC authorizer to see ClusterRoleBinding "+user, func(ctx context.Context) (bool, error) {
		return s.allowed(ctx, user, first.granted[0], first.group, first.resource), nil
	})
	if err != nil {
		t.Errorf("ERROR: %s: ClusterRole %s doesn't grant %s on %s: %v", file, role, first.granted[0], qualified(first.resource, first.group), err)
		return
	}
	t.Logf("%s: the RBAC authorizer allowed %s %s on %s %s after ClusterRoleBinding %s was created", file, user, first.granted[0], qualified(first.resource, first.group), w, user)
	var granted, denied []string
	for _, r := range installAccess {
		for _, verb := range r.granted {
			if !s.allowed(ctx, user, verb, r.group, r.resource) {
				t.Errorf("ERROR: %s: ClusterRole %s doesn't grant %s on %s", file, role, verb, qualified(r.resource, r.group))
			}
		}
		// The review itself works: what the role doesn't grant is denied.
		for _, verb := range r.denied {
			if s.allowed(ctx, user, verb, r.group, r.resource) {
				t.Errorf("ERROR: %s: a SubjectAccessReview allows %s on %s, which ClusterRole %s must not grant", file, verb, qualified(r.resource, r.group), role)
			}
		}
		if len(r.granted) > 0 {
			granted = append(granted, fmt.Sprintf("%s on %s", strings.Join(r.granted, ", "), qualified(r.resource, r.group)))
		}
		if len(r.denied) > 0 {
			denied = append(denied, fmt.Sprintf("%s on %s", strings.Join(r.denied, ", "), qualified(r.resource, r.group)))
		}
	}
	t.Logf("%s: ClusterRole %s created; bound to a user, it grants %s; and not %s", file, role, strings.Join(granted, "; "), strings.Join(denied, "; "))
}

// qualified names a resource with its group, as RBAC does.
func qualified(resource, group string) string {
	return strings.TrimSuffix(resource+"."+group, ".")
}

// allowed asks the API server whether user may do verb on resources of the
// group.
func (s *stack) allowed(ctx context.Context, user, verb, group, resource string) bool {
	s.t.Helper()
	review, err := s.client.Resource(gvrSubjectAccessReview).Create(ctx, obj(map[string]any{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
		"spec": map[string]any{
			"user":               user,
			"resourceAttributes": map[string]any{"group": group, "resource": resource, "verb": verb},
		},
	}), metav1.CreateOptions{})
	if err != nil {
		s.t.Fatalf("ERROR: cannot review whether %s may %s %s: %v", user, verb, resource, err)
	}
	ok, _, _ := unstructured.NestedBool(review.Object, "status", "allowed")
	return ok
}

// A refusal is how the API server refused an apply.
type refusal struct {
	what    string
	code    int32
	message string
}

// checkApplyNeedsTheUID asserts what the function's partial objects rely
// on: a server-side apply of a partial object that carries metadata.uid,
// with the field owner and force an Operation applies with, is refused
// when no object of that name exists, rather than creating one, and when
// the object of that name has another UID, rather than changing it; and is
// accepted when the UID matches.
func (s *stack) checkApplyNeedsTheUID(ctx context.Context) []refusal {
	t := s.t
	cms := s.client.Resource(gvrConfigMap).Namespace("default")
	owner := metav1.ApplyOptions{FieldManager: operationFieldOwner + "controlplane-test", Force: true}
	finalizer := refFinalizerPrefix + string(uuid.NewUUID())
	partial := func(name string, uid types.UID) *unstructured.Unstructured {
		return obj(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "default", "uid": string(uid), "finalizers": []any{finalizer}},
		})
	}
	refused := func(what string, err error) refusal {
		r := refusal{what: what}
		if err == nil {
			t.Errorf("ERROR: server-side apply of a partial ConfigMap %s succeeded; it must be refused", what)
			return r
		}
		r.message = err.Error()
		var status kerrors.APIStatus
		if errors.As(err, &status) {
			r.code = status.Status().Code
		}
		t.Logf("server-side apply of a partial ConfigMap %s refused (HTTP %d): %v", what, r.code, err)
		return r
	}
	var out []refusal

	// No object has the name.
	const missing = "operation-apply-probe-missing"
	_, err := cms.Apply(ctx, missing, partial(missing, uuid.NewUUID()), owner)
	out = append(out, refused("whose name no object has", err))
	if u, err := cms.Get(ctx, missing, metav1.GetOptions{}); !kerrors.IsNotFound(err) {
		t.Errorf("ERROR: the refused apply left ConfigMap %s behind (%v): %v", missing, err, u)
	}

	// The object of the name has another UID: it was replaced.
	const replaced = "operation-apply-probe-replaced"
	live := s.create(ctx, gvrConfigMap, "default", obj(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": replaced, "namespace": "default"},
	}))
	_, err = cms.Apply(ctx, replaced, partial(replaced, uuid.NewUUID()), owner)
	out = append(out, refused("whose name an object of another UID has", err))
	after, err := cms.Get(ctx, replaced, metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	if after.GetUID() != live.GetUID() || len(after.GetFinalizers()) > 0 || after.GetResourceVersion() != live.GetResourceVersion() {
		t.Errorf("ERROR: the refused apply changed ConfigMap %s: UID %s → %s, finalizers %v, resourceVersion %s → %s",
			replaced, live.GetUID(), after.GetUID(), after.GetFinalizers(), live.GetResourceVersion(), after.GetResourceVersion())
	}

	// The UID matches: the apply adds the finalizer.
	applied, err := cms.Apply(ctx, replaced, partial(replaced, live.GetUID()), owner)
	if err != nil {
		t.Errorf("ERROR: server-side apply of a partial ConfigMap with its own UID: %v", err)
	} else if !slices.Contains(applied.GetFinalizers(), finalizer) {
		t.Errorf("ERROR: server-side apply of a partial ConfigMap with its own UID didn't add %s: %v", finalizer, applied.GetFinalizers())
	} else {
		t.Logf("server-side apply of a partial ConfigMap with its own UID: accepted, finalizers %v", applied.GetFinalizers())
	}
	if _, err := cms.Patch(ctx, replaced, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal("ERROR:", err)
	}
	if err := cms.Delete(ctx, replaced, metav1.DeleteOptions{}); err != nil {
		t.Fatal("ERROR:", err)
	}
	return out
}

// unwatchedArm is what a set without any Operation showed.
type unwatchedArm struct {
	finalizers int
	settled    time.Duration
}

// settleUnwatched waits until every Object of the set is Synced and Ready
// and the shared Object's finalizers haven't changed for ten seconds (the
// provider never retries a lost finalizer), and counts the finalizers.
func (s *stack) settleUnwatched(ctx context.Context, set objectSet) unwatchedArm {
	t := s.t
	var a unwatchedArm
	last, since := "\x00", time.Now()
	err := s.poll(ctx, settleUnwatched, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, err := s.objectsOf(ctx, set)
		if err != nil {
			return false, err
		}
		if notReady := c.notReady(); len(notReady) > 0 {
			return false, fmt.Errorf("Objects not yet Synced and Ready: %s", strings.Join(notReady, ", "))
		}
		if now := strings.Join(c.shared.GetFinalizers(), ","); now != last {
			last, since = now, time.Now()
			a.finalizers = c.protected()
			a.settled = time.Since(set.created)
		}
		return time.Since(since) >= 10*time.Second, fmt.Errorf("every Object Synced and Ready; the shared Object's finalizers (%d of %d dependents') last changed %s ago, want 10s unchanged",
			a.finalizers, set.n, time.Since(since).Round(100*time.Millisecond))
	})
	if err != nil {
		t.Fatalf("ERROR: %s: the Objects didn't settle: %v", set.name, err)
	}
	c, err := s.objectsOf(ctx, set)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	t.Logf("%s (no Operation): %d of %d dependents' finalizers on the shared Object once settled (%s after creation); owners: %s",
		set.name, a.finalizers, set.n, a.settled.Round(100*time.Millisecond), finalizerOwners(c.shared))
	if a.finalizers == set.n {
		t.Logf("%s: #371 did not show in this run: the provider added all %d finalizers itself", set.name, set.n)
	} else {
		t.Logf("%s: #371 reproduced: %d of %d dependents' finalizers missing", set.name, set.n-a.finalizers, set.n)
	}
	return a
}

// repairArm is what creating the WatchOperation after the Objects showed;
// the times are from creating it.
type repairArm struct {
	complete, watching, firstOperation time.Duration
	// initial counts the Objects, unchanged since before the
	// WatchOperation, that got an Operation for their resourceVersion of
	// then: the watch's initial list. lastInitial is when the last of them
	// was seen.
	initial     int
	lastInitial time.Duration
	// operations sums up the Operations made for the set's Objects.
	operations string
	// watchOperation is the WatchOperation's name.
	watchOperation string
}

// watchWith creates the WatchOperations of the files of example/operation
// and waits until each is Watching.
func (s *stack) watchWith(ctx context.Context, files ...string) {
	t := s.t
	for _, f := range files {
		for _, wo := range readYAML(t, filepath.Join(s.root, "example", "operation", f)) {
			if wo.GetKind() != "WatchOperation" {
				t.Fatalf("ERROR: %s: a %s, want WatchOperations only", f, wo.GetKind())
			}
			s.create(ctx, gvrWatchOperation, "", wo)
			err := s.poll(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
				u, err := s.client.Resource(gvrWatchOperation).Get(ctx, wo.GetName(), metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return conditionTrue(u, "Watching"), fmt.Errorf("WatchOperation %s is not Watching", wo.GetName())
			})
			if err != nil {
				t.Fatalf("ERROR: %s: %v", f, err)
			}
		}
	}
}

// installWatchOperation creates the WatchOperation of
// example/operation/watch-objects.yaml once the set's Objects exist and
// asserts that it restores every finalizer the provider lost.
func (s *stack) installWatchOperation(ctx context.Context, ops *opTracker, set objectSet) repairArm {
	t := s.t
	file := filepath.Join(s.root, "example", "operation", "watch-objects.yaml")
	docs := readYAML(t, file)
	if len(docs) != 1 || docs[0].GetKind() != "WatchOperation" {
		t.Fatalf("ERROR: %s: want one WatchOperation, got %d documents", file, len(docs))
	}
	wo := docs[0]
	c, err := s.objectsOf(ctx, set)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	versions := map[string]int64{}
	for _, o := range append([]*unstructured.Unstructured{c.shared}, c.dependents...) {
		versions[o.GetName()] = resourceVersion(o)
	}
	missing := set.n - c.protected()

	created := time.Now()
	s.create(ctx, gvrWatchOperation, "", wo)
	a := repairArm{watching: -1, firstOperation: -1, watchOperation: wo.GetName()}
	progress := progression{last: -1}
	err = s.poll(ctx, watchRepairs, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if a.watching < 0 {
			if u, err := s.client.Resource(gvrWatchOperation).Get(ctx, wo.GetName(), metav1.GetOptions{}); err == nil && conditionTrue(u, "Watching") {
				a.watching = time.Since(created)
			}
		}
		if a.firstOperation < 0 && len(ops.snapshot()) > 0 {
			a.firstOperation = time.Since(created)
		}
		c, err := s.objectsOf(ctx, set)
		if err != nil {
			return false, err
		}
		p := c.protected()
		progress.add(time.Since(created), p)
		return p == set.n, fmt.Errorf("%d of %d finalizers on the shared Object", p, set.n)
	})
	a.complete = time.Since(created)
	if err != nil {
		t.Fatalf("ERROR: %s: the WatchOperation should restore every finalizer within %s: %v", set.name, watchRepairs, err)
	}
	c, _ = s.objectsOf(ctx, set)
	t.Logf("%s: WatchOperation %s restored the %d missing finalizers: %d of %d on the shared Object %s after creating it (finalizers on it by time: %s); owners: %s",
		set.name, wo.GetName(), missing, set.n, set.n, a.complete.Round(100*time.Millisecond), progress, ownersOf(c.shared))

	// Every Object of the set, changed or not, gets an Operation: the watch
	// lists them as it starts.
	s.awaitOperations(ctx, ops, "an Operation for every Object of "+set.name, func(all []opState) error {
		seen := map[string]bool{}
		for _, o := range all {
			seen[o.watched] = true
		}
		var none []string
		for name := range versions {
			if !seen[name] {
				none = append(none, name)
			}
		}
		if len(none) > 0 {
			return fmt.Errorf("no Operation for %s", strings.Join(none, ", "))
		}
		return nil
	})
	all := ops.snapshot()
	for name, rv := range versions {
		i := slices.IndexFunc(all, func(o opState) bool { return o.watched == name && o.watchedRV == rv })
		if i < 0 {
			continue
		}
		a.initial++
		a.lastInitial = max(a.lastInitial, all[i].seen.Sub(created))
	}
	a.operations = describeOperations(all, objectNames(set))
	t.Logf("%s: %s", set.name, a.operations)
	t.Logf("%s: %d Operations so far; %d of the %d Objects got one for the resourceVersion they had before the WatchOperation existed (the watch's initial list), the last seen %s after creating it; Watching %s after",
		set.name, len(all), a.initial, len(versions), at(a.lastInitial), at(a.watching))
	if a.initial != len(versions) {
		t.Logf("%s: note: %d Objects changed before their first Operation", set.name, len(versions)-a.initial)
	}
	for _, o := range all {
		if len(o.applied) > 0 && o.output != "" {
			t.Logf("%s: the output of Operation %s (watched %s; Succeeded %s %s; applied %s): %s",
				set.name, o.name, o.watched, o.status, o.reason, strings.Join(o.applied, ", "), o.output)
			break
		}
	}
	return a
}

// logWatchOperation logs the WatchOperation's status.
func (s *stack) logWatchOperation(ctx context.Context, name string) {
	u, err := s.client.Resource(gvrWatchOperation).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	watching, _, _ := unstructured.NestedInt64(u.Object, "status", "watchingResources")
	running, _, _ := unstructured.NestedSlice(u.Object, "status", "runningOperationRefs")
	last, _, _ := unstructured.NestedString(u.Object, "status", "lastScheduleTime")
	success, _, _ := unstructured.NestedString(u.Object, "status", "lastSuccessfulTime")
	kept, err := s.client.Resource(gvrOperation).List(ctx, metav1.ListOptions{LabelSelector: "ops.crossplane.io/watchoperation=" + name})
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.t.Logf("WatchOperation %s: %s, %s; watching %d resources, %d Operations running, last scheduled %s, last succeeded %s; %d Operations kept (its history limits)",
		name, describeCondition(u, "Watching"), describeCondition(u, "Synced"), watching, len(running), last, success, len(kept.Items))
}

// protectArm is what creating a set with the WatchOperation in place
// showed.
type protectArm struct {
	complete time.Duration
	// The reference finalizers on the shared Object by who added them, and
	// the managedFields entries of Operations.
	byProvider, byOperations, operationEntries int
	// operations sums up the Operations made for the set's Objects.
	operations string
}

// protectNewSet creates a set with the WatchOperation in place and asserts
// that every finalizer reaches the shared Object.
func (s *stack) protectNewSet(ctx context.Context, ops *opTracker, set *objectSet) protectArm {
	t := s.t
	set.created = s.createSet(ctx, *set)
	var a protectArm
	var c composed
	progress := progression{last: -1}
	err := s.poll(ctx, watchProtects, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		if c, err = s.objectsOf(ctx, *set); err != nil {
			return false, err
		}
		p := c.protected()
		progress.add(time.Since(set.created), p)
		return p == set.n, fmt.Errorf("%d of %d finalizers on the shared Object", p, set.n)
	})
	a.complete = time.Since(set.created)
	if err != nil {
		t.Fatalf("ERROR: %s: with the WatchOperation in place, every finalizer should be on the shared Object within %s: %v", set.name, watchProtects, err)
	}
	s.awaitOperations(ctx, ops, "the Operations of "+set.name, nil)
	if c, err = s.objectsOf(ctx, *set); err != nil {
		t.Fatal("ERROR:", err)
	}
	a.byProvider, a.byOperations, a.operationEntries = finalizersBy(c.shared)
	t.Logf("%s: %d of %d finalizers on the shared Object %s after creation began (finalizers on it by time: %s); owners: %s; %d managedFields entries",
		set.name, set.n, set.n, a.complete.Round(100*time.Millisecond), progress, ownersOf(c.shared), len(c.shared.GetManagedFields()))
	a.operations = describeOperations(ops.snapshot(), objectNames(*set))
	t.Logf("%s: %s", set.name, a.operations)
	return a
}

// finalizersBy counts an object's reference finalizers by who owns them:
// Operations, and anyone else (the provider); and the managedFields entries
// of Operations.
func finalizersBy(u *unstructured.Unstructured) (others, operations, entries int) {
	for _, mf := range u.GetManagedFields() {
		if strings.HasPrefix(mf.Manager, operationFieldOwner) {
			entries++
			operations += ownedRefFinalizers(mf)
		} else {
			others += ownedRefFinalizers(mf)
		}
	}
	return others, operations, entries
}

// ownedRefFinalizers counts the reference finalizers a managedFields entry
// owns.
func ownedRefFinalizers(mf metav1.ManagedFieldsEntry) int {
	if mf.FieldsV1 == nil {
		return 0
	}
	var fields struct {
		Metadata struct {
			Finalizers map[string]any `json:"f:finalizers"`
		} `json:"f:metadata"`
	}
	if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
		return 0
	}
	n := 0
	for k := range fields.Metadata.Finalizers {
		if strings.HasPrefix(k, `v:"`+refFinalizerPrefix) {
			n++
		}
	}
	return n
}

// A wave is one round of touching every dependent.
type wave struct {
	took                time.Duration
	operations, applied int
	// fields are the managedFields entries of each shared Object after the
	// wave.
	fields map[string]int
}

// touchWaves touches every dependent of the sets, reconcileWaves times,
// each time waiting for the Operations the touches make to finish, and
// asserts that the shared Objects keep every finalizer and that their
// managedFields don't grow after the first wave. The first entry is the
// state before any wave.
func (s *stack) touchWaves(ctx context.Context, ops *opTracker, sets ...objectSet) []wave {
	t := s.t
	read := func() map[string]int {
		fields := map[string]int{}
		for _, set := range sets {
			c, err := s.objectsOf(ctx, set)
			if err != nil {
				t.Fatal("ERROR:", err)
			}
			fields[set.shared()] = len(c.shared.GetManagedFields())
			if p := c.protected(); p != set.n {
				t.Errorf("ERROR: %s: %d of %d finalizers on the shared Object", set.name, p, set.n)
			}
		}
		return fields
	}
	waves := []wave{{fields: read()}}
	for k := 1; k <= reconcileWaves; k++ {
		before := len(ops.snapshot())
		begin := time.Now()
		var names []string
		for _, set := range sets {
			for i := 1; i <= set.n; i++ {
				names = append(names, set.dependent(i))
			}
		}
		touched := make([]int64, len(names))
		errs := make([]error, len(names))
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, waveAnnotation, strconv.Itoa(k))
		var wg sync.WaitGroup
		for i, name := range names {
			wg.Go(func() {
				u, err := s.client.Resource(gvrObject).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
				if err != nil {
					errs[i] = err
					return
				}
				touched[i] = resourceVersion(u)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("ERROR: wave %d: cannot touch the dependents: %v", k, err)
		}
		s.awaitOperations(ctx, ops, fmt.Sprintf("the Operations of wave %d", k), func(all []opState) error {
			var without []string
			for i, name := range names {
				if !slices.ContainsFunc(all, func(o opState) bool { return o.watched == name && o.watchedRV >= touched[i] }) {
					without = append(without, name)
				}
			}
			if len(without) > 0 {
				return fmt.Errorf("%d touched dependents have no Operation for their touch yet: %s", len(without), strings.Join(without, ", "))
			}
			return nil
		})
		w := wave{took: time.Since(begin)}
		for _, o := range ops.snapshot()[before:] {
			w.operations++
			if len(o.applied) > 0 {
				w.applied++
			}
		}
		w.fields = read()
		waves = append(waves, w)
		t.Logf("wave %d: touched %d dependents; %d Operations, %d of them applied anything, all finished %s after the touch; managedFields entries of the shared Objects: %v",
			k, len(names), w.operations, w.applied, w.took.Round(100*time.Millisecond), w.fields)
	}
	for _, set := range sets {
		first := waves[1].fields[set.shared()]
		for k, w := range waves[2:] {
			if got := w.fields[set.shared()]; got > first {
				t.Errorf("ERROR: %s: after wave %d the shared Object has %d managedFields entries, more than the %d after the first wave", set.name, k+2, got, first)
			}
		}
	}
	return waves
}

// resourceVersion is an object's resourceVersion as a number: an etcd
// revision.
func resourceVersion(u *unstructured.Unstructured) int64 {
	rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	return rv
}

// setTeardown is what deleting one set showed; times are from the deletion,
// or -1 for never.
type setTeardown struct {
	set                                                                    string
	lastDependentGone, lastConfigMapGone, namespaceTerminating, sharedGone time.Duration
	// configMapsLeft counts the ConfigMaps that still existed when the
	// Namespace began terminating; dependentsAfterShared the dependent
	// Objects gone after the shared Object.
	configMapsLeft, dependentsAfterShared int
	// releases counts the reference finalizers that came off the shared
	// Object, and nudges the teardown annotations the Operations applied
	// for it (internal/teardown).
	releases, nudges int
}

type teardownResult struct {
	sets      []setTeardown
	gone      time.Duration
	conflicts int
}

// deleteSets deletes every Object of the sets at once, shared ones
// included, records every change of the Objects, the Namespaces and the
// ConfigMaps from the API server's watches, and asserts that each shared
// Object goes last, its Namespace only after the dependents' ConfigMaps,
// and that nothing is left.
func (s *stack) deleteSets(ctx context.Context, sets ...objectSet) teardownResult {
	t := s.t
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rec := &recorder{}
	var names []string
	bound := time.Duration(0)
	for _, set := range sets {
		names = append(names, set.name)
		bound = max(bound, teardown(set.n))
	}
	selector := fmt.Sprintf("%s in (%s)", setLabel, strings.Join(names, ","))
	objects := s.watch(wctx, rec, "Object", s.client.Resource(gvrObject), metav1.ListOptions{LabelSelector: selector})
	for _, set := range sets {
		s.watch(wctx, rec, "Namespace", s.client.Resource(gvrNamespace), metav1.ListOptions{FieldSelector: "metadata.name=" + set.namespace()})
		cms := s.watch(wctx, rec, "ConfigMap", s.client.Resource(gvrConfigMap).Namespace(set.namespace()), metav1.ListOptions{})
		if remote := slices.IndexFunc(cms, func(u unstructured.Unstructured) bool { return strings.HasPrefix(u.GetName(), "cm-") }); remote < 0 {
			t.Fatalf("ERROR: %s: no ConfigMaps in Namespace %s before the deletion", set.name, set.namespace())
		}
	}

	conflicts := s.count("provider-kubernetes", removeConflict)
	begin := time.Now()
	errs := make([]error, len(objects))
	var wg sync.WaitGroup
	for i, o := range objects {
		wg.Go(func() { errs[i] = s.client.Resource(gvrObject).Delete(ctx, o.GetName(), metav1.DeleteOptions{}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("ERROR: cannot delete the Objects: %v", err)
	}
	res := teardownResult{}
	var left []string
	err := s.poll(ctx, bound, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		left = nil
		objs, err := s.client.Resource(gvrObject).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		for _, o := range objs.Items {
			left = append(left, fmt.Sprintf("Object %s (finalizers %v)", o.GetName(), o.GetFinalizers()))
		}
		for _, set := range sets {
			ns, err := s.client.Resource(gvrNamespace).Get(ctx, set.namespace(), metav1.GetOptions{})
			switch {
			case err == nil:
				phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
				left = append(left, fmt.Sprintf("Namespace %s (%s)", set.namespace(), phase))
			case !kerrors.IsNotFound(err):
				return false, err
			}
			cms, err := s.client.Resource(gvrConfigMap).Namespace(set.namespace()).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, cm := range cms.Items {
				left = append(left, "ConfigMap "+set.namespace()+"/"+cm.GetName())
			}
		}
		return len(left) == 0, fmt.Errorf("left: %s", strings.Join(left, "; "))
	})
	res.gone = time.Since(begin)
	if err != nil {
		t.Errorf("ERROR: deleting every Object at once should leave nothing behind within %s: %v", bound, err)
	}
	time.Sleep(time.Second) // Let the watches deliver the last events.
	stop()
	res.conflicts = s.count("provider-kubernetes", removeConflict) - conflicts
	changes, werr := rec.result()
	if werr != nil {
		t.Fatalf("ERROR: watching the deletion: %v", werr)
	}

	first := func(kind, name string, deleted bool) *change {
		for i := range changes {
			if ch := &changes[i]; ch.kind == kind && ch.name == name && (ch.deleted || !deleted && ch.deleting) {
				return ch
			}
		}
		return nil
	}
	since := func(ch *change) time.Duration {
		if ch == nil {
			return -1
		}
		return ch.at.Sub(begin)
	}
	for _, set := range sets {
		d := setTeardown{set: set.name, lastDependentGone: -1, lastConfigMapGone: -1}
		shared, terminating := first("Object", set.shared(), true), first("Namespace", set.namespace(), false)
		d.sharedGone, d.namespaceTerminating = since(shared), since(terminating)
		// A dependent has released the shared Object once its reference
		// finalizer is off: provider-kubernetes deletes the shared Object's
		// Namespace only then. The dependent itself may go a little later,
		// after its own finalizer's Update.
		var after, cmsLeft, holding []string
		uids := map[string]string{}
		for _, o := range objects {
			uids[o.GetName()] = string(o.GetUID())
		}
		released := releasesOf(changes, set.shared())
		for i := 1; i <= set.n; i++ {
			dep := first("Object", set.dependent(i), true)
			if dep != nil {
				d.lastDependentGone = max(d.lastDependentGone, since(dep))
			}
			if dep == nil || shared == nil || dep.rv > shared.rv {
				after = append(after, set.dependent(i))
			}
			if rv, ok := released[uids[set.dependent(i)]]; !ok || terminating == nil || rv > terminating.rv {
				holding = append(holding, set.dependent(i))
			}
			cm := first("ConfigMap", fmt.Sprintf("cm-%02d", i), true)
			if cm != nil {
				d.lastConfigMapGone = max(d.lastConfigMapGone, since(cm))
			}
			if cm == nil || terminating == nil || cm.rv > terminating.rv {
				cmsLeft = append(cmsLeft, fmt.Sprintf("cm-%02d", i))
			}
		}
		d.dependentsAfterShared, d.configMapsLeft = len(after), len(cmsLeft)
		d.releases, d.nudges = s.checkNudges(set, objects, changes, begin)
		t.Logf("%s teardown (times after deleting every Object; order by etcd revision): last dependent Object gone %s, last ConfigMap deleted %s, Namespace %s terminating %s, shared Object gone %s",
			set.name, at(d.lastDependentGone), at(d.lastConfigMapGone), set.namespace(), at(d.namespaceTerminating), at(d.sharedGone))
		if len(holding) > 0 {
			t.Errorf("ERROR: %s: the shared Object's Namespace began terminating before %d of its %d dependents released the shared Object: %s", set.name, len(holding), set.n, strings.Join(holding, ", "))
		}
		if len(cmsLeft) > 0 {
			t.Errorf("ERROR: %s: Namespace %s began terminating before %d of the %d dependents' ConfigMaps were deleted: %s",
				set.name, set.namespace(), len(cmsLeft), set.n, strings.Join(cmsLeft, ", "))
		}
		res.sets = append(res.sets, d)
	}
	t.Logf("teardown: nothing left %s after deleting the %d Objects at once; the provider hit %d conflicts removing reference finalizers",
		res.gone.Round(100*time.Millisecond), len(objects), res.conflicts)
	return res
}

// releasesOf returns, by dependent UID, the etcd revision at which each
// reference finalizer left the named Object, from its changes.
func releasesOf(changes []change, name string) map[string]int64 {
	held := map[string]bool{}
	out := map[string]int64{}
	for _, ch := range slices.SortedFunc(slices.Values(changes), func(a, b change) int { return cmp.Compare(a.rv, b.rv) }) {
		if ch.kind != "Object" || ch.name != name {
			continue
		}
		now := map[string]bool{}
		for _, f := range ch.finalizers {
			if uid, ok := strings.CutPrefix(f, refFinalizerPrefix); ok {
				now[uid] = true
				held[uid] = true
			}
		}
		for uid := range held {
			if _, done := out[uid]; !done && (!now[uid] || ch.deleted) {
				out[uid] = ch.rv
			}
		}
	}
	return out
}

// The label and annotations internal/teardown nudges with.
const (
	holderKeyPrefix = "teardown.dependencies.fn.crossplane.io/"
	targetLabel     = "dependencies.fn.crossplane.io/teardown-target"
	releasedKey     = "dependencies.fn.crossplane.io/teardown-released"
	goneKey         = "dependencies.fn.crossplane.io/teardown-gone"
)

// checkNudges checks, from the changes a set's teardown made, the nudges
// the WatchOperations' Operations applied for its shared Object: there
// were some; none reached an Object before it and the shared Object were
// both being deleted, since a nudge then would only make the provider's
// Updates conflict; no dependent got any but the holder's annotation, since
// a write to one the provider is deleting makes its own Update conflict;
// the one that says the shared Object's Namespace is gone came after it
// was; and no storm: each holder's value names a set of holders the shared
// Object had, so there are at most as many values as finalizers came off,
// plus the shared Object's label, release and gone, however many
// Operations ran. It logs when each of the shared Object's came, and
// returns the releases and the nudges applied.
func (s *stack) checkNudges(set objectSet, objects []unstructured.Unstructured, changes []change, begin time.Time) (releases, nudges int) {
	t := s.t
	i := slices.IndexFunc(objects, func(u unstructured.Unstructured) bool { return u.GetName() == set.shared() })
	if i < 0 {
		t.Fatalf("ERROR: %s: no shared Object %s before the deletion", set.name, set.shared())
	}
	holderKey := holderKeyPrefix + string(objects[i].GetUID())
	refs := refFinalizers(objects[i].GetFinalizers())
	names := objectNames(set)
	// Each watch delivers its changes in order, but not with the others':
	// the etcd revisions order them.
	namespaceGone := int64(0)
	for _, ch := range changes {
		if ch.kind == "Namespace" && ch.name == set.namespace() && ch.deleted {
			namespaceGone = ch.rv
		}
	}
	sharedDeleting := false
	applied, values := map[string]bool{}, map[string]bool{}
	var early, misplaced, came []string
	for _, ch := range slices.SortedFunc(slices.Values(changes), func(a, b change) int { return cmp.Compare(a.rv, b.rv) }) {
		if ch.kind != "Object" || !names[ch.name] {
			continue
		}
		shared := ch.name == set.shared()
		if shared {
			if n := refFinalizers(ch.finalizers); !ch.deleted && n < refs {
				releases += refs - n
				refs = n
			}
			sharedDeleting = sharedDeleting || ch.deleting
		}
		var found []string
		for _, m := range []map[string]string{ch.labels, ch.annotations} {
			for k, v := range m {
				if strings.Contains(k, "teardown") && strings.Contains(k, "dependencies.fn.crossplane.io") {
					found = append(found, k+"="+v)
				}
			}
		}
		for _, kv := range found {
			nudge := ch.name + " " + kv
			if applied[nudge] {
				continue
			}
			applied[nudge], values[kv] = true, true
			key, _, _ := strings.Cut(kv, "=")
			switch {
			case shared && key != targetLabel && key != releasedKey && key != goneKey, !shared && key != holderKey:
				misplaced = append(misplaced, nudge)
			case !ch.deleting || !sharedDeleting:
				early = append(early, nudge)
			case key == goneKey && (namespaceGone == 0 || ch.rv < namespaceGone):
				early = append(early, nudge+" (before Namespace "+set.namespace()+" was gone)")
			}
			if shared {
				came = append(came, fmt.Sprintf("%s %s", key, at(ch.at.Sub(begin))))
			}
		}
	}
	t.Logf("%s: the shared Object's nudges: %s", set.name, orNone(came))
	if len(applied) == 0 {
		t.Errorf("ERROR: %s: the Operations applied no teardown nudge while its %d dependents released the shared Object", set.name, releases)
	}
	if len(misplaced) > 0 {
		t.Errorf("ERROR: %s: %d nudges went where no rule puts them: %s", set.name, len(misplaced), strings.Join(misplaced, "; "))
	}
	if len(early) > 0 {
		t.Errorf("ERROR: %s: %d nudges came too early: %s", set.name, len(early), strings.Join(early, "; "))
	}
	if len(values) > releases+3 {
		t.Errorf("ERROR: %s: the Operations applied %d teardown values for %d releases of the shared Object: more than one per set of holders it had", set.name, len(values), releases)
	}
	return releases, len(applied)
}

// An opState is what the watch of Operations saw of one Operation.
type opState struct {
	name string
	// watched and watchedRV are the Object the Operation was made for, and
	// its resourceVersion then.
	watched   string
	watchedRV int64
	// seen is when the watch first saw the Operation, done when it saw it
	// finished.
	seen, done time.Time
	// status and reason are its Succeeded condition's.
	status, reason string
	failures       int64
	// errors are the messages of the Synced=False conditions it had.
	errors  []string
	output  string
	applied []string
}

func (o opState) finished() bool { return o.status == "True" || o.status == "False" }

// An opTracker records every Operation from a watch, including those the
// WatchOperation's history limits delete soon after they finish.
type opTracker struct {
	mu sync.Mutex
	// ops in the order they were first seen.
	ops   []*opState
	index map[string]int
	// last is when a new Operation was last seen.
	last time.Time
	err  error
}

// snapshot copies what was seen, in the order Operations were first seen.
func (tr *opTracker) snapshot() []opState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make([]opState, len(tr.ops))
	for i, o := range tr.ops {
		out[i] = *o
		out[i].errors = slices.Clone(o.errors)
		out[i].applied = slices.Clone(o.applied)
	}
	return out
}

func (tr *opTracker) observe(u *unstructured.Unstructured) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := time.Now()
	i, ok := tr.index[u.GetName()]
	if !ok {
		rv, _ := strconv.ParseInt(u.GetAnnotations()[watchedRVAnnotation], 10, 64)
		i = len(tr.ops)
		tr.index[u.GetName()] = i
		tr.ops = append(tr.ops, &opState{name: u.GetName(), watched: u.GetAnnotations()[watchedNameAnnotation], watchedRV: rv, seen: now})
		tr.last = now
	}
	o := tr.ops[i]
	if c := condition(u, "Succeeded"); c != nil {
		o.status, o.reason = fmt.Sprint(c["status"]), fmt.Sprint(c["reason"])
	}
	if o.finished() && o.done.IsZero() {
		o.done = now
	}
	o.failures = num(*u, "status", "failures")
	if c := condition(u, "Synced"); c != nil && c["status"] == "False" {
		if msg := fmt.Sprint(c["message"]); !slices.Contains(o.errors, msg) {
			o.errors = append(o.errors, msg)
		}
	}
	if pipeline, _, _ := unstructured.NestedSlice(u.Object, "status", "pipeline"); len(pipeline) > 0 {
		if step, ok := pipeline[0].(map[string]any); ok && step["output"] != nil {
			b, _ := json.Marshal(step["output"])
			o.output = string(b)
		}
	}
	refs, _, _ := unstructured.NestedSlice(u.Object, "status", "appliedResourceRefs")
	o.applied = o.applied[:0]
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok {
			o.applied = append(o.applied, fmt.Sprintf("%v/%v", m["kind"], m["name"]))
		}
	}
}

func (tr *opTracker) fail(err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.err == nil {
		tr.err = err
	}
}

// state returns when a new Operation was last seen and the watch's error.
func (tr *opTracker) state() (time.Time, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.last, tr.err
}

// trackOperations watches every Operation until ctx ends. A watch the API
// server closes is opened again from the last resourceVersion seen.
func (s *stack) trackOperations(ctx context.Context) *opTracker {
	tr := &opTracker{index: map[string]int{}}
	ri := s.client.Resource(gvrOperation)
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		s.t.Fatalf("ERROR: cannot list Operations: %v", err)
	}
	for i := range list.Items {
		tr.observe(&list.Items[i])
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				if ctx.Err() == nil {
					tr.fail(fmt.Errorf("cannot watch Operations: %w", err))
				}
				return
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if ev.Type == watch.Error || !ok {
					tr.fail(fmt.Errorf("the watch of Operations failed: %v", ev.Object))
					w.Stop()
					return
				}
				rv = u.GetResourceVersion()
				tr.observe(u)
			}
			w.Stop()
		}
	}()
	return tr
}

// awaitOperations waits until no Operation is running, none appeared for
// operationsQuiet, and need, if any, is met.
func (s *stack) awaitOperations(ctx context.Context, ops *opTracker, what string, need func([]opState) error) {
	s.t.Helper()
	s.await(ctx, what, operationsFinish, func(context.Context) (bool, error) {
		last, err := ops.state()
		if err != nil {
			return false, permanent{err}
		}
		all := ops.snapshot()
		if need != nil {
			if err := need(all); err != nil {
				return false, err
			}
		}
		var running []string
		for _, o := range all {
			if !o.finished() {
				running = append(running, o.name)
			}
		}
		if len(running) > 0 {
			return false, fmt.Errorf("%d Operations running: %s", len(running), strings.Join(running, ", "))
		}
		return time.Since(last) >= operationsQuiet, fmt.Errorf("none of %d Operations running; the last new one appeared %s ago, want %s without one",
			len(all), time.Since(last).Round(100*time.Millisecond), operationsQuiet)
	})
}

// operationCounts counts the Operations by how they ended.
type operationCounts struct {
	total, succeeded, failed, running, retried, retriedSucceeded int
}

// checkOperations asserts that every Operation succeeded, and logs those
// that failed on the way and why.
func (s *stack) checkOperations(ops *opTracker) operationCounts {
	t := s.t
	var c operationCounts
	for _, o := range ops.snapshot() {
		c.total++
		switch {
		case o.status == "True":
			c.succeeded++
		case o.status == "False":
			c.failed++
			t.Errorf("ERROR: Operation %s (watched %s) failed: Succeeded=False %s after %d failures: %s", o.name, o.watched, o.reason, o.failures, strings.Join(o.errors, "; "))
		default:
			c.running++
			t.Errorf("ERROR: Operation %s (watched %s) never finished: Succeeded %q %s, %d failures: %s", o.name, o.watched, o.status, o.reason, o.failures, strings.Join(o.errors, "; "))
		}
		if o.failures > 0 || len(o.errors) > 0 {
			c.retried++
			if o.status == "True" {
				c.retriedSucceeded++
			}
		}
	}
	t.Logf("Operations: %d created, %d Succeeded, %d failed, %d retried (%d of them then Succeeded), %d never finished",
		c.total, c.succeeded, c.failed, c.retried, c.retriedSucceeded, c.running)
	t.Logf("Operations, all of them: %s", describeOperations(ops.snapshot(), nil))
	return c
}

// A progression is how a count changed over time.
type progression struct {
	steps []string
	last  int
}

func (p *progression) add(at time.Duration, count int) {
	if count != p.last {
		p.steps = append(p.steps, fmt.Sprintf("%d at %s", count, at.Round(100*time.Millisecond)))
		p.last = count
	}
}

func (p progression) String() string { return strings.Join(p.steps, ", ") }

// objectNames are the names of the set's Objects.
func objectNames(set objectSet) map[string]bool {
	names := map[string]bool{set.shared(): true}
	for i := 1; i <= set.n; i++ {
		names[set.dependent(i)] = true
	}
	return names
}

// describeOperations sums up the Operations made for the named Objects (all
// with no names): how many, how many applied anything, and the errors of
// those that failed on the way, grouped by message.
func describeOperations(all []opState, names map[string]bool) string {
	var total, applied, retried, dependents int
	perDependent := map[string]int{}
	errs := map[string]int{}
	for _, o := range all {
		if names != nil && !names[o.watched] {
			continue
		}
		total++
		perDependent[o.watched]++
		if len(o.applied) > 0 {
			applied++
		}
		if o.failures > 0 || len(o.errors) > 0 {
			retried++
		}
		for _, e := range o.errors {
			errs[e]++
		}
	}
	most := 0
	for _, n := range perDependent {
		most = max(most, n)
		dependents++
	}
	out := fmt.Sprintf("%d Operations for %d Objects (at most %d for one), %d of them applied something, %d failed at least once", total, dependents, most, applied, retried)
	var lines []string
	for _, e := range slices.Sorted(maps.Keys(errs)) {
		lines = append(lines, fmt.Sprintf("%d× %q", errs[e], e))
	}
	if len(lines) > 0 {
		out += ": " + strings.Join(lines, "; ")
	}
	return out
}

// ownersOf says who owns an object's reference finalizers: each field
// manager other than Operations by name, and the Operations together.
func ownersOf(u *unstructured.Unstructured) string {
	var parts []string
	operations, entries := 0, 0
	for _, mf := range u.GetManagedFields() {
		count := ownedRefFinalizers(mf)
		if strings.HasPrefix(mf.Manager, operationFieldOwner) {
			operations += count
			entries++
			continue
		}
		if count > 0 {
			parts = append(parts, fmt.Sprintf("%s (%s) %d", mf.Manager, mf.Operation, count))
		}
	}
	if entries > 0 {
		parts = append(parts, fmt.Sprintf("%d Operations (Apply) %d", entries, operations))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
