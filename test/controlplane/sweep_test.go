//go:build controlplane

package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// TestOneSweepRepairsEveryObjectWithinTheOperationTimeout measures a
// CronOperation's sweep at scale: FD_CONTROLPLANE_SWEEP_OBJECTS Objects
// (default 2,000; the README's figures are for 10,000), each referencing a
// ConfigMap of its own and one of the shared Objects (one per hundred), none
// of whose reference finalizers are in place. One Operation, with the
// pipeline of example/operation/cronoperation.yaml, must declare all of them
// within Crossplane's two-minute pipeline timeout and gRPC's message limits
// (the function served as example/operation/install.yaml configures it); a
// second must find nothing to do.
//
// provider-kubernetes doesn't run: the Objects carry its finalizer, as the
// Objects it manages do, and nothing reconciles them, so the sweep is all
// that changes them.
func TestOneSweepRepairsEveryObjectWithinTheOperationTimeout(t *testing.T) {
	ctx := testContext(t)
	n := envInt(t, "FD_CONTROLPLANE_SWEEP_OBJECTS", 2000)
	_, file, _, _ := runtime.Caller(0)
	s := &stack{t: t, root: filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")), releases: v2Release}
	s.dir = t.TempDir()
	s.logs = logsDir(t)
	bins := tools(t, s.root, "etcd", "kube-apiserver", "kube-controller-manager", "crossplane-core")
	bins["function-dependencies"] = functionBinary(t, s.root, s.dir)
	var err error
	if s.pki, err = newPKI(filepath.Join(s.dir, "pki")); err != nil {
		t.Fatalf("ERROR: cannot make certificates: %v", err)
	}
	t.Cleanup(func() {
		for _, p := range slices.Backward(s.procs) {
			if err := p.stop(); err != nil {
				t.Error("ERROR:", err)
			}
		}
	})
	s.startKubernetes(ctx, bins)
	s.applyCRDs(ctx)
	s.create(ctx, gvrNamespace, "", obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "crossplane-system"}}))
	s.startCrossplane(ctx, bins["crossplane-core"])
	s.serveFunction(ctx, "function-dependencies", bins["function-dependencies"])

	begin := time.Now()
	s.create(ctx, gvrNamespace, "", obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "sweep"}}))
	shared := max(1, n/100)
	var objects []*unstructured.Unstructured
	for i := range shared {
		objects = append(objects, sweepObject(fmt.Sprintf("shared-%03d", i), nil))
	}
	for i := range n {
		name := fmt.Sprintf("dependent-%05d", i)
		objects = append(objects,
			sweepObject(name, []any{
				map[string]any{"dependsOn": map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "name": fmt.Sprintf("shared-%03d", i%shared)}},
				map[string]any{"dependsOn": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "sweep", "name": name}},
			}),
			obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "sweep"}, "data": map[string]any{"setting": "on"}}))
	}
	s.createAll(ctx, objects)
	t.Logf("created %d Objects and %d ConfigMaps in %s", n+shared, n, time.Since(begin).Round(time.Second))

	first := s.sweep(ctx, "sweep-1")
	missing := 0
	for _, gvr := range []schema.GroupVersionResource{gvrObject, gvrConfigMap} {
		list, err := s.client.Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		must(t, err)
		for _, u := range list.Items {
			want := 0
			switch {
			case strings.HasPrefix(u.GetName(), "shared-"):
				want = n / shared
				if u.GetName() < fmt.Sprintf("shared-%03d", n%shared) {
					want++
				}
			case gvr == gvrConfigMap && u.GetNamespace() == "sweep":
				want = 1
			}
			if got := refFinalizers(u.GetFinalizers()); got != want {
				missing++
				if missing <= 5 {
					t.Errorf("ERROR: %s %s carries %d reference finalizers after the sweep, want %d", gvr.Resource, u.GetName(), got, want)
				}
			}
		}
	}
	if missing > 0 {
		t.Fatalf("ERROR: %d objects lack reference finalizers after the sweep", missing)
	}
	second := s.sweep(ctx, "sweep-2")
	t.Logf("SWEEP: %d Objects (%d shared), %d reference finalizers missing: the first sweep declared them all in %s (%s); the second, with nothing missing, took %s (%s)",
		n+shared, shared, 2*n, first.took.Round(100*time.Millisecond), first.output, second.took.Round(100*time.Millisecond), second.output)
	if !strings.Contains(second.output, `"protected":`+fmt.Sprint(2*n)) || strings.Contains(second.output, `"repaired"`) {
		t.Errorf("ERROR: the second sweep should find all %d references protected and repair nothing: %s", 2*n, second.output)
	}
}

