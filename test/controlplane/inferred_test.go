//go:build controlplane

package controlplane

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var gvrProviderConfigUsage = schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha1", Resource: "providerconfigusages"}

// Bounds of the inferred-order test.
const (
	// inferStuckAfter is how long after deleting the XR without inference
	// the test counts what is left.
	inferStuckAfter = 5 * time.Minute
	// inferReady bounds how long from creating an XR until its Objects are
	// Ready and its Usages protect.
	inferReady = 3 * time.Minute
	// inferTeardown bounds an XR's teardown with inference. Each level of
	// the order waits for a Usage's poll (30 s) and the replay (2 s).
	inferTeardown = 4 * time.Minute
)

// inferSecret is the name of the kubeconfig Secret, in the arm's Namespace,
// that the arm's ProviderConfig reads; inferWorkload, the name of the
// workload's remote object there, and of its composition resource.
const (
	inferSecret   = "kubeconfig"
	inferWorkload = "vcluster"
)

// TestInferredOrderKeepsTheClusterUntilWhatRunsOnIt composes, as a platform
// would a cluster and what runs on it, an Object whose manifest is a Secret
// holding a kubeconfig for this control plane, a provider-kubernetes
// ProviderConfig that reads its credentials from that Secret, and n Objects
// (ConfigMaps in a Namespace) that use that ProviderConfig; no
// spec.references anywhere. Deleting the XR deletes them all at once: the
// Secret goes first, and the Objects can no longer connect to delete their
// ConfigMaps (issue 26). Four XRs:
//
//   - without inference (function-dependencies in the pipeline, infer
//     unset): what is left five minutes after deleting the XR is counted, and
//     something must be; then the test removes the finalizers;
//   - with infer: [ProviderConfigs, Credentials]: every inferred edge gets a
//     ClusterUsage, and the teardown must be ordered (every dependent Object
//     gone before the ProviderConfig, the ProviderConfig before the
//     Secret's Object, every remote ConfigMap before the remote Secret) and
//     leave nothing;
//   - the baseline: the same with inference, but the Secret made outside the
//     XR, so that only the ProviderConfigs edges order the teardown;
//   - the Secret written by a workload, as a vcluster's pod writes its
//     kubeconfig: the XR composes, instead of the Secret's Object, an Object
//     whose manifest is the workload (a ConfigMap standing for vcluster's
//     StatefulSet: no kubelet runs here), and the test, as the workload's
//     controller, writes the Secret owned by the workload's remote object,
//     so that the garbage collector deletes it when the workload goes. No
//     inference can see that edge: the input declares it, the ProviderConfig
//     depending on the workload, and it gets a ClusterUsage since the step
//     writes Usages. The teardown must be ordered as the second's, the
//     workload in the place of the Secret's Object, and leave nothing.
//
// The second's and the fourth's teardowns may each take at most 1.5 times
// the baseline's. The first XR's five minutes run while the other three are
// created and torn down, one after the other so that their teardown times
// compare.
func TestInferredOrderKeepsTheClusterUntilWhatRunsOnIt(t *testing.T) {
	wall := time.Now()
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_INFERRED_DEPENDENTS", 10)
	s := startStack(ctx, t)
	s.createXRD(ctx)
	kubeconfig, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	infer := []any{"ProviderConfigs", "Credentials"}
	without := &inferArm{xr: "inferred-without", n: n, secretFrom: secretComposed}
	with := &inferArm{xr: "inferred-with", n: n, secretFrom: secretComposed, infer: infer, usages: n + 1}
	baseline := &inferArm{xr: "inferred-baseline", n: n, secretFrom: secretOutside, infer: infer, usages: n}
	// The edge as the README declares it: the ProviderConfig (composition
	// resource "cluster") depends on the workload.
	workload := &inferArm{xr: "inferred-workload", n: n, secretFrom: secretByWorkload, infer: infer, usages: n + 1,
		dependencies: []any{map[string]any{"resource": "cluster", "dependsOn": []any{inferWorkload}}}}
	armsAfterWithout := []*inferArm{with, baseline, workload}
	for _, a := range append([]*inferArm{without}, armsAfterWithout...) {
		s.create(ctx, gvrComposition, "", a.composition(kubeconfig))
	}

	scenario := time.Now()
	s.composeInferred(ctx, without, kubeconfig)
	deleted := time.Now()
	if err := s.client.Resource(gvrXR).Delete(ctx, without.xr, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("ERROR: cannot delete %s: %v", without.xr, err)
	}
	t.Logf("%s: deleted; what is left is counted %s later, after the other XRs", without.xr, inferStuckAfter)

	for _, a := range armsAfterWithout {
		s.composeInferred(ctx, a, kubeconfig)
		s.tearDownInferred(ctx, a)
	}
	t.Logf("the XRs after %s were torn down %s after its deletion (its count comes at %s)",
		without.xr, time.Since(deleted).Round(time.Second), inferStuckAfter)

	select {
	case <-ctx.Done():
		t.Fatalf("ERROR: %s: the test ran out of time before counting what was left", without.xr)
	case <-time.After(time.Until(deleted.Add(inferStuckAfter))):
	}
	stuck, err := s.inferredState(ctx, without)
	if err != nil {
		t.Fatalf("ERROR: %s: cannot count what is left: %v", without.xr, err)
	}
	t.Logf("%s: left %s after deleting the XR: %s", without.xr, time.Since(deleted).Round(time.Second), stuck)
	if len(stuck.dependents) > 0 {
		o := stuck.dependents[0]
		t.Logf("%s: why Object %s stays: %s", without.xr, o.GetName(), describeCondition(o, "Synced"))
	}
	if stuck.empty() {
		t.Errorf("ERROR: %s: nothing was left %s after deleting the XR without inference: issue 26 didn't show", without.xr, inferStuckAfter)
	}
	s.unstick(ctx, without)

	t.Logf("SUMMARY (a kubeconfig Secret's Object, a ProviderConfig reading it and %d Objects using that, in one XR; function-dependencies; Crossplane v2.4.0 with its Usage webhook, provider-kubernetes v1.2.1):", n)
	t.Logf("  without inference (infer unset): %s after deleting the XR, left: %s", inferStuckAfter, stuck)
	for _, a := range armsAfterWithout {
		t.Logf("  %s: Objects Ready and %d ClusterUsages Ready %s after creating the XR; teardown %s, ordered: %s; left: %s",
			a.label(), a.usages, a.ready.Round(100*time.Millisecond), a.gone.Round(100*time.Millisecond), a.order, orNone(a.left))
	}
	for _, a := range []*inferArm{with, workload} {
		ratio := a.gone.Seconds() / baseline.gone.Seconds()
		t.Logf("  teardown %s / baseline: %.2f (at most 1.5)", a.secretFrom, ratio)
		if ratio > 1.5 {
			t.Errorf("ERROR: the teardown %s took %s, %.2f times the baseline's %s: more than 1.5 times",
				a.secretFrom, a.gone.Round(100*time.Millisecond), ratio, baseline.gone.Round(100*time.Millisecond))
		}
	}
	t.Logf("SCENARIO WALL TIME: %s (whole test including stack start: %s)", time.Since(scenario).Round(time.Second), time.Since(wall).Round(time.Second))
}

