//go:build controlplane

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What Crossplane v2.4.0's Usages put on the control plane.
const (
	// usageWebhook is the webhook of cluster/webhookconfigurations/usage.yaml
	// that refuses deleting an object a Usage names.
	usageWebhook = "nousages.protection.crossplane.io"
	// inUseLabel is what the Usage controller puts on the used object: the
	// webhook sees only deletions of objects that carry it.
	inUseLabel = "crossplane.io/in-use"
	// deletionAttemptAnnotation is what the webhook puts on an object whose
	// deletion it refused: the policy that replayDeletion replays.
	deletionAttemptAnnotation = "usage.crossplane.io/deletion-attempt-with-policy"
	// replayLog is what Crossplane logs when it replays a deletion.
	replayLog = "Replaying deletion of the used resource"
)

// Bounds of the Usage scenario.
const (
	// usageProtects bounds how long from creating the XR until its Usage is
	// Ready and the external object carries the in-use label.
	usageProtects = 2 * time.Minute
	// usageReleases bounds how long from the Object's release until the
	// external object is gone. A Usage being deleted checks for its using
	// resource every 30 s (waitPollInterval in core's Usage controller), and
	// replays the deletion 2 s after it lets go.
	usageReleases = 3 * time.Minute
)

// How the dependent Object goes away.
type release int

const (
	releaseByDeletingXR release = iota
	releaseByRemovingObject
)

func (r release) String() string {
	if r == releaseByDeletingXR {
		return "deleting the XR"
	}
	return "removing the Object from the composition"
}

// TestUsageOfExternalObjectRefusesItsDeletionThenReplaysIt proves, with
// Crossplane's Usage webhook served, that the Usage function-dependencies
// composes for a reference to an object its XR doesn't compose (usages:
// External) protects that object: the API server refuses to delete it while
// the referencing Object lives, and, since the function sets replayDeletion,
// Crossplane deletes it when the Usage goes. The Object goes once by deleting
// the XR, where the Usage waits for it to be gone, and once by removing it
// from the composition while the XR lives, where it doesn't (see
// checkReplay).
func TestUsageOfExternalObjectRefusesItsDeletionThenReplaysIt(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	s := startStack(ctx, t)
	s.createXRD(ctx)

	var runs []usageRun
	for _, how := range []release{releaseByDeletingXR, releaseByRemovingObject} {
		runs = append(runs, s.externalUsage(ctx, how))
	}
	t.Logf("SUMMARY (an Object referencing a Namespace its XR doesn't compose, function-dependencies with usages: External, Crossplane v2.4.0 with its Usage webhook, provider-kubernetes v1.2.1):")
	for _, r := range runs {
		replayed := r.replayed.Round(100*time.Millisecond).String() + " after"
		if r.replayed < 0 {
			replayed = (-r.replayed).Round(100*time.Millisecond).String() + " before"
		}
		t.Logf("  released by %s: Usage Ready and the Namespace in use %s after creating the XR; its DELETE refused in %s (HTTP %d): %q; after the release the Object was gone in %s, the Namespace's deletion replayed %s that (after the Object and its ConfigMap were gone: %t), the Namespace gone %s after the release",
			r.how, r.protected.Round(100*time.Millisecond), r.refusedIn.Round(time.Millisecond), r.code, r.refusal,
			r.objectGone.Round(100*time.Millisecond), replayed, r.ordered, r.namespaceGone.Round(100*time.Millisecond))
	}
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start)", time.Since(wall).Round(time.Second))
}

// usageRun is what one XR measured.
type usageRun struct {
	how release
	// protected is from creating the XR until the Usage was Ready and the
	// external object carried the in-use label.
	protected time.Duration
	// refusedIn is how long the refused DELETE took; code and refusal are
	// the API server's answer.
	refusedIn time.Duration
	code      int32
	refusal   string
	// objectGone is from the release until the Object was gone; replayed,
	// from then until the external object's deletion began; namespaceGone,
	// from the release until the external object was gone.
	objectGone, replayed, namespaceGone time.Duration
	// ordered is whether the Namespace began deleting only after the
	// Object and its ConfigMap were gone.
	ordered bool
}

