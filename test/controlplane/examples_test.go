//go:build controlplane

package controlplane

import (
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// TestExamplesBuiltInObjectsAreAccepted has the real API server check every
// object of Kubernetes' own kinds in example/ (the ConfigMaps and Namespaces
// the Operation examples render, the ClusterRole a user installs), which
// test/e2e/schema can't: no CRD describes them. Each is created with
// dryRun=All, without the fields the API server sets itself, in its
// namespace.
func TestExamplesBuiltInObjectsAreAccepted(t *testing.T) {
	ctx := testContext(t)
	_, file, _, _ := runtime.Caller(0)
	s := &stack{t: t, root: filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")), releases: v2Release}
	s.dir = t.TempDir()
	s.logs = logsDir(t)
	var err error
	if s.pki, err = newPKI(filepath.Join(s.dir, "pki")); err != nil {
		t.Fatalf("ERROR: cannot make certificates: %v", err)
	}
	s.startKubernetes(ctx, tools(t, s.root, "etcd", "kube-apiserver", "kube-controller-manager"))
	t.Cleanup(func() {
		for _, p := range slices.Backward(s.procs) {
			if err := p.stop(); err != nil {
				t.Error("ERROR:", err)
			}
		}
	})
	dc, err := discovery.NewDiscoveryClientForConfig(s.config)
	must(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	checked := 0
	err = filepath.WalkDir(filepath.Join(s.root, "example"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(s.root, path)
		for _, u := range readYAML(t, path) {
			gvk := u.GroupVersionKind()
			if !builtInGroup(gvk.Group) {
				continue
			}
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("ERROR: %s: %s %s: the API server serves no such kind: %v", rel, gvk, u.GetName(), err)
				continue
			}
			for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation", "managedFields"} {
				unstructured.RemoveNestedField(u.Object, "metadata", f)
			}
			ns := u.GetNamespace()
			if ns != "" {
				// The namespace must exist for the dry run to reach
				// validation.
				_, _ = s.client.Resource(gvrNamespace).Create(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}), metav1.CreateOptions{})
			}
			if _, err := s.client.Resource(m.Resource).Namespace(ns).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("ERROR: %s: the API server refuses %s %s: %v", rel, gvk.Kind, u.GetName(), err)
			}
			checked++
		}
		return nil
	})
	must(t, err)
	if checked == 0 {
		t.Fatal("ERROR: example/ has no object of Kubernetes' own kinds: nothing was checked")
	}
	t.Logf("the API server accepted all %d objects of Kubernetes' own kinds in example/", checked)
}

// builtInGroup is true for the API groups of Kubernetes' own kinds that the
// examples use; test/e2e/schema leaves the same groups to this test.
func builtInGroup(group string) bool {
	return group == "" || group == "apps" || group == "rbac.authorization.k8s.io"
}