// secretSource is where an arm's kubeconfig Secret comes from.
type secretSource int

const (
	// secretComposed: the XR composes an Object whose manifest is the
	// Secret.
	secretComposed secretSource = iota
	// secretOutside: the test creates the Secret before the XR.
	secretOutside
	// secretByWorkload: the XR composes an Object whose manifest is a
	// workload, and the workload writes the Secret (the test, acting as its
	// controller, once the workload's remote object exists), owned by that
	// object, so that Kubernetes's garbage collector deletes the Secret when
	// the workload goes.
	secretByWorkload
)

func (f secretSource) String() string {
	switch f {
	case secretComposed:
		return "with the Secret composed"
	case secretOutside:
		return "with the Secret made outside the XR"
	default:
		return "with the Secret written by a workload"
	}
}

// An inferArm is one XR of the inferred-order test: what it composes, and
// what its teardown showed.
type inferArm struct {
	xr         string
	n          int
	secretFrom secretSource
	// infer and dependencies are the function's input's, where set; usages
	// is how many ClusterUsages that should compose.
	infer        []any
	dependencies []any
	usages       int
	// input is more of the function's input, for another test's arm:
	// creation, protection.
	input map[string]any

	// ready is from creating the XR until everything was Ready; gone, from
	// deleting it until nothing was left, and left what was at the bound.
	ready, gone time.Duration
	left        []string
	order       inferOrder
}

