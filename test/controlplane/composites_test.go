//go:build controlplane

package controlplane

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Bounds of the test of ordering across composites.
const (
	// acrossHold is how long after deleting the cluster's XR the test looks
	// at what of it is left while the apps' XR lives: the Secret's Object
	// goes within seconds when nothing holds it.
	acrossHold = 45 * time.Second
	// acrossTeardown bounds the apps' XR's teardown, and with it the
	// cluster's where its deletion waits for the apps': each level waits for
	// a Usage's poll (30 s) and the replay.
	acrossTeardown = 3 * time.Minute
)

// TestTheClusterOutlivesTheCompositesThatRunOnIt composes a cluster as a
// platform does, in one XR (its "cluster side": an Object whose manifest is a
// Secret holding a kubeconfig for this control plane, and the
// provider-kubernetes ProviderConfig that reads it), and what runs on it in
// another XR: n Objects (ConfigMaps in a Namespace) that name that
// ProviderConfig (issue 38). It deletes the cluster's XR first, looks at what
// of its cluster side is left while the apps' XR lives, then deletes the
// apps' XR and looks at what is left at the end. Three pairs at once, each
// with function-dependencies in both pipelines:
//
//   - neither infers: the cluster's XR deletes its Secret's Object at once,
//     the remote Secret goes, and the apps' Objects can't connect to delete
//     their ConfigMaps: they are stuck, and so is the ProviderConfig their
//     ProviderConfigUsages hold. The test shows that, then removes the
//     finalizers;
//   - the cluster's XR infers [ProviderConfigs, Credentials]: its
//     ProviderConfig's ClusterUsage of the Secret's Object keeps the Secret,
//     and the ProviderConfigUsages of the apps' Objects keep the
//     ProviderConfig, so the chain holds across the composites with no Usage
//     between them: the cluster side must outlive every app, the remote
//     ConfigMaps must be deleted, and nothing may be left;
//   - the apps' XR infers [ProviderConfigs]: each app's Object uses the
//     cluster's XR (the ProviderConfig's composite), by a ClusterUsage, so
//     that deleting the cluster's XR is refused and replayed once no app is
//     left; the cluster's XR infers nothing. The same must hold.
func TestTheClusterOutlivesTheCompositesThatRunOnIt(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_ACROSS_DEPENDENTS", 3)
	s := startStack(ctx, t)
	s.createXRD(ctx)
	kubeconfig, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	infer := []any{"ProviderConfigs", "Credentials"}
	neither := &acrossPair{name: "across-neither", n: n}
	clusterInfers := &acrossPair{name: "across-cluster", n: n, clusterInfer: infer}
	appsInfer := &acrossPair{name: "across-apps", n: n, appsInfer: []any{"ProviderConfigs"}}
	pairs := []*acrossPair{neither, clusterInfers, appsInfer}
	for _, p := range pairs {
		s.create(ctx, gvrNamespace, "", obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": p.name}}))
		s.create(ctx, gvrComposition, "", p.clusterComposition(kubeconfig))
		s.create(ctx, gvrComposition, "", p.appsComposition())
		s.createXR(ctx, p.clusterXR(), p.clusterXR())
		s.createXR(ctx, p.appsXR(), p.appsXR())
	}
	scenario := time.Now()
	for _, p := range pairs {
		s.await(ctx, p.name+" to be Ready", inferReady, func(ctx context.Context) (bool, error) {
			st, err := s.acrossState(ctx, p)
			if err != nil {
				return false, err
			}
			err = st.ready(p)
			return err == nil, err
		})
		if u, err := s.client.Resource(gvrXR).Get(ctx, p.appsXR(), metav1.GetOptions{}); err == nil {
			t.Logf("%s: Ready; the apps' XR: %s", p.name, describeCondition(u, "DeletionOrdered"))
		}
	}

	// The cluster's XR first. A Usage of it refuses its deletion; Crossplane
	// replays the deletion once the Usage is gone.
	for _, p := range pairs {
		err := s.client.Resource(gvrXR).Delete(ctx, p.clusterXR(), metav1.DeleteOptions{})
		switch {
		case err == nil:
			p.clusterRefused = false
		case kerrors.IsNotFound(err):
			t.Fatalf("ERROR: %s: the cluster's XR is gone before its deletion", p.name)
		default:
			p.clusterRefused = true
			t.Logf("%s: deleting the cluster's XR: %v", p.name, err)
		}
	}
	time.Sleep(acrossHold)
	for _, p := range pairs {
		if p.whileApps, err = s.acrossState(ctx, p); err != nil {
			t.Fatalf("ERROR: %s: %v", p.name, err)
		}
		t.Logf("%s: %s after deleting the cluster's XR, with the apps' XR alive: %s", p.name, acrossHold, p.whileApps)
	}

	for _, p := range pairs {
		if err := s.client.Resource(gvrXR).Delete(ctx, p.appsXR(), metav1.DeleteOptions{}); err != nil {
			t.Fatalf("ERROR: %s: cannot delete the apps' XR: %v", p.name, err)
		}
		p.appsDeleted = time.Now()
	}
	for _, p := range pairs {
		if p == neither {
			continue
		}
		err := s.poll(ctx, time.Until(p.appsDeleted.Add(acrossTeardown)), 250*time.Millisecond, func(ctx context.Context) (bool, error) {
			st, err := s.acrossState(ctx, p)
			if err != nil {
				return false, err
			}
			p.atEnd = st
			return st.empty(), fmt.Errorf("left: %s", st)
		})
		p.gone = time.Since(p.appsDeleted)
		if err != nil {
			t.Errorf("ERROR: %s: left %s after deleting the apps' XR: %s", p.name, acrossTeardown, p.atEnd)
		}
	}
	// The pair without inference has as long again as its Secret's Object
	// took to go: its Objects fail to connect at their first try.
	time.Sleep(time.Until(neither.appsDeleted.Add(acrossHold)))
	if neither.atEnd, err = s.acrossState(ctx, neither); err != nil {
		t.Fatalf("ERROR: %s: %v", neither.name, err)
	}
	neither.gone = time.Since(neither.appsDeleted)

	for _, p := range pairs {
		for _, e := range p.check(neither) {
			t.Errorf("ERROR: %s: %s", p.name, e)
		}
	}
	t.Logf("SUMMARY (the cluster side in one XR: a kubeconfig Secret's Object and the ProviderConfig reading it; %d Objects naming that ProviderConfig in another XR; the cluster's XR deleted first, then after %s the apps'; Crossplane v2.4.0 with its Usage webhook, provider-kubernetes v1.2.1):", n, acrossHold)
	for _, p := range pairs {
		t.Logf("  %s: deleting the cluster's XR refused: %t; while the apps lived: %s; %s after deleting the apps' XR, left: %s",
			p.label(), p.clusterRefused, p.whileApps, p.gone.Round(100*time.Millisecond), p.atEnd)
	}
	s.unstickAcross(ctx, neither)
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start: %s)", time.Since(scenario).Round(time.Second), time.Since(wall).Round(time.Second))
}