// externalUsage composes an Object that references a Namespace the test
// creates, asserts that the Usage the function composes refuses the
// Namespace's deletion, then releases the Object and asserts that
// Crossplane replays the deletion.
func (s *stack) externalUsage(ctx context.Context, how release) usageRun {
	t := s.t
	xr := map[release]string{releaseByDeletingXR: "usage-xr-deleted", releaseByRemovingObject: "usage-object-removed"}[how]
	ns, app := externalNamespaceOf(xr), xr+"-app"
	run := usageRun{how: how}

	s.create(ctx, gvrComposition, "", usageComposition(xr))
	s.create(ctx, gvrNamespace, "", obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}))
	created := s.createXR(ctx, xr, xr)

	var usage *unstructured.Unstructured
	err := s.poll(ctx, usageProtects, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		o, err := s.client.Resource(gvrObject).Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !conditionTrue(o, "Ready") {
			return false, fmt.Errorf("Object %s: %s", app, describeCondition(o, "Ready"))
		}
		usages, err := s.client.Resource(gvrClusterUsage).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr})
		if err != nil {
			return false, err
		}
		if len(usages.Items) != 1 {
			return false, fmt.Errorf("%d ClusterUsages composed", len(usages.Items))
		}
		usage = &usages.Items[0]
		if !conditionTrue(usage, "Ready") {
			return false, fmt.Errorf("ClusterUsage %s: %s", usage.GetName(), describeCondition(usage, "Ready"))
		}
		n, err := s.client.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return n.GetLabels()[inUseLabel] == "true", fmt.Errorf("Namespace %s lacks %s=true", ns, inUseLabel)
	})
	run.protected = time.Since(created)
	if err != nil {
		t.Fatalf("ERROR: %s: the Usage should protect Namespace %s within %s: %v", xr, ns, usageProtects, err)
	}
	spec, _, _ := unstructured.NestedMap(usage.Object, "spec")
	t.Logf("%s: ClusterUsage %s Ready and Namespace %s labelled %s %s after creating the XR; its spec: %v",
		xr, usage.GetName(), ns, inUseLabel, run.protected.Round(100*time.Millisecond), spec)
	for _, want := range []struct {
		path  []string
		value any
	}{
		{[]string{"spec", "of", "apiVersion"}, "v1"},
		{[]string{"spec", "of", "kind"}, "Namespace"},
		{[]string{"spec", "of", "resourceRef", "name"}, ns},
		{[]string{"spec", "by", "kind"}, "Object"},
		{[]string{"spec", "by", "resourceRef", "name"}, app},
		{[]string{"spec", "replayDeletion"}, true},
	} {
		if got, _, _ := unstructured.NestedFieldNoCopy(usage.Object, want.path...); got != want.value {
			t.Errorf("ERROR: %s: the ClusterUsage's %s is %v, want %v", xr, strings.Join(want.path, "."), got, want.value)
		}
	}
	if u, err := s.client.Resource(gvrXR).Get(ctx, xr, metav1.GetOptions{}); err == nil {
		t.Logf("%s: %s; %s", xr, describeCondition(u, "DeletionOrdered"), describeCondition(u, "Ready"))
	}

	s.refuseDeletion(ctx, xr, ns, app, usage.GetName(), &run)

	// Watched from before the release, so that etcd revisions order what
	// happens. By name: Crossplane removes the crossplane.io/composite label
	// from a composed resource it deletes because the composition dropped
	// it, which a watch by that label would report as the resource's end.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rec := &recorder{}
	s.watch(wctx, rec, "Object", s.client.Resource(gvrObject), metav1.ListOptions{FieldSelector: "metadata.name=" + app})
	s.watch(wctx, rec, "ClusterUsage", s.client.Resource(gvrClusterUsage), metav1.ListOptions{FieldSelector: "metadata.name=" + usage.GetName()})
	s.watch(wctx, rec, "Namespace", s.client.Resource(gvrNamespace), metav1.ListOptions{FieldSelector: "metadata.name=" + ns})
	s.watch(wctx, rec, "ConfigMap", s.client.Resource(gvrConfigMap).Namespace(ns), metav1.ListOptions{})
	replaysBefore := s.crossplaneLines(replayLog, `"`+ns+`"`)

	begin := time.Now()
	switch how {
	case releaseByDeletingXR:
		if err := s.client.Resource(gvrXR).Delete(ctx, xr, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("ERROR: cannot delete %s: %v", xr, err)
		}
	case releaseByRemovingObject:
		s.removeFromComposition(ctx, xr, "app")
	}
	var left []string
	err = s.poll(ctx, usageReleases, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		left = nil
		if _, err := s.client.Resource(gvrObject).Get(ctx, app, metav1.GetOptions{}); !kerrors.IsNotFound(err) {
			left = append(left, "Object "+app)
		}
		u, err := s.client.Resource(gvrClusterUsage).Get(ctx, usage.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			left = append(left, fmt.Sprintf("ClusterUsage %s (deleting: %t)", usage.GetName(), u.GetDeletionTimestamp() != nil))
		case !kerrors.IsNotFound(err):
			return false, err
		}
		n, err := s.client.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
		switch {
		case err == nil:
			phase, _, _ := unstructured.NestedString(n.Object, "status", "phase")
			left = append(left, fmt.Sprintf("Namespace %s (%s, labels %v, finalizers %v)", ns, phase, n.GetLabels(), n.GetFinalizers()))
		case !kerrors.IsNotFound(err):
			return false, err
		}
		return len(left) == 0, fmt.Errorf("left: %s", strings.Join(left, "; "))
	})
	run.namespaceGone = time.Since(begin)
	if err != nil {
		t.Errorf("ERROR: %s: after %s, the Object, its Usage and the Namespace it uses should be gone within %s: %v", xr, how, usageReleases, err)
	}
	// Let the watches deliver the last events.
	time.Sleep(time.Second)
	stop()
	changes, werr := rec.result()
	if werr != nil {
		t.Fatalf("ERROR: watching the release of %s: %v", xr, werr)
	}
	s.checkReplay(xr, ns, app, how, begin, changes, &run)
	if replays := s.crossplaneLines(replayLog, `"`+ns+`"`) - replaysBefore; replays == 0 {
		t.Errorf("ERROR: %s: Crossplane didn't log %q for Namespace %s: its deletion wasn't the Usage's replay", xr, replayLog, ns)
	}

	if how == releaseByRemovingObject {
		s.deleteUsageXR(ctx, xr)
	}
	return run
}