// The names of what an arm composes: its remote objects live in a Namespace
// named after the XR. The writer is the Object the Secret comes from: the
// Secret's own Object, or the workload's.
func (a *inferArm) namespace() string      { return a.xr }
func (a *inferArm) providerConfig() string { return a.xr + "-cluster" }
func (a *inferArm) writer() string {
	if a.secretFrom == secretByWorkload {
		return a.xr + "-" + inferWorkload
	}
	return a.xr + "-kubeconfig"
}

// writerLabel names the writer in what the test logs.
func (a *inferArm) writerLabel() string {
	if a.secretFrom == secretByWorkload {
		return "the workload's Object"
	}
	return "the Secret's Object"
}

// composesWriter is whether the XR composes an Object the Secret comes
// from; the test's own Secret is none of the XR's.
func (a *inferArm) composesWriter() bool { return a.secretFrom != secretOutside }

func (a *inferArm) label() string {
	switch a.secretFrom {
	case secretOutside:
		return fmt.Sprintf("baseline, infer %v, the Secret made outside the XR", a.infer)
	case secretByWorkload:
		return fmt.Sprintf("infer %v, dependencies %v, the Secret written by a workload", a.infer, a.dependencies)
	}
	return fmt.Sprintf("with infer %v, the Secret composed", a.infer)
}

// secret is the kubeconfig Secret the arm's ProviderConfig reads.
func (a *inferArm) secret(kubeconfig []byte) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": inferSecret, "namespace": a.namespace()},
		"data":     map[string]any{"kubeconfig": base64.StdEncoding.EncodeToString(kubeconfig)},
	}
}

// workloadObject is the manifest of the workload's remote object: a
// ConfigMap standing for vcluster's StatefulSet, since no kubelet runs here.
func (a *inferArm) workloadObject() map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": inferWorkload, "namespace": a.namespace()},
		"data":     map[string]any{"standsFor": "a vcluster StatefulSet, whose pod writes the kubeconfig Secret"},
	}
}

// composition composes the arm's ProviderConfig, its n Objects using it and
// the writer, if the XR composes one: the Object of the Secret the
// ProviderConfig reads, or of the workload that writes it. The names are
// the arm's: each arm has a composition of its own.
func (a *inferArm) composition(kubeconfig []byte) *unstructured.Unstructured {
	object := func(resource, name string, spec map[string]any) map[string]any {
		return map[string]any{"name": resource, "base": map[string]any{
			"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	resources := []any{map[string]any{"name": "cluster", "base": map[string]any{
		"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig",
		"metadata": map[string]any{"name": a.providerConfig()},
		"spec": map[string]any{"credentials": map[string]any{
			"source":    "Secret",
			"secretRef": map[string]any{"namespace": a.namespace(), "name": inferSecret, "key": "kubeconfig"},
		}},
	}}}
	switch a.secretFrom {
	case secretComposed:
		resources = append(resources, object("kubeconfig", a.writer(), map[string]any{"forProvider": map[string]any{"manifest": a.secret(kubeconfig)}}))
	case secretByWorkload:
		resources = append(resources, object(inferWorkload, a.writer(), map[string]any{"forProvider": map[string]any{"manifest": a.workloadObject()}}))
	}
	for i := 1; i <= a.n; i++ {
		resources = append(resources, object(fmt.Sprintf("app-%02d", i), fmt.Sprintf("%s-app-%02d", a.xr, i), map[string]any{
			"providerConfigRef": map[string]any{"name": a.providerConfig()},
			"forProvider": map[string]any{"manifest": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("app-%02d", i), "namespace": a.namespace()},
				"data":     map[string]any{"index": strconv.Itoa(i)},
			}},
		}))
	}
	input := map[string]any{}
	if len(a.infer) > 0 {
		input["infer"] = a.infer
	}
	if len(a.dependencies) > 0 {
		input["dependencies"] = a.dependencies
	}
	maps.Copy(input, a.input)
	return withInput(pipelineComposition(a.xr, resources, true), input)
}