// An acrossPair is a cluster's XR and an apps' XR that uses its
// ProviderConfig, with each one's infer, and what the test saw.
type acrossPair struct {
	name                    string
	n                       int
	clusterInfer, appsInfer []any

	clusterRefused   bool
	appsDeleted      time.Time
	gone             time.Duration
	whileApps, atEnd acrossState
}

// The names of a pair's objects: its remote objects live in a Namespace of
// its name.
func (p *acrossPair) clusterXR() string      { return p.name + "-cluster" }
func (p *acrossPair) appsXR() string         { return p.name + "-apps" }
func (p *acrossPair) providerConfig() string { return p.name + "-cluster" }
func (p *acrossPair) secretObject() string   { return p.name + "-kubeconfig" }

func (p *acrossPair) label() string {
	return fmt.Sprintf("infer in the cluster's XR %v, in the apps' XR %v", p.clusterInfer, p.appsInfer)
}

// clusterComposition composes the cluster side: the Object of the
// kubeconfig Secret and the ProviderConfig that reads it.
func (p *acrossPair) clusterComposition(kubeconfig []byte) *unstructured.Unstructured {
	resources := []any{
		map[string]any{"name": "config", "base": map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig",
			"metadata": map[string]any{"name": p.providerConfig()},
			"spec": map[string]any{"credentials": map[string]any{
				"source":    "Secret",
				"secretRef": map[string]any{"namespace": p.name, "name": inferSecret, "key": "kubeconfig"},
			}},
		}},
		acrossObject("kubeconfig", p.secretObject(), "", map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": inferSecret, "namespace": p.name},
			"data":     map[string]any{"kubeconfig": base64.StdEncoding.EncodeToString(kubeconfig)},
		}),
	}
	return withInfer(pipelineComposition(p.clusterXR(), resources, true), p.clusterInfer)
}