// functionBinary is the function under test, built unless
// FD_CONTROLPLANE_FUNCTION names one.
func functionBinary(t *testing.T, root, dir string) string {
	if bin := os.Getenv("FD_CONTROLPLANE_FUNCTION"); bin != "" {
		return bin
	}
	return buildFunction(t, root, dir)
}

// sweepObject is an Object the provider manages, as far as its finalizer
// says, with the references.
func sweepObject(name string, references []any) *unstructured.Unstructured {
	spec := map[string]any{
		"forProvider": map[string]any{"manifest": map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "sweep-remote"}, "data": map[string]any{"key": "value"},
		}},
	}
	if references != nil {
		spec["references"] = references
	}
	return obj(map[string]any{
		"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object",
		"metadata": map[string]any{"name": name, "finalizers": []any{"finalizer.managedresource.crossplane.io"}},
		"spec":     spec,
	})
}

// createAll creates the objects, eight at a time, without the API server's
// warning about the provider's finalizer name for each, within 2 min and
// 100 ms an object (the client's 200 requests a second would take 5 ms).
func (s *stack) createAll(ctx context.Context, objects []*unstructured.Unstructured) {
	config := rest.CopyConfig(s.config)
	config.WarningHandler = rest.NoWarnings{}
	client, err := dynamic.NewForConfig(config)
	must(s.t, err)
	within := 2*time.Minute + time.Duration(len(objects))*100*time.Millisecond
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var wg sync.WaitGroup
	var next, created atomic.Int64
	var failed atomic.Value
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(objects); i = int(next.Add(1)) - 1 {
				u := objects[i]
				gvr := gvrConfigMap
				if u.GetKind() == "Object" {
					gvr = gvrObject
				}
				if _, err := client.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
					failed.CompareAndSwap(nil, fmt.Errorf("cannot create %s %s: %w", u.GetKind(), u.GetName(), err))
					return
				}
				created.Add(1)
			}
		})
	}
	wg.Wait()
	err, _ = failed.Load().(error)
	switch {
	case err != nil && ctx.Err() != nil:
		s.t.Fatalf("ERROR: waited %s (bound %s) to create %d objects: %d created; %v", time.Since(begin).Round(time.Second), within, len(objects), created.Load(), err)
	case err != nil:
		s.t.Fatal("ERROR:", err)
	}
}

type sweepResult struct {
	took   time.Duration
	output string
}

// sweep runs one Operation with the pipeline of the example CronOperation,
// and returns how long it took from its creation to Succeeded, and its
// output.
func (s *stack) sweep(ctx context.Context, name string) sweepResult {
	cron := readYAML(s.t, filepath.Join(s.root, "example", "operation", "cronoperation.yaml"))[0]
	spec, _, _ := unstructured.NestedMap(cron.Object, "spec", "operationTemplate", "spec")
	begin := time.Now()
	s.create(ctx, gvrOperation, "", obj(map[string]any{
		"apiVersion": "ops.crossplane.io/v1alpha1", "kind": "Operation", "metadata": map[string]any{"name": name}, "spec": spec,
	}))
	var op *unstructured.Unstructured
	s.await(ctx, "Operation "+name+" to succeed", 5*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		if op, err = s.client.Resource(gvrOperation).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return conditionTrue(op, "Succeeded"), fmt.Errorf("status %v", op.Object["status"])
	})
	took := time.Since(begin)
	pipeline, _, _ := unstructured.NestedSlice(op.Object, "status", "pipeline")
	out := ""
	if len(pipeline) > 0 {
		b, _ := json.Marshal(pipeline[0].(map[string]any)["output"])
		out = string(b)
		if len(out) > 300 {
			out = out[:300] + "…"
		}
	}
	if failures, _, _ := unstructured.NestedInt64(op.Object, "status", "failures"); failures > 0 {
		s.t.Logf("Operation %s succeeded after %d failures", name, failures)
	}
	return sweepResult{took: took, output: out}
}