// composeInferred creates the arm's Namespace and, if it is the test's, its
// kubeconfig Secret; then the XR; where the workload writes the Secret,
// writes it as the workload would once it runs; and waits until every
// Object is Synced and Ready, every remote ConfigMap exists and the arm's
// ClusterUsages are Ready.
func (s *stack) composeInferred(ctx context.Context, a *inferArm, kubeconfig []byte) {
	t := s.t
	s.create(ctx, gvrNamespace, "", obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": a.namespace()}}))
	if a.secretFrom == secretOutside {
		s.create(ctx, gvrSecret, a.namespace(), obj(a.secret(kubeconfig)))
	}
	created := s.createXR(ctx, a.xr, a.xr)
	if a.secretFrom == secretByWorkload {
		s.runWorkload(ctx, a, kubeconfig)
	}
	s.await(ctx, a.xr+" to be Ready", inferReady, func(ctx context.Context) (bool, error) {
		st, err := s.inferredState(ctx, a)
		if err != nil {
			return false, err
		}
		err = st.ready(a)
		return err == nil, err
	})
	a.ready = time.Since(created)
	if u, err := s.client.Resource(gvrXR).Get(ctx, a.xr, metav1.GetOptions{}); err == nil {
		t.Logf("%s: Objects Ready, %d ClusterUsages Ready %s after creating the XR; %s",
			a.xr, a.usages, a.ready.Round(100*time.Millisecond), describeCondition(u, "DeletionOrdered"))
	}
}

// runWorkload does what the workload's controller would: once the
// workload's remote object exists, it writes the kubeconfig Secret with an
// ownerReference to that object, so that the garbage collector deletes the
// Secret when the workload is deleted.
func (s *stack) runWorkload(ctx context.Context, a *inferArm, kubeconfig []byte) {
	t := s.t
	var workload *unstructured.Unstructured
	s.await(ctx, a.xr+"'s workload to run", inferReady, func(ctx context.Context) (bool, error) {
		var err error
		workload, err = s.client.Resource(gvrConfigMap).Namespace(a.namespace()).Get(ctx, inferWorkload, metav1.GetOptions{})
		return err == nil, err
	})
	secret := obj(a.secret(kubeconfig))
	secret.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: workload.GetName(), UID: workload.GetUID(),
	}})
	s.create(ctx, gvrSecret, a.namespace(), secret)
	t.Logf("%s: the workload runs; its kubeconfig Secret written, owned by ConfigMap %s/%s", a.xr, a.namespace(), inferWorkload)
}