// refuseDeletion asserts that the API server refuses to delete the
// Namespace, with the webhook's denial naming the Usage, and that nothing
// starts deleting it.
func (s *stack) refuseDeletion(ctx context.Context, xr, ns, app, usage string, run *usageRun) {
	t := s.t
	begin := time.Now()
	err := s.client.Resource(gvrNamespace).Delete(ctx, ns, metav1.DeleteOptions{})
	run.refusedIn = time.Since(begin)
	if err == nil {
		t.Fatalf("ERROR: %s: the API server deleted Namespace %s, which ClusterUsage %s protects", xr, ns, usage)
	}
	run.refusal = err.Error()
	var status kerrors.APIStatus
	if errors.As(err, &status) {
		run.code = status.Status().Code
	}
	t.Logf("%s: DELETE of Namespace %s refused in %s (HTTP %d): %s", xr, ns, run.refusedIn.Round(time.Millisecond), run.code, run.refusal)
	if denied := fmt.Sprintf("admission webhook %q denied the request", usageWebhook); !strings.Contains(run.refusal, denied) {
		t.Errorf("ERROR: %s: deleting Namespace %s failed, but not with the Usage webhook's denial (%q): %v", xr, ns, denied, err)
	}
	if !strings.Contains(run.refusal, `"`+usage+`"`) {
		t.Errorf("ERROR: %s: the denial doesn't name ClusterUsage %s: %v", xr, usage, err)
	}

	// Refused means refused: no deletion timestamp, and the Object's own
	// ConfigMap in it stays.
	if err := s.hold(ctx, 10*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		n, err := s.client.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.GetDeletionTimestamp() != nil {
			return fmt.Errorf("Namespace %s is being deleted", ns)
		}
		if _, err := s.client.Resource(gvrConfigMap).Namespace(ns).Get(ctx, "app", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("the ConfigMap Object %s manages in it: %w", app, err)
		}
		return nil
	}); err != nil {
		t.Errorf("ERROR: %s: after the refused deletion: %v", xr, err)
	}
	n, err := s.client.Resource(gvrNamespace).Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	if policy, ok := n.GetAnnotations()[deletionAttemptAnnotation]; !ok {
		t.Errorf("ERROR: %s: Namespace %s lacks %s after the refused deletion: there is nothing to replay", xr, ns, deletionAttemptAnnotation)
	} else {
		t.Logf("%s: Namespace %s still Active 10 s after the refused DELETE, its ConfigMap in place; %s: %s; finalizers: %v", xr, ns, deletionAttemptAnnotation, policy, n.GetFinalizers())
	}
}