// appsComposition composes the n Objects that run on the cluster.
func (p *acrossPair) appsComposition() *unstructured.Unstructured {
	var resources []any
	for i := 1; i <= p.n; i++ {
		resources = append(resources, acrossObject(fmt.Sprintf("app-%02d", i), fmt.Sprintf("%s-app-%02d", p.name, i), p.providerConfig(), map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("app-%02d", i), "namespace": p.name},
			"data":     map[string]any{"index": strconv.Itoa(i)},
		}))
	}
	return withInfer(pipelineComposition(p.appsXR(), resources, true), p.appsInfer)
}

// acrossObject is a composition resource of an Object of the manifest,
// using the ProviderConfig if one is named.
func acrossObject(resource, name, providerConfig string, manifest map[string]any) map[string]any {
	spec := map[string]any{"forProvider": map[string]any{"manifest": manifest}}
	if providerConfig != "" {
		spec["providerConfigRef"] = map[string]any{"name": providerConfig}
	}
	return map[string]any{"name": resource, "base": map[string]any{
		"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

func withInfer(c *unstructured.Unstructured, infer []any) *unstructured.Unstructured {
	if len(infer) == 0 {
		return c
	}
	return withInput(c, map[string]any{"infer": infer})
}

// acrossState is what of a pair exists.
type acrossState struct {
	clusterXR, appsXR bool
	// secretObject is the kubeconfig Secret's Object, if it exists; apps the
	// apps' Objects.
	secretObject, providerConfig *unstructured.Unstructured
	apps                         []*unstructured.Unstructured
	// usages are the function's ClusterUsages of either XR, by the XR.
	usages, usagesReady map[string]int
	// configMaps counts the remote ConfigMaps; secret is whether the remote
	// Secret exists.
	configMaps int
	secret     bool
}

func (s *stack) acrossState(ctx context.Context, p *acrossPair) (acrossState, error) {
	st := acrossState{usages: map[string]int{}, usagesReady: map[string]int{}}
	get := func(r schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
		return s.getIfExists(ctx, r, ns, name)
	}
	for _, xr := range []struct {
		name   string
		exists *bool
	}{{p.clusterXR(), &st.clusterXR}, {p.appsXR(), &st.appsXR}} {
		u, err := get(gvrXR, "", xr.name)
		if err != nil {
			return st, err
		}
		*xr.exists = u != nil
		if st.usages[xr.name], st.usagesReady[xr.name], err = s.clusterUsagesOf(ctx, xr.name); err != nil {
			return st, err
		}
	}
	var err error
	if st.secretObject, err = get(gvrObject, "", p.secretObject()); err != nil {
		return st, err
	}
	if st.providerConfig, err = get(gvrProviderConfig, "", p.providerConfig()); err != nil {
		return st, err
	}
	objs, err := s.client.Resource(gvrObject).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + p.appsXR()})
	if err != nil {
		return st, err
	}
	for i := range objs.Items {
		st.apps = append(st.apps, &objs.Items[i])
	}
	st.configMaps, _, st.secret, err = s.remoteObjects(ctx, p.name)
	return st, err
}

// ready returns what the pair still lacks before the deletions: every Object
// Synced and Ready, every remote object there, and the Usages its infer
// composes Ready (the cluster's ProviderConfig's of the Secret's Object; each
// app's of the cluster's XR).
func (st acrossState) ready(p *acrossPair) error {
	objects := st.apps
	if st.secretObject != nil {
		objects = append(objects, st.secretObject)
	}
	notReady := notSyncedAndReady(objects)
	want := map[string]int{}
	if len(p.clusterInfer) > 0 {
		want[p.clusterXR()] = 1
	}
	if len(p.appsInfer) > 0 {
		want[p.appsXR()] = p.n
	}
	switch {
	case !st.clusterXR || !st.appsXR || st.secretObject == nil || st.providerConfig == nil || len(st.apps) != p.n:
		return fmt.Errorf("composed so far: %s", st)
	case len(notReady) > 0:
		return fmt.Errorf("Objects not Synced and Ready: %s", strings.Join(notReady, "; "))
	case st.configMaps != p.n || !st.secret:
		return fmt.Errorf("%d of %d remote ConfigMaps, remote Secret: %t", st.configMaps, p.n, st.secret)
	}
	for _, xr := range []string{p.clusterXR(), p.appsXR()} {
		if st.usages[xr] != want[xr] || st.usagesReady[xr] != want[xr] {
			return fmt.Errorf("%s: %d ClusterUsages, %d Ready, want %d", xr, st.usages[xr], st.usagesReady[xr], want[xr])
		}
	}
	return nil
}

// clusterSideLives is whether what the apps need of the cluster's XR is
// there: the remote Secret, and the ProviderConfig, not deleted.
func (st acrossState) clusterSideLives() bool {
	return st.secret && st.providerConfig != nil
}

func (st acrossState) empty() bool { return st.String() == "nothing" }

// String says what exists.
func (st acrossState) String() string {
	var parts []string
	for _, xr := range []struct {
		what   string
		exists bool
	}{{"the cluster's XR", st.clusterXR}, {"the apps' XR", st.appsXR}} {
		if xr.exists {
			parts = append(parts, xr.what)
		}
	}
	if o := st.secretObject; o != nil {
		parts = append(parts, fmt.Sprintf("the Secret's Object (deleting: %t)", o.GetDeletionTimestamp() != nil))
	}
	if pc := st.providerConfig; pc != nil {
		parts = append(parts, fmt.Sprintf("the ProviderConfig (deleting: %t)", pc.GetDeletionTimestamp() != nil))
	}
	if len(st.apps) > 0 {
		deleting := 0
		for _, o := range st.apps {
			if o.GetDeletionTimestamp() != nil {
				deleting++
			}
		}
		parts = append(parts, fmt.Sprintf("%d app Objects (%d deleting)", len(st.apps), deleting))
	}
	usages := 0
	for _, n := range st.usages {
		usages += n
	}
	if usages > 0 {
		parts = append(parts, fmt.Sprintf("%d ClusterUsages", usages))
	}
	if st.configMaps > 0 {
		parts = append(parts, fmt.Sprintf("remote ConfigMaps: %d", st.configMaps))
	}
	if st.secret {
		parts = append(parts, "the remote Secret")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// check returns what the pair did wrong. With inference in either XR, the
// cluster side outlives the apps, their remote ConfigMaps are deleted, and
// nothing is left; the apps' XR's Usages make the cluster's deletion wait
// for the apps. Without inference, the remote Secret goes while the apps
// live, and they are stuck: if not, the test shows nothing.
func (p *acrossPair) check(neither *acrossPair) []string {
	var errs []string
	if p == neither {
		if p.whileApps.secret || p.atEnd.empty() {
			errs = append(errs, fmt.Sprintf("without inference the Secret was not deleted while the apps lived (%s) or nothing was stuck at the end (%s): issue 38 didn't show", p.whileApps, p.atEnd))
		}
		return errs
	}
	if !p.whileApps.clusterSideLives() {
		errs = append(errs, "the cluster side didn't outlive the apps: "+p.whileApps.String())
	}
	if !p.atEnd.empty() {
		errs = append(errs, "left at the end: "+p.atEnd.String())
	}
	if len(p.appsInfer) > 0 && (!p.clusterRefused || !p.whileApps.clusterXR || p.whileApps.secretObject == nil || p.whileApps.secretObject.GetDeletionTimestamp() != nil) {
		errs = append(errs, fmt.Sprintf("the apps' Usages didn't refuse the cluster's XR's deletion (refused: %t, while the apps lived: %s)", p.clusterRefused, p.whileApps))
	}
	return errs
}

// unstickAcross deletes what the pair left, removing the finalizers that
// hold it, and its Namespace with the orphaned remote objects.
func (s *stack) unstickAcross(ctx context.Context, p *acrossPair) {
	t := s.t
	st, err := s.acrossState(ctx, p)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	release := func(r schema.GroupVersionResource, name string) { s.release(ctx, p.name, r, name) }
	for _, xr := range []string{p.clusterXR(), p.appsXR()} {
		release(gvrXR, xr)
	}
	for _, o := range st.apps {
		release(gvrObject, o.GetName())
	}
	pcus, err := s.providerConfigUsagesOf(ctx, p.providerConfig())
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	for _, u := range pcus {
		release(gvrProviderConfigUsage, u.GetName())
	}
	release(gvrProviderConfig, p.providerConfig())
	if err := s.client.Resource(gvrNamespace).Delete(ctx, p.name, metav1.DeleteOptions{}); err != nil && !kerrors.IsNotFound(err) {
		t.Errorf("ERROR: %s: cleaning up, cannot delete Namespace %s: %v", p.name, p.name, err)
	}
	err = s.poll(ctx, 2*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		st, err := s.acrossState(ctx, p)
		if err != nil {
			return false, err
		}
		return st.empty(), fmt.Errorf("left: %s", st)
	})
	if err != nil {
		t.Errorf("ERROR: %s: cleaning up: %v", p.name, err)
		return
	}
	t.Logf("%s: cleaned up: finalizers removed, its Namespace with the orphaned remote objects deleted", p.name)
}