// tearDownInferred deletes the arm's XR, waits until nothing it composed
// and none of its remote objects is left, and asserts the order the
// inferred edges make, from the API server's watches.
func (s *stack) tearDownInferred(ctx context.Context, a *inferArm) {
	t := s.t
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	rec := &recorder{}
	s.watch(wctx, rec, "Object", s.client.Resource(gvrObject), metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + a.xr})
	s.watch(wctx, rec, "ProviderConfig", s.client.Resource(gvrProviderConfig), metav1.ListOptions{FieldSelector: "metadata.name=" + a.providerConfig()})
	s.watch(wctx, rec, "ConfigMap", s.client.Resource(gvrConfigMap).Namespace(a.namespace()), metav1.ListOptions{})
	s.watch(wctx, rec, "Secret", s.client.Resource(gvrSecret).Namespace(a.namespace()), metav1.ListOptions{FieldSelector: "metadata.name=" + inferSecret})
	refusals, replays := s.count("crossplane", usageRefused), s.count("crossplane", usageReplayed)

	begin := time.Now()
	if err := s.client.Resource(gvrXR).Delete(ctx, a.xr, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("ERROR: cannot delete %s: %v", a.xr, err)
	}
	var st inferredState
	err := s.poll(ctx, inferTeardown, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		if st, err = s.inferredState(ctx, a); err != nil {
			return false, err
		}
		// The baseline's Secret is the test's.
		if a.secretFrom == secretOutside {
			st.secret = false
		}
		return st.empty(), fmt.Errorf("left: %s", st)
	})
	a.gone = time.Since(begin)
	if err != nil {
		a.left = []string{st.String()}
		t.Errorf("ERROR: %s: left behind %s after deleting the XR: %s", a.xr, inferTeardown, st)
	}
	// Let the watches deliver the last events.
	time.Sleep(time.Second)
	stop()
	changes, werr := rec.result()
	if werr != nil {
		t.Fatalf("ERROR: watching the teardown of %s: %v", a.xr, werr)
	}
	a.order = orderOf(changes, a, begin)
	t.Logf("%s: teardown %s (times after deleting the XR, order by etcd revision): %s; %d deletions refused by Usages, %d replayed",
		a.xr, a.gone.Round(100*time.Millisecond), a.order.timeline(), s.count("crossplane", usageRefused)-refusals, s.count("crossplane", usageReplayed)-replays)
	for _, e := range a.order.check(a) {
		t.Errorf("ERROR: %s: %s", a.xr, e)
	}
}

// inferOrder is when the teardown's milestones came, from the watches.
type inferOrder struct {
	begin time.Time
	// The last dependent Object and the last remote ConfigMap gone.
	lastDependentGone, lastConfigMapGone *change
	providerConfigDeleting               *change
	providerConfigGone                   *change
	// writer is the Object the Secret comes from (writerLabel).
	writer             string
	writerDeleting     *change
	writerGone         *change
	remoteWorkloadGone *change
	secretGone         *change
}

func orderOf(changes []change, a *inferArm, begin time.Time) inferOrder {
	o := inferOrder{begin: begin, writer: a.writerLabel()}
	first := func(at **change, c *change) {
		if *at == nil {
			*at = c
		}
	}
	for i := range changes {
		c := &changes[i]
		switch {
		case c.kind == "Object" && c.name == a.writer():
			if c.deleting {
				first(&o.writerDeleting, c)
			}
			if c.deleted {
				first(&o.writerGone, c)
			}
		case c.kind == "Object" && c.deleted:
			o.lastDependentGone = c
		case c.kind == "ConfigMap" && c.deleted && strings.HasPrefix(c.name, "app-"):
			o.lastConfigMapGone = c
		case c.kind == "ConfigMap" && c.deleted && c.name == inferWorkload:
			first(&o.remoteWorkloadGone, c)
		case c.kind == "ProviderConfig":
			if c.deleting {
				first(&o.providerConfigDeleting, c)
			}
			if c.deleted {
				first(&o.providerConfigGone, c)
			}
		case c.kind == "Secret" && c.deleted:
			first(&o.secretGone, c)
		}
	}
	return o
}

func (o inferOrder) at(c *change) string {
	if c == nil {
		return "never"
	}
	return fmt.Sprintf("%s (revision %d)", c.at.Sub(o.begin).Round(10*time.Millisecond), c.rv)
}