// checkReplay reads the release from the watches. Deleting the XR, the
// Namespace must begin deleting only after the Object is gone, and its
// ConfigMap with it: the Usage, deleted by Kubernetes's garbage collector,
// waits for the Object. Removing the Object from the composition, Crossplane
// deletes the Usage itself, first taking its crossplane.io/composite label
// off, and core's Usage controller waits for the using resource only while
// that label is there: the replay comes 2 s after the Usage's deletion,
// whether the Object is gone or not. That order is measured and logged, not
// asserted.
func (s *stack) checkReplay(xr, ns, app string, how release, begin time.Time, changes []change, run *usageRun) {
	t := s.t
	first := func(kind, name string, match func(change) bool) *change {
		for i := range changes {
			if ch := &changes[i]; ch.kind == kind && (name == "" || ch.name == name) && match(*ch) {
				return ch
			}
		}
		return nil
	}
	deleting := func(c change) bool { return c.deleting }
	deleted := func(c change) bool { return c.deleted }
	objectDeleting, objectGone := first("Object", app, deleting), first("Object", app, deleted)
	usageDeleting, usageGone := first("ClusterUsage", "", deleting), first("ClusterUsage", "", deleted)
	configMapGone := first("ConfigMap", "app", deleted)
	nsDeleting, nsGone := first("Namespace", ns, deleting), first("Namespace", ns, deleted)
	at := func(c *change) string {
		if c == nil {
			return "never"
		}
		return fmt.Sprintf("%s (revision %d)", c.at.Sub(begin).Round(10*time.Millisecond), c.rv)
	}
	t.Logf("%s: after %s (times after it): Object %s deleting %s, gone %s; its ConfigMap gone %s; ClusterUsage deleting %s, gone %s; Namespace %s deleting %s, gone %s",
		xr, how, app, at(objectDeleting), at(objectGone), at(configMapGone), at(usageDeleting), at(usageGone), ns, at(nsDeleting), at(nsGone))
	if objectGone == nil || nsDeleting == nil || nsGone == nil {
		t.Errorf("ERROR: %s: the Object's end and the Namespace's replayed deletion should both show in the watches", xr)
		return
	}
	run.objectGone = objectGone.at.Sub(begin)
	run.replayed = nsDeleting.at.Sub(objectGone.at)
	run.ordered = nsDeleting.rv > objectGone.rv && configMapGone != nil && nsDeleting.rv > configMapGone.rv
	// Either way the Usage holds until the Object is gone: removed from the
	// composition, the Object is dropped from observed state while
	// Crossplane deletes it, and the function asks for it by name to keep
	// its Usage.
	if !run.ordered {
		t.Errorf("ERROR: %s: Namespace %s began deleting (%s) before Object %s, which uses it, was gone (%s) or before its ConfigMap in it was deleted (%s); the Usage began deleting %s",
			xr, ns, at(nsDeleting), app, at(objectGone), at(configMapGone), at(usageDeleting))
	}
}