func (o inferOrder) timeline() string {
	workload := ""
	if o.remoteWorkloadGone != nil {
		workload = "; the workload's remote object gone " + o.at(o.remoteWorkloadGone)
	}
	return fmt.Sprintf("last remote ConfigMap deleted %s, last dependent Object gone %s; ProviderConfig deleting %s, gone %s; %s deleting %s, gone %s%s; the remote Secret gone %s",
		o.at(o.lastConfigMapGone), o.at(o.lastDependentGone), o.at(o.providerConfigDeleting), o.at(o.providerConfigGone),
		o.writer, o.at(o.writerDeleting), o.at(o.writerGone), workload, o.at(o.secretGone))
}

func (o inferOrder) String() string {
	if o.begin.IsZero() {
		return "not torn down"
	}
	return o.timeline()
}

// check returns what is out of order: every dependent Object gone before
// the ProviderConfig, and, where the XR composes the Secret's writer, the
// ProviderConfig gone before the writer and every remote ConfigMap before
// the remote Secret; where the writer is a workload, the remote Secret gone
// after the workload's remote object, as its garbage collection.
func (o inferOrder) check(a *inferArm) []string {
	before := func(a, b *change) bool { return a != nil && b != nil && a.rv < b.rv }
	var errs []string
	if !before(o.lastDependentGone, o.providerConfigGone) {
		errs = append(errs, fmt.Sprintf("the ProviderConfig was gone %s, not after the last dependent Object (%s)", o.at(o.providerConfigGone), o.at(o.lastDependentGone)))
	}
	if !a.composesWriter() {
		return errs
	}
	if !before(o.providerConfigGone, o.writerGone) {
		errs = append(errs, fmt.Sprintf("%s was gone %s, not after the ProviderConfig (%s)", o.writer, o.at(o.writerGone), o.at(o.providerConfigGone)))
	}
	if !before(o.lastConfigMapGone, o.secretGone) {
		errs = append(errs, fmt.Sprintf("the remote Secret was gone %s, not after the last remote ConfigMap (%s)", o.at(o.secretGone), o.at(o.lastConfigMapGone)))
	}
	if a.secretFrom == secretByWorkload && !before(o.remoteWorkloadGone, o.secretGone) {
		errs = append(errs, fmt.Sprintf("the remote Secret was gone %s, not after the workload's remote object (%s): not by the garbage collector", o.at(o.secretGone), o.at(o.remoteWorkloadGone)))
	}
	return errs
}

// inferredState is what of an arm exists.
type inferredState struct {
	xr         bool
	dependents []*unstructured.Unstructured
	// writer is the Object the Secret comes from, if the XR composes one;
	// writerLabel names it.
	writer         *unstructured.Unstructured
	writerLabel    string
	providerConfig *unstructured.Unstructured
	// providerConfigUsages are provider-kubernetes's, of the arm's
	// ProviderConfig; usages, the function's ClusterUsages.
	providerConfigUsages []unstructured.Unstructured
	usages, usagesReady  int
	// configMaps counts the remote ConfigMaps; secret and workload are
	// whether the remote Secret and the workload's remote object exist.
	configMaps       int
	secret, workload bool
}

func (s *stack) inferredState(ctx context.Context, a *inferArm) (inferredState, error) {
	st := inferredState{writerLabel: a.writerLabel()}
	get := func(r schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
		return s.getIfExists(ctx, r, ns, name)
	}
	xr, err := get(gvrXR, "", a.xr)
	if err != nil {
		return st, err
	}
	st.xr = xr != nil
	objs, err := s.client.Resource(gvrObject).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + a.xr})
	if err != nil {
		return st, err
	}
	for i := range objs.Items {
		if o := &objs.Items[i]; o.GetName() == a.writer() {
			st.writer = o
		} else {
			st.dependents = append(st.dependents, o)
		}
	}
	if st.providerConfig, err = get(gvrProviderConfig, "", a.providerConfig()); err != nil {
		return st, err
	}
	if st.providerConfigUsages, err = s.providerConfigUsagesOf(ctx, a.providerConfig()); err != nil {
		return st, err
	}
	if st.usages, st.usagesReady, err = s.clusterUsagesOf(ctx, a.xr); err != nil {
		return st, err
	}
	st.configMaps, st.workload, st.secret, err = s.remoteObjects(ctx, a.namespace())
	return st, err
}

// clusterUsagesOf counts the ClusterUsages the XR composes, and those of them
// Ready.
func (s *stack) clusterUsagesOf(ctx context.Context, xr string) (usages, ready int, err error) {
	list, err := s.client.Resource(gvrClusterUsage).List(ctx, metav1.ListOptions{LabelSelector: "crossplane.io/composite=" + xr})
	if err != nil {
		return 0, 0, err
	}
	for _, u := range list.Items {
		if conditionTrue(&u, "Ready") {
			ready++
		}
	}
	return len(list.Items), ready, nil
}

// remoteObjects are what a scenario's Objects made in the namespace: how many
// app- ConfigMaps, and whether the workload's and the kubeconfig Secret
// exist.
func (s *stack) remoteObjects(ctx context.Context, namespace string) (configMaps int, workload, secret bool, err error) {
	cms, err := s.client.Resource(gvrConfigMap).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, false, false, err
	}
	for _, cm := range cms.Items {
		switch {
		case strings.HasPrefix(cm.GetName(), "app-"):
			configMaps++
		case cm.GetName() == inferWorkload:
			workload = true
		}
	}
	u, err := s.getIfExists(ctx, gvrSecret, namespace, inferSecret)
	return configMaps, workload, u != nil, err
}

// ready returns what the arm still lacks before its teardown.
func (st inferredState) ready(a *inferArm) error {
	objects := st.dependents
	if st.writer != nil {
		objects = append(objects, st.writer)
	}
	notReady := notSyncedAndReady(objects)
	switch {
	case !st.xr:
		return errors.New("no XR")
	case len(st.dependents) != a.n || a.composesWriter() != (st.writer != nil) || st.providerConfig == nil:
		return fmt.Errorf("composed so far: %s", st)
	case len(notReady) > 0:
		return fmt.Errorf("Objects not Synced and Ready: %s", strings.Join(notReady, "; "))
	case st.configMaps != a.n || !st.secret || (a.secretFrom == secretByWorkload) != st.workload:
		return fmt.Errorf("%d of %d remote ConfigMaps, remote Secret: %t, the workload's remote object: %t", st.configMaps, a.n, st.secret, st.workload)
	case st.usages != a.usages || st.usagesReady != a.usages:
		return fmt.Errorf("%d ClusterUsages composed, %d of them Ready, want %d", st.usages, st.usagesReady, a.usages)
	}
	return nil
}

func (st inferredState) empty() bool { return st.String() == "nothing" }