// removeFromComposition removes a resource from the composition of the
// same name while its XR lives.
func (s *stack) removeFromComposition(ctx context.Context, name, resource string) {
	t := s.t
	comp, err := s.client.Resource(gvrComposition).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	pipeline, _, _ := unstructured.NestedSlice(comp.Object, "spec", "pipeline")
	input := pipeline[0].(map[string]any)["input"].(map[string]any)
	var kept []any
	for _, r := range input["resources"].([]any) {
		if r.(map[string]any)["name"] != resource {
			kept = append(kept, r)
		}
	}
	input["resources"] = kept
	must(t, unstructured.SetNestedSlice(comp.Object, pipeline, "spec", "pipeline"))
	if _, err := s.client.Resource(gvrComposition).Update(ctx, comp, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("ERROR: cannot remove %s from composition %s: %v", resource, name, err)
	}
}

// deleteUsageXR deletes an XR of the Usage scenario and waits until nothing
// it composed is left.
func (s *stack) deleteUsageXR(ctx context.Context, xr string) {
	if err := s.client.Resource(gvrXR).Delete(ctx, xr, metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("ERROR: cannot delete %s: %v", xr, err)
	}
	err := s.poll(ctx, 2*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		objs, err := s.client.Resource(gvrObject).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr})
		if err != nil {
			return false, err
		}
		_, err = s.client.Resource(gvrXR).Get(ctx, xr, metav1.GetOptions{})
		return len(objs.Items) == 0 && kerrors.IsNotFound(err), fmt.Errorf("%d Objects left; the XR gone: %t", len(objs.Items), kerrors.IsNotFound(err))
	})
	if err != nil {
		s.t.Errorf("ERROR: %s: left behind after deleting it: %v", xr, err)
	}
}

// externalNamespaceOf is the Namespace the test creates for an XR of the
// Usage scenario to reference; the XR doesn't compose it.
func externalNamespaceOf(xr string) string { return "external-" + xr }

// usageComposition composes an Object, app, that manages a ConfigMap in the
// XR's external Namespace and references that Namespace, so that
// function-dependencies, with usages: External, composes a ClusterUsage of
// the Namespace by the Object. The second Object, anchor, references
// nothing; it is there so that the composition still composes something
// once app is removed (function-patch-and-transform refuses an input
// without resources).
func usageComposition(name string) *unstructured.Unstructured {
	format := func(fmt string) map[string]any {
		return map[string]any{"type": "string", "string": map[string]any{"type": "Format", "fmt": fmt}}
	}
	patch := func(to, fmt string) map[string]any {
		return map[string]any{"type": "FromCompositeFieldPath", "fromFieldPath": "metadata.name", "toFieldPath": to, "transforms": []any{format(fmt)}}
	}
	configMap := func(metadata map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": map[string]any{"owner": "function-dependencies control-plane test"}}
	}
	app := map[string]any{
		"name": "app",
		"base": map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"spec": map[string]any{
				"references":  []any{map[string]any{"dependsOn": map[string]any{"apiVersion": "v1", "kind": "Namespace", "name": "set-by-a-patch"}}},
				"forProvider": map[string]any{"manifest": configMap(map[string]any{"name": "app"})},
			},
		},
		"patches": []any{
			patch("metadata.name", "%s-app"),
			patch("spec.references[0].dependsOn.name", "external-%s"),
			patch("spec.forProvider.manifest.metadata.namespace", "external-%s"),
		},
	}
	anchor := map[string]any{
		"name": "anchor",
		"base": map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"spec": map[string]any{"forProvider": map[string]any{"manifest": configMap(map[string]any{"namespace": "default"})}},
		},
		"patches": []any{patch("metadata.name", "%s-anchor"), patch("spec.forProvider.manifest.metadata.name", "%s-anchor")},
	}
	return withInput(pipelineComposition(name, []any{app, anchor}, true), map[string]any{"protection": "Both"})
}