// String says what exists, in a form to paste into the README.
func (st inferredState) String() string {
	var parts []string
	if st.xr {
		parts = append(parts, "the XR")
	}
	if len(st.dependents) > 0 {
		deleting := 0
		for _, o := range st.dependents {
			if o.GetDeletionTimestamp() != nil {
				deleting++
			}
		}
		parts = append(parts, fmt.Sprintf("%d dependent Objects (%d deleting)", len(st.dependents), deleting))
	}
	if o := st.writer; o != nil {
		parts = append(parts, fmt.Sprintf("%s (deleting: %t)", st.writerLabel, o.GetDeletionTimestamp() != nil))
	}
	if pc := st.providerConfig; pc != nil {
		parts = append(parts, fmt.Sprintf("the ProviderConfig (deleting: %t, finalizers %v)", pc.GetDeletionTimestamp() != nil, pc.GetFinalizers()))
	}
	if n := len(st.providerConfigUsages); n > 0 {
		parts = append(parts, fmt.Sprintf("%d ProviderConfigUsages", n))
	}
	if st.usages > 0 {
		parts = append(parts, fmt.Sprintf("%d ClusterUsages", st.usages))
	}
	if st.configMaps > 0 {
		parts = append(parts, fmt.Sprintf("remote ConfigMaps: %d", st.configMaps))
	}
	if st.workload {
		parts = append(parts, "the workload's remote object")
	}
	if st.secret {
		parts = append(parts, "the remote Secret")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// unstick deletes what the arm left, removing the finalizers that hold it,
// and its Namespace with the orphaned remote objects, so that the stack can
// go on; it waits until they are gone.
func (s *stack) unstick(ctx context.Context, a *inferArm) {
	t := s.t
	st, err := s.inferredState(ctx, a)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	release := func(r schema.GroupVersionResource, name string) { s.release(ctx, a.xr, r, name) }
	objects := st.dependents
	if st.writer != nil {
		objects = append(objects, st.writer)
	}
	if st.xr {
		release(gvrXR, a.xr)
	}
	for _, o := range objects {
		release(gvrObject, o.GetName())
	}
	for _, u := range st.providerConfigUsages {
		release(gvrProviderConfigUsage, u.GetName())
	}
	if st.providerConfig != nil {
		release(gvrProviderConfig, a.providerConfig())
	}
	if err := s.client.Resource(gvrNamespace).Delete(ctx, a.namespace(), metav1.DeleteOptions{}); err != nil && !kerrors.IsNotFound(err) {
		t.Errorf("ERROR: %s: cleaning up, cannot delete Namespace %s: %v", a.xr, a.namespace(), err)
	}
	err = s.poll(ctx, 2*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		st, err := s.inferredState(ctx, a)
		if err != nil {
			return false, err
		}
		_, err = s.client.Resource(gvrNamespace).Get(ctx, a.namespace(), metav1.GetOptions{})
		switch {
		case kerrors.IsNotFound(err):
			return st.empty(), fmt.Errorf("left: %s", st)
		case err != nil:
			return false, err
		}
		return false, fmt.Errorf("left: %s; Namespace %s terminating", st, a.namespace())
	})
	if err != nil {
		t.Errorf("ERROR: %s: cleaning up: %v", a.xr, err)
		return
	}
	t.Logf("%s: cleaned up: finalizers removed, its Namespace with the orphaned remote objects deleted", a.xr)
}

// getIfExists gets the object, or nil where there is none.
func (s *stack) getIfExists(ctx context.Context, r schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	u, err := s.client.Resource(r).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if kerrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// providerConfigUsagesOf are provider-kubernetes's ProviderConfigUsages of
// the ProviderConfig.
func (s *stack) providerConfigUsagesOf(ctx context.Context, providerConfig string) ([]unstructured.Unstructured, error) {
	pcus, err := s.client.Resource(gvrProviderConfigUsage).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var of []unstructured.Unstructured
	for _, u := range pcus.Items {
		if name, _, _ := unstructured.NestedString(u.Object, "providerConfigRef", "name"); name == providerConfig {
			of = append(of, u)
		}
	}
	return of, nil
}

// notSyncedAndReady names the objects not both Synced and Ready, each with
// why.
func notSyncedAndReady(objects []*unstructured.Unstructured) []string {
	var notReady []string
	for _, o := range objects {
		if !conditionTrue(o, "Synced") || !conditionTrue(o, "Ready") {
			notReady = append(notReady, o.GetName()+": "+describeCondition(o, "Synced"))
		}
	}
	return notReady
}

// release deletes a cluster-scoped object a scenario left stuck and removes
// its finalizers, so that the stack can go on; what names the scenario.
func (s *stack) release(ctx context.Context, what string, r schema.GroupVersionResource, name string) {
	ri := s.client.Resource(r)
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !kerrors.IsNotFound(err) {
		s.t.Errorf("ERROR: %s: cleaning up, cannot delete %s %s: %v", what, r.Resource, name, err)
	}
	if _, err := ri.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !kerrors.IsNotFound(err) {
		s.t.Errorf("ERROR: %s: cleaning up, cannot remove the finalizers of %s %s: %v", what, r.Resource, name, err)
	}
}
