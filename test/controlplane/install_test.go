//go:build controlplane

package controlplane

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	gvrDeployment               = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrPod                      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvrService                  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	installedFunction           = "function-dependencies"
	installNamespace            = "crossplane-system"
	installedFunctionRepository = "function-dependencies"
)

// installStack is the control plane of the install scenario: etcd,
// kube-apiserver, kube-controller-manager (with the Deployment, ReplicaSet,
// EndpointSlice and node lifecycle controllers: the last takes a new node's
// not-ready taint off once it is Ready), provider-kubernetes in a network
// namespace of its own (see startProviderNamespace), an OCI registry on
// loopback, two nodes (containerd and a kubelet each, see startNode),
// kube-scheduler and Crossplane core with its default package runtime,
// which runs functions as Deployments. function-dependencies is not served
// here: the test installs it. function-patch-and-transform and
// function-auto-ready are served by hand, as in every other test.
//
// Crossplane runs outside the cluster, as everywhere in this package, and
// dials a function at its Service's name,
// function-dependencies.crossplane-system:9443. That name resolves to
// loopback for Crossplane alone: it runs in a mount namespace of its own
// (unshare --mount) where a hosts file of the test's is bound over
// /etc/hosts, and a resolv.conf naming 127.0.0.1 over /etc/resolv.conf, so
// that no lookup leaves loopback; nothing changes for the rest of the
// machine. There the test's serviceProxy stands in for the cluster's
// network: it passes each connection to a ready endpoint of the Service, a
// pod on the host network of one node or the other. Crossplane's root CA (the
// crossplane-root-ca Secret, from which it signs each function's TLS
// Secret) is the test's CA, whose certificate Crossplane already presents
// as its client.
//
// It needs root and a network namespace of its own, as
// hack/controlplane-test.sh gives it: the kubelet and containerd change
// network settings, cgroups and mounts; elsewhere the test is skipped.
func installStack(ctx context.Context, t *testing.T) *stack {
	t.Helper()
	if os.Geteuid() != 0 || !ownNetworkNamespace() {
		t.Skip("the install scenario runs a kubelet and containerd: it needs root in a network namespace of its own (hack/controlplane-test.sh as root)")
	}
	_, file, _, _ := runtime.Caller(0)
	s := &stack{t: t, root: filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")), releases: v2Release,
		controllers: []string{"deployment", "replicaset", "endpointslice", "nodelifecycle"}}
	s.dir = t.TempDir()
	s.logs = logsDir(t)

	begin := time.Now()
	bins := tools(t, s.root, "etcd", "kube-apiserver", "kube-controller-manager", "kubelet", "kube-scheduler", "crane",
		"crossplane", "crossplane-core", "provider-kubernetes", "function-patch-and-transform", "function-auto-ready")
	s.bins = bins
	s.xpkgDir = filepath.Join(s.dir, "xpkg")
	s.xpkgs = s.buildPackages("v0.1.0")
	t.Logf("binaries and the packages (%s) ready in %s", strings.Join(slices.Sorted(maps.Keys(s.xpkgs)), ", "), time.Since(begin).Round(time.Second))

	var err error
	if s.pki, err = newPKI(filepath.Join(s.dir, "pki")); err != nil {
		t.Fatalf("ERROR: cannot make certificates: %v", err)
	}
	begin = time.Now()
	s.startKubernetes(ctx, bins)
	s.startProviderNamespace(ctx)
	s.applyCRDs(ctx)
	// It creates crossplane-system.
	s.startProvider(ctx, bins["provider-kubernetes"])
	s.create(ctx, gvrSecret, installNamespace, obj(map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "crossplane-root-ca", "namespace": installNamespace},
		"type":       "kubernetes.io/tls",
		"stringData": map[string]any{"tls.crt": string(s.pki.caPEM), "tls.key": string(s.pki.caKeyPEM)},
	}))
	// The service account Crossplane's package fetcher reads pull secrets
	// from, as a Helm install creates it.
	s.create(ctx, gvrServiceAccount, installNamespace, obj(map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "crossplane", "namespace": installNamespace},
	}))
	s.startRegistry(ctx, bins["crane"])
	pause := s.buildPause(filepath.Join(s.xpkgDir, "imagebuilder"))
	var nodes []*node
	s.nodes = map[string]*node{}
	for _, name := range slices.Sorted(maps.Keys(nodeIPs)) {
		n := s.startNode(ctx, bins["kubelet"], pause, name)
		nodes = append(nodes, n)
		s.nodes[name] = n
	}
	s.startScheduler(bins["kube-scheduler"])
	s.functionProxy = s.proxyService(ctx, "127.0.0.1:9443", installNamespace, installedFunction, nodes...)
	s.coreWrap = s.coreMountNamespace(installedFunction)
	s.startCrossplane(ctx, bins["crossplane-core"])
	for _, fn := range []string{"function-patch-and-transform", "function-auto-ready"} {
		s.serveFunction(ctx, fn, bins[fn])
	}
	t.Logf("STACK START: the install stack was ready in %s (binaries already built)", time.Since(begin).Round(time.Millisecond))
	return s
}

// coreMountNamespace returns how Crossplane starts in a mount namespace of
// its own, where the Services of the functions named resolve to loopback.
func (s *stack) coreMountNamespace(functions ...string) func(string, []string) (string, []string) {
	hosts := filepath.Join(s.dir, "crossplane-hosts")
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n::1 localhost\n")
	for _, fn := range functions {
		fmt.Fprintf(&b, "127.0.0.1 %[1]s.%[2]s %[1]s.%[2]s.svc\n", fn, installNamespace)
	}
	must(s.t, os.WriteFile(hosts, []byte(b.String()), 0o644))
	resolv := filepath.Join(s.dir, "crossplane-resolv.conf")
	must(s.t, os.WriteFile(resolv, []byte("nameserver 127.0.0.1\n"), 0o644))
	return func(bin string, args []string) (string, []string) {
		return "unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && shift 2 && exec "$@"`,
			"sh", hosts, resolv, bin}, args...)
	}
}

// buildPackages builds the function's packages with hack/xpkg.sh, as
// `make xpkg` does, one per platform, with the crossplane CLI that pushes
// them, in a folder of its own per version, the binaries stamped with
// version, and returns their paths by architecture (amd64, arm64): the
// files `crossplane xpkg push -f` takes to push one multi-platform package.
func (s *stack) buildPackages(version string) map[string]string {
	// Per platform, two go builds and an image: hack/controlplane-test.sh
	// builds the packages first, so that the test's builds find the build
	// cache warm.
	cmd, done := command(s.t, 2*goBuild, filepath.Join(s.root, "hack", "xpkg.sh"))
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), "FD_XPKG_DIR="+s.xpkgDir, "FD_XPKG_CLI=crossplane", "FD_XPKG_VERSION="+version)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err = done(err); err != nil {
		s.t.Fatalf("ERROR: hack/xpkg.sh: %v\n%s", err, stderr.String())
	}
	// hack/xpkg.sh prints one path a line, function-dependencies-<arch>.xpkg;
	// each is renamed for the version, so that the next version's build,
	// into the same folder, leaves it.
	pkgs := map[string]string{}
	for _, pkg := range strings.Fields(string(out)) {
		arch, prefixed := strings.CutPrefix(filepath.Base(pkg), "function-dependencies-")
		arch, suffixed := strings.CutSuffix(arch, ".xpkg")
		if !prefixed || !suffixed || arch == "" {
			s.t.Fatalf("ERROR: hack/xpkg.sh printed %q, want function-dependencies-<arch>.xpkg paths", pkg)
		}
		versioned := filepath.Join(s.xpkgDir, "function-dependencies-"+version+"-"+arch+".xpkg")
		must(s.t, os.Rename(pkg, versioned))
		pkgs[arch] = versioned
	}
	return pkgs
}

// platforms are the architectures of the function's packages, as
// hack/xpkg.sh builds them, linux/<arch> each. The nodes run linux/amd64.
var platforms = []string{"amd64", "arm64"}

// A pushedPackage is a multi-platform package as the registry serves it.
type pushedPackage struct {
	// ref is repository:tag; index the digest the tag names, an OCI image
	// index; manifests the digest of each platform's package in it, by
	// architecture.
	ref, index string
	manifests  map[string]string
}

// push pushes the packages of pkgs (by architecture) to the registry on
// loopback as one multi-platform package with `crossplane xpkg push
// --package-files=<amd64>,<arm64>`, as hack/xpkg.sh --push and the release
// workflow publish one, and asserts that the tag names an OCI image index
// of one package for each of linux/amd64 and linux/arm64.
func (s *stack) push(pkgs map[string]string, tag string) pushedPackage {
	var files []string
	for _, arch := range platforms {
		pkg, ok := pkgs[arch]
		if !ok {
			s.t.Fatalf("ERROR: no linux/%s package to push: %v", arch, pkgs)
		}
		files = append(files, pkg)
	}
	p := pushedPackage{ref: fmt.Sprintf("%s/%s:%s", s.registry, installedFunctionRepository, tag), manifests: map[string]string{}}
	// To the registry on loopback: seconds, unless it hangs.
	push, done := command(s.t, 5*time.Minute, s.bins["crossplane"], "xpkg", "push", "--package-files="+strings.Join(files, ","), p.ref)
	out, err := push.CombinedOutput()
	if err = done(err); err != nil {
		s.t.Fatalf("ERROR: crossplane xpkg push %s: %v\n%s", p.ref, err, out)
	}
	crane, done := command(s.t, 2*time.Minute, s.bins["crane"], "digest", p.ref)
	out, err = crane.Output()
	if err = done(err); err != nil {
		s.t.Fatalf("ERROR: crane digest %s: %v", p.ref, err)
	}
	p.index = strings.TrimSpace(string(out))
	crane, done = command(s.t, 2*time.Minute, s.bins["crane"], "manifest", p.ref)
	out, err = crane.Output()
	if err = done(err); err != nil {
		s.t.Fatalf("ERROR: crane manifest %s: %v", p.ref, err)
	}
	var index struct {
		MediaType string `json:"mediaType"`
		Manifests []struct {
			Digest   string `json:"digest"`
			Platform struct {
				OS           string `json:"os"`
				Architecture string `json:"architecture"`
			} `json:"platform"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(out, &index); err != nil {
		s.t.Fatalf("ERROR: %s: the manifest the registry serves: %v\n%s", p.ref, err, out)
	}
	if index.MediaType != "application/vnd.oci.image.index.v1+json" {
		s.t.Errorf("ERROR: %s is a %q, want an OCI image index", p.ref, index.MediaType)
	}
	var listed []string
	for _, m := range index.Manifests {
		listed = append(listed, m.Platform.OS+"/"+m.Platform.Architecture)
		if m.Platform.OS == "linux" {
			p.manifests[m.Platform.Architecture] = m.Digest
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(slices.Sorted(slices.Values(listed)), want) {
		s.t.Fatalf("ERROR: the index %s lists the platforms %v, want %v", p.ref, listed, want)
	}
	s.t.Logf("pushed %s: an OCI image index, %s, of linux/amd64 %s and linux/arm64 %s", p.ref, p.index, p.manifests["amd64"], p.manifests["arm64"])
	return p
}

// TestInstallFromRegistry installs function-dependencies the way users do:
// its multi-platform package (linux/amd64 and linux/arm64) pushed to a
// registry, a Function applied, and Crossplane's package manager pulling
// it, checking the Crossplane versions it declares, creating its revision,
// TLS Secrets, Service and Deployment, whose pod a real kubelet runs from
// the package's linux/amd64 image. A package that declares only Crossplane
// versions other than the running one is refused.
func TestInstallFromRegistry(t *testing.T) {
	ctx := testContext(t)
	wall := time.Now()
	s := installStack(ctx, t)
	step := time.Now()
	pushed := s.push(s.xpkgs, "v0.1.0")
	t.Logf("pushed %s in %s", pushed.ref, time.Since(step).Round(time.Millisecond))

	step = time.Now()
	s.applyInstallManifest(ctx, pushed.ref)
	s.awaitInstalled(ctx, pushed, "v0.1.0")
	t.Logf("INSTALL: the Function was Installed and Healthy, its pod running the pushed package's linux/amd64 image, %s after it was applied", time.Since(step).Round(time.Millisecond))
	s.compatible(ctx)

	// Use: the composite of #371 through the installed function. The same
	// composite reconciles through the upgrade and the faults, and is
	// deleted last: one teardown, the slow part, for all of them.
	step = time.Now()
	n := envInt(t, "FD_CONTROLPLANE_INSTALL_DEPENDENTS", 20)
	s.createXRD(ctx)
	// Both protections, so that the upgrade and the faults are seen to keep
	// the Usages as well as the finalizers.
	s.create(ctx, gvrComposition, "", withInput(composition("race-with", n, true), map[string]any{"protection": "Both"}))
	a := s.convergeWith(ctx, "installed", "race-with", n)
	usages := s.awaitUsages(ctx, a.xr, n)
	t.Logf("USE: through the installed function, %d of %d finalizers on the shared Object %s after creating the XR, %d Usages Ready %s later; %s in all",
		a.finalizers, n, a.converged.Round(100*time.Millisecond), n, usages.Round(100*time.Millisecond), time.Since(step).Round(time.Second))

	for _, phase := range []struct {
		name string
		run  func(ctx context.Context, xr string, n int)
	}{
		{"UPGRADE", s.upgrade},
		{"FAULT, container killed", s.killFunction},
		{"FAULT, one of two replicas killed", s.twoReplicas},
		{"FAULT, missing tag", s.missingTag},
		{"REFUSED, incompatible Crossplane version", s.incompatibleCrossplane},
	} {
		step = time.Now()
		phase.run(ctx, a.xr, n)
		t.Logf("%s: %s in all", phase.name, time.Since(step).Round(time.Second))
	}

	step = time.Now()
	s.deleteOrdered(ctx, &a, n)
	t.Logf("USE, deletion: the XR's dependents deleted before the shared Namespace, nothing left, %s after deleting it", a.deletion.gone.Round(100*time.Millisecond))

	// The same installed Function as an Operation: the WatchOperation of
	// example/operation/watch-objects.yaml repairs Objects created directly.
	// installWatchOperation asserts the repair: every finalizer declared. How
	// many the provider's race left off before (unwatched) is only logged:
	// at this size the race may leave none off, and
	// TestOperationRestoresLostReferenceFinalizersAndOrdersDeletion asserts
	// that it does at the size where it shows; here the question is only
	// whether the installed package serves an Operation.
	step = time.Now()
	tctx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	ops := s.trackOperations(tctx)
	set := objectSet{name: "op-installed", n: envInt(t, "FD_CONTROLPLANE_INSTALL_OPERATION_DEPENDENTS", 10)}
	set.created = s.createSet(ctx, set)
	unwatched := s.settleUnwatched(ctx, set)
	repair := s.installWatchOperation(ctx, ops, set)
	t.Logf("WATCHOPERATION: through the installed function, %d of %d finalizers on the shared Object once settled without it, %d of %d %s after creating the WatchOperation; %s in all",
		unwatched.finalizers, set.n, set.n, set.n, repair.complete.Round(100*time.Millisecond), time.Since(step).Round(time.Second))
	t.Logf("the install scenario took %s in all", time.Since(wall).Round(time.Second))
}

// applyInstallManifest applies example/operation/install.yaml, what the
// README has users apply, with two changes: the Function's package is ref,
// and the DeploymentRuntimeConfig puts the pod on the node's network, since
// this node has no pod network.
func (s *stack) applyInstallManifest(ctx context.Context, ref string) {
	file := filepath.Join(s.root, "example", "operation", "install.yaml")
	for _, doc := range readYAML(s.t, file) {
		switch doc.GetKind() {
		case "Function":
			must(s.t, unstructured.SetNestedField(doc.Object, ref, "spec", "package"))
			s.create(ctx, gvrFunction, "", doc)
		case "DeploymentRuntimeConfig":
			must(s.t, unstructured.SetNestedField(doc.Object, true, "spec", "deploymentTemplate", "spec", "template", "spec", "hostNetwork"))
			s.create(ctx, gvrDeploymentRuntimeConfig, "", doc)
		case "ClusterRole":
			s.create(ctx, gvrClusterRole, "", doc)
		default:
			s.t.Fatalf("ERROR: %s: %s %s: the test doesn't know how to apply it", file, doc.GetKind(), doc.GetName())
		}
	}
}

// awaitInstalled waits until the Function is Installed and Healthy, its
// active revision Healthy, its Deployment Available, and its pod running
// the linux/amd64 image of the pushed package, stamped with version, as
// Crossplane's default security context has it, and asserts each.
func (s *stack) awaitInstalled(ctx context.Context, pushed pushedPackage, version string) {
	t := s.t
	s.await(ctx, "the Function to be Installed and Healthy", 5*time.Minute, func(ctx context.Context) (bool, error) {
		fn, err := s.client.Resource(gvrFunction).Get(ctx, installedFunction, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !conditionTrue(fn, "Installed") || !conditionTrue(fn, "Healthy") {
			return false, errors.New(describeCondition(fn, "Installed") + "; " + describeCondition(fn, "Healthy"))
		}
		return true, nil
	})
	rev := s.activeRevision(ctx)
	if err := revisionHealthy(rev); err != nil {
		t.Errorf("ERROR: revision %s: %v", rev.GetName(), err)
	}
	endpoint, _, _ := unstructured.NestedString(rev.Object, "status", "endpoint")
	if want := fmt.Sprintf("dns:///%s.%s:9443", installedFunction, installNamespace); endpoint != want {
		t.Errorf("ERROR: revision %s: endpoint %q, want %q", rev.GetName(), endpoint, want)
	}

	// Crossplane names the Deployment after the revision.
	d, err := s.client.Resource(gvrDeployment).Namespace(installNamespace).Get(ctx, rev.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ERROR: the Deployment of revision %s: %v", rev.GetName(), err)
	}
	if !conditionTrue(d, "Available") {
		t.Errorf("ERROR: Deployment %s: %s", d.GetName(), describeCondition(d, "Available"))
	}
	for _, secret := range []string{installedFunction + "-tls-server"} {
		if _, err := s.client.Resource(gvrSecret).Namespace(installNamespace).Get(ctx, secret, metav1.GetOptions{}); err != nil {
			t.Errorf("ERROR: the TLS Secret Crossplane makes for the function: %v", err)
		}
	}
	if _, err := s.client.Resource(gvrService).Namespace(installNamespace).Get(ctx, installedFunction, metav1.GetOptions{}); err != nil {
		t.Errorf("ERROR: the function's Service: %v", err)
	}

	pods, err := s.client.Resource(gvrPod).Namespace(installNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "pkg.crossplane.io/revision=" + rev.GetName(),
	})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("ERROR: no pod of revision %s: %v", rev.GetName(), err)
	}
	for _, pod := range pods.Items {
		s.assertPodRuns(ctx, pod, pushed, version)
	}
}

// assertPodRuns asserts that the pod runs the pushed package's linux/amd64
// image, stamped with version, under the security context Crossplane gives a
// function by default, and that its process runs as that user.
func (s *stack) assertPodRuns(ctx context.Context, pod unstructured.Unstructured, pushed pushedPackage, version string) {
	t := s.t
	statuses, _, _ := unstructured.NestedSlice(pod.Object, "status", "containerStatuses")
	if len(statuses) != 1 {
		t.Errorf("ERROR: pod %s: %d container statuses, want 1", pod.GetName(), len(statuses))
		return
	}
	st := statuses[0].(map[string]any)
	// containerd's CRI reports as the image's ID its repository digest: the
	// digest of what it pulled by the tag, the index, not that of the
	// platform's package it chose from it. Which one it chose, its content
	// store says: it fetches, of an index, only the manifest of its own
	// platform.
	imageID, _ := st["imageID"].(string)
	if want := fmt.Sprintf("%s/%s@%s", s.registry, installedFunctionRepository, pushed.index); imageID != want {
		t.Errorf("ERROR: pod %s runs image %v, want the pushed index %s", pod.GetName(), imageID, want)
	}
	nodeName, _, _ := unstructured.NestedString(pod.Object, "spec", "nodeName")
	if n := s.nodes[nodeName]; n == nil {
		t.Errorf("ERROR: pod %s: on node %q, not one of the test's", pod.GetName(), nodeName)
	} else if out, err := n.ctr(ctx, "-n", criNamespace, "content", "ls", "-q"); err != nil {
		t.Errorf("ERROR: node %s: cannot list containerd's content: %v\n%s", nodeName, err, out)
	} else {
		blobs := strings.Fields(string(out))
		amd64, arm64 := slices.Contains(blobs, pushed.manifests["amd64"]), slices.Contains(blobs, pushed.manifests["arm64"])
		if !amd64 || arm64 {
			t.Errorf("ERROR: node %s's containerd holds the linux/amd64 manifest %s: %v, the linux/arm64 manifest %s: %v; want only the first",
				nodeName, pushed.manifests["amd64"], amd64, pushed.manifests["arm64"], arm64)
		} else {
			t.Logf("pod %s on %s: image %s; the node's containerd fetched the index's linux/amd64 manifest %s and not its linux/arm64 one", pod.GetName(), nodeName, imageID, pushed.manifests["amd64"])
		}
		s.assertFirstLogLine(ctx, n, pod, version)
	}
	if st["ready"] != true {
		t.Errorf("ERROR: pod %s: its container isn't ready: %v", pod.GetName(), st["state"])
	}
	containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	sc, _, _ := unstructured.NestedMap(containers[0].(map[string]any), "securityContext")
	// Crossplane v2.4.0's defaults (internal/controller/pkg/runtime), which
	// the host-network DeploymentRuntimeConfig leaves alone.
	want := map[string]any{"runAsUser": int64(2000), "runAsGroup": int64(2000), "runAsNonRoot": true, "allowPrivilegeEscalation": false, "privileged": false}
	if diff := cmp.Diff(want, sc); diff != "" {
		t.Errorf("ERROR: pod %s: the container's securityContext isn't Crossplane's default (-want +got):\n%s", pod.GetName(), diff)
	}
	// The kernel's word for it: the container's process, found by its
	// cgroup, runs the function as that user and group, without any
	// effective capability.
	id, _ := st["containerID"].(string)
	procs, err := processesOf(string(pod.GetUID()), strings.TrimPrefix(id, "containerd://"))
	if err != nil || len(procs) == 0 {
		t.Errorf("ERROR: pod %s: no process of container %s found: %v", pod.GetName(), id, err)
	}
	for _, p := range procs {
		if want := (podProcess{pid: p.pid, cmd: "/function", uid: "2000", gid: "2000", capEff: "0000000000000000"}); p != want {
			t.Errorf("ERROR: pod %s: process %+v, want %+v", pod.GetName(), p, want)
		} else {
			t.Logf("pod %s: process %d runs %s as user %s, group %s, effective capabilities %s", pod.GetName(), p.pid, p.cmd, p.uid, p.gid, p.capEff)
		}
		// The kernel's word for the platform: the program it runs.
		if f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", p.pid)); err != nil {
			t.Errorf("ERROR: pod %s: process %d: %v", pod.GetName(), p.pid, err)
		} else {
			if f.Machine != elf.EM_X86_64 {
				t.Errorf("ERROR: pod %s: process %d runs a %s program, want linux/amd64's %s", pod.GetName(), p.pid, f.Machine, elf.EM_X86_64)
			}
			_ = f.Close()
		}
	}
}

// assertFirstLogLine asserts that the first line the function logged in
// the pod, as the kubelet of node n keeps it, says it serves and names the
// version its binary was stamped with.
func (s *stack) assertFirstLogLine(ctx context.Context, n *node, pod unstructured.Unstructured, version string) {
	// The kubelet's podLogsDir: <namespace>_<pod>_<uid>/<container>/<restart>.log,
	// each line "<time> <stream> <tag> <message>".
	dir := filepath.Join(n.dir, "pod-logs", fmt.Sprintf("%s_%s_%s", pod.GetNamespace(), pod.GetName(), pod.GetUID()), "package-runtime")
	var first string
	s.await(ctx, "the first log line of pod "+pod.GetName(), 30*time.Second, func(context.Context) (bool, error) {
		logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
		if err != nil {
			return false, err
		}
		if len(logs) == 0 {
			return false, fmt.Errorf("no log in %s", dir)
		}
		// The first container's: the lowest restart count the kubelet kept.
		slices.SortFunc(logs, func(a, b string) int { return logNumber(a) - logNumber(b) })
		content, err := os.ReadFile(logs[0])
		if err != nil {
			return false, err
		}
		line, _, complete := strings.Cut(string(content), "\n")
		first = line
		return complete, fmt.Errorf("%s: no whole line yet", logs[0])
	})
	fields := strings.SplitN(first, " ", 4)
	var entry map[string]any
	if len(fields) != 4 || json.Unmarshal([]byte(fields[3]), &entry) != nil {
		s.t.Errorf("ERROR: pod %s: its first log line isn't a CRI log line of JSON: %q", pod.GetName(), first)
		return
	}
	if entry["msg"] != "Serving function-dependencies" || entry["version"] != version {
		s.t.Errorf("ERROR: pod %s: its first log line says %q, version %v; want \"Serving function-dependencies\", version %s", pod.GetName(), entry["msg"], entry["version"], version)
		return
	}
	s.t.Logf("pod %s: its first log line: %s", pod.GetName(), fields[3])
}

// logNumber is the restart count a container log file is named by.
func logNumber(file string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(file), ".log"))
	if err != nil {
		return -1
	}
	return n
}

// revisionHealthy is nil when a package revision is healthy, itself and its
// runtime (a revision has no Healthy condition of its own).
func revisionHealthy(rev *unstructured.Unstructured) error {
	if conditionTrue(rev, "RevisionHealthy") && conditionTrue(rev, "RuntimeHealthy") {
		return nil
	}
	return errors.New(describeCondition(rev, "RevisionHealthy") + "; " + describeCondition(rev, "RuntimeHealthy"))
}

// activeRevision returns the Function's active FunctionRevision.
func (s *stack) activeRevision(ctx context.Context) *unstructured.Unstructured {
	rev, err := s.activeRevisionNow(ctx)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	return rev
}

func names(l *unstructured.UnstructuredList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	return out
}

// A podProcess is a process of a pod's container, as the kernel sees it:
// its real user and group, and its effective capabilities.
type podProcess struct {
	pid              int
	cmd              string
	uid, gid, capEff string
}

// processesOf finds the processes of a pod's container by their cgroup,
// which the kubelet's cgroupfs driver names .../pod<UID>/<container ID>.
func processesOf(podUID, containerID string) ([]podProcess, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []podProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !bytes.Contains(cg, []byte("/pod"+podUID+"/"+containerID+"\n")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmd, _, _ := strings.Cut(string(cmdline), "\x00")
		p := podProcess{pid: pid, cmd: cmd}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for line := range strings.Lines(string(status)) {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "Uid:":
				p.uid = f[1]
			case "Gid:":
				p.gid = f[1]
			case "CapEff:":
				p.capEff = f[1]
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// upgrade moves the Function to v0.1.1, a package built and pushed like the
// first, while the composite xr reconciles throughout (its annotation
// changes every second), and asserts that a new revision becomes active and
// runs the new digest, the old revision's Deployment goes, and not one
// sample, taken every second, lacks a dependent's finalizer on the shared
// Object or a Ready Usage.
func (s *stack) upgrade(ctx context.Context, xr string, n int) {
	t := s.t
	pushed := s.push(s.buildPackages("v0.1.1"), "v0.1.1")
	ref := pushed.ref
	old := s.activeRevision(ctx)

	sample := s.sampleProtection(ctx, xr, n)
	s.patchFunction(ctx, ref)
	s.await(ctx, "a new revision to become active and Healthy", 5*time.Minute, func(ctx context.Context) (bool, error) {
		rev, err := s.activeRevisionNow(ctx)
		if err != nil {
			return false, err
		}
		if rev.GetName() == old.GetName() {
			return false, fmt.Errorf("revision %s is still the active one", old.GetName())
		}
		err = revisionHealthy(rev)
		return err == nil, err
	})
	s.awaitInstalled(ctx, pushed, "v0.1.1")
	if image, _, _ := unstructured.NestedString(s.activeRevision(ctx).Object, "spec", "image"); image != ref {
		t.Errorf("ERROR: the active revision's image is %s, want %s", image, ref)
	}
	s.await(ctx, "the old revision's Deployment to go", 2*time.Minute, func(ctx context.Context) (bool, error) {
		_, err := s.client.Resource(gvrDeployment).Namespace(installNamespace).Get(ctx, old.GetName(), metav1.GetOptions{})
		return kerrors.IsNotFound(err), fmt.Errorf("Deployment %s: %v", old.GetName(), err)
	})
	// A few more samples with the new revision serving.
	time.Sleep(5 * time.Second)
	if samples, err := sample(); err != nil {
		t.Errorf("ERROR: during the upgrade: %v", err)
	} else {
		t.Logf("upgrade: all %d finalizers on the shared Object and all %d Usages Ready in each of %d samples, one a second, from before spec.package moved until 5 s after the old Deployment went", n, n, samples)
	}
}

// sampleProtection samples, every second until the returned function is
// called, whether every dependent's finalizer is on the shared Object of xr
// and each of its n Usages is Ready, and changes an annotation of xr each
// time, so that Crossplane reconciles it throughout. The function returns
// how many samples were taken, and the first that lacked one; or an error
// if the sampling didn't stop within samplingStops.
func (s *stack) sampleProtection(ctx context.Context, xr string, n int) func() (int, error) {
	stop, done := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	var samples int
	var failed error
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			samples++
			failed = firstError(failed, s.protectedNow(ctx, xr, n, samples))
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.fn.crossplane.io/sample":"%d"}}}`, samples)
			if _, err := s.client.Resource(gvrXR).Patch(ctx, xr, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				failed = firstError(failed, fmt.Errorf("sample %d: cannot annotate the XR: %w", samples, err))
			}
		}
	}()
	return func() (int, error) {
		close(stop)
		defer cancel()
		select {
		case <-done:
			return samples, failed
		case <-time.After(samplingStops):
		}
		// A sample's requests hang: cancelled, they return at once.
		cancel()
		select {
		case <-done:
			return samples, fmt.Errorf("waited %s for the sampling of %s to stop after %d samples, then cancelled it (first failure: %v)", samplingStops, xr, samples, failed)
		case <-time.After(time.Minute):
			return 0, fmt.Errorf("waited %s for the sampling of %s to stop, and a minute more once cancelled: it never did", samplingStops, xr)
		}
	}
}

// samplingStops bounds how long the sampling takes to stop once asked: the
// sample under way, three requests, ends.
const samplingStops = 2 * time.Minute

// protectedNow is nil when every dependent's finalizer is on the shared
// Object of xr and each of its n Usages is Ready.
func (s *stack) protectedNow(ctx context.Context, xr string, n, sample int) error {
	c, err := s.composed(ctx, xr, n)
	if err != nil {
		return fmt.Errorf("sample %d: %w", sample, err)
	}
	if p := c.protected(); p != n {
		return fmt.Errorf("sample %d: %d of %d finalizers on the shared Object", sample, p, n)
	}
	composed, ready, err := s.usagesReady(ctx, xr)
	if err != nil {
		return fmt.Errorf("sample %d: %w", sample, err)
	}
	if ready != n || composed != n {
		return fmt.Errorf("sample %d: %d Usages, %d of them Ready, want %d", sample, composed, ready, n)
	}
	return nil
}

// twoReplicas scales the function to two replicas with its
// DeploymentRuntimeConfig, one on each node (each holds the node's port
// 9443), kills the process of the one serving Crossplane, as a crash
// would, and asserts that the composite, reconciling throughout, keeps
// every finalizer and Usage, that a finalizer taken off is put back, and
// that no more than one reconcile failed to call the function on the way.
// Then it scales back to one.
func (s *stack) twoReplicas(ctx context.Context, xr string, n int) {
	t := s.t
	rev := s.activeRevision(ctx)
	s.scaleFunction(ctx, rev.GetName(), 2)
	// A reconcile, so that Crossplane holds a connection to a replica.
	s.awaitRepair(ctx, xr, n, "with two replicas")
	served := s.functionProxy.servingNode()
	var victim *unstructured.Unstructured
	pods, err := s.client.Resource(gvrPod).Namespace(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/revision=" + rev.GetName()})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	for i, p := range pods.Items {
		if ip, _, _ := unstructured.NestedString(p.Object, "status", "hostIP"); ip == served {
			victim = &pods.Items[i]
		}
	}
	if victim == nil {
		t.Fatalf("ERROR: no pod of revision %s on the node %q that served the last connection: %v", rev.GetName(), served, names(pods))
	}
	failed := s.functionFailures(ctx, xr)
	sample := s.sampleProtection(ctx, xr, n)
	s.killContainer(victim)
	restarted := s.awaitRestart(ctx, victim)
	samples, err := sample()
	if err != nil {
		t.Errorf("ERROR: with one of two replicas killed: %v", err)
	}
	took := s.awaitRepair(ctx, xr, n, "once a replica was killed")
	failures := s.functionFailures(ctx, xr) - failed
	if failures > 1 {
		t.Errorf("ERROR: with one of two replicas killed, %d reconciles failed to call the function, want at most 1", failures)
	}
	t.Logf("fault: replica %s on %s killed, restarted by its kubelet %s later; every finalizer and Usage in each of %d samples, one a second, until then; then the function, served by %s, put back a finalizer within %s; %d reconciles failed to call it",
		victim.GetName(), served, restarted.Round(time.Millisecond), samples, s.functionProxy.servingNode(), took.Round(time.Millisecond), failures)
	s.scaleFunction(ctx, rev.GetName(), 1)
}

// scaleFunction sets the replicas of the function's DeploymentRuntimeConfig
// and waits until the Deployment of revision has that many replicas, all
// available and ready endpoints of the Service.
func (s *stack) scaleFunction(ctx context.Context, revision string, replicas int64) {
	patch := fmt.Appendf(nil, `{"spec":{"deploymentTemplate":{"spec":{"replicas":%d}}}}`, replicas)
	if _, err := s.client.Resource(gvrDeploymentRuntimeConfig).Patch(ctx, installedFunction, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.await(ctx, fmt.Sprintf("%d replicas of the function, each a ready endpoint of its Service", replicas), 3*time.Minute, func(ctx context.Context) (bool, error) {
		d, err := s.client.Resource(gvrDeployment).Namespace(installNamespace).Get(ctx, revision, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		total, _, _ := unstructured.NestedInt64(d.Object, "status", "replicas")
		available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
		endpoints, err := s.functionProxy.endpoints(ctx)
		return err == nil && want == replicas && total == replicas && available == replicas && len(endpoints) == int(replicas),
			firstError(err, fmt.Errorf("Deployment %s: spec.replicas %d, %d replicas, %d available; endpoints %v", revision, want, total, available, endpoints))
	})
}

// functionFailures counts the reconciles of xr that failed to call
// function-dependencies, by the Warning events Crossplane recorded.
func (s *stack) functionFailures(ctx context.Context, xr string) int64 {
	events, err := s.client.Resource(gvrEvent).Namespace("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + xr + ",type=Warning"})
	if err != nil {
		s.t.Fatalf("ERROR: cannot list the events of %s: %v", xr, err)
	}
	var failures int64
	for _, e := range events.Items {
		message, _, _ := unstructured.NestedString(e.Object, "message")
		if strings.Contains(message, fmt.Sprintf("cannot run Function %q", installedFunction)) {
			count, _, _ := unstructured.NestedInt64(e.Object, "count")
			failures += max(count, 1)
		}
	}
	return failures
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// patchFunction moves the Function's spec.package to ref.
func (s *stack) patchFunction(ctx context.Context, ref string) {
	patch := fmt.Appendf(nil, `{"spec":{"package":%q}}`, ref)
	if _, err := s.client.Resource(gvrFunction).Patch(ctx, installedFunction, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		s.t.Fatal("ERROR:", err)
	}
}

// activeRevisionNow is activeRevision, or an error while there is none.
func (s *stack) activeRevisionNow(ctx context.Context) (*unstructured.Unstructured, error) {
	revs, err := s.client.Resource(gvrFunctionRevision).List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/package=" + installedFunction})
	if err != nil {
		return nil, err
	}
	for i := range revs.Items {
		if state, _, _ := unstructured.NestedString(revs.Items[i].Object, "spec", "desiredState"); state == "Active" {
			return &revs.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no active revision among %v", names(revs))
}

// awaitRepair takes one dependent's finalizer off the shared Object of xr
// and waits until the function, called by Crossplane's next reconcile of
// xr, has put it back: the installed function serves.
func (s *stack) awaitRepair(ctx context.Context, xr string, n int, why string) time.Duration {
	c, err := s.composed(ctx, xr, n)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	removed := refFinalizerPrefix + string(c.dependents[0].GetUID())
	keep := slices.DeleteFunc(slices.Clone(c.shared.GetFinalizers()), func(f string) bool { return f == removed })
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": c.shared.GetResourceVersion()}})
	if _, err := s.client.Resource(gvrObject).Patch(ctx, c.shared.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		s.t.Fatalf("ERROR: cannot take %s off %s: %v", removed, c.shared.GetName(), err)
	}
	begin := time.Now()
	touch := 0
	s.await(ctx, "the function to put the finalizer back "+why, 2*time.Minute, func(ctx context.Context) (bool, error) {
		touch++
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.fn.crossplane.io/repair":"%d"}}}`, touch)
		if _, err := s.client.Resource(gvrXR).Patch(ctx, xr, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return false, err
		}
		shared, err := s.client.Resource(gvrObject).Get(ctx, c.shared.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(shared.GetFinalizers(), removed), fmt.Errorf("%s lacks %s", shared.GetName(), removed)
	})
	return time.Since(begin)
}

// killFunction kills the function's process as a crash would, and asserts
// that the kubelet restarts the container and that the function serves
// again.
func (s *stack) killFunction(ctx context.Context, xr string, n int) {
	t := s.t
	rev := s.activeRevision(ctx)
	pod := s.functionPod(ctx, rev.GetName())
	s.killContainer(pod)
	t.Logf("fault: the kubelet restarted the function's container %s after its process was killed", s.awaitRestart(ctx, pod).Round(time.Millisecond))
	took := s.awaitRepair(ctx, xr, n, "after the restart")
	t.Logf("fault: after the restart, the function put back a finalizer taken off the shared Object within %s", took.Round(time.Millisecond))
}

// awaitRestart waits until the kubelet has restarted the container of the
// function's pod, as it was before it was just killed, and it is ready, and
// returns how long that took.
func (s *stack) awaitRestart(ctx context.Context, pod *unstructured.Unstructured) time.Duration {
	killed := time.Now()
	before := restartCount(pod)
	s.await(ctx, "the kubelet to restart the function's container", 2*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := s.client.Resource(gvrPod).Namespace(installNamespace).Get(ctx, pod.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		statuses, _, _ := unstructured.NestedSlice(p.Object, "status", "containerStatuses")
		if len(statuses) != 1 {
			return false, fmt.Errorf("%d container statuses", len(statuses))
		}
		ready := statuses[0].(map[string]any)["ready"]
		return restartCount(p) > before && ready == true, fmt.Errorf("restartCount %d, ready %v", restartCount(p), ready)
	})
	return time.Since(killed)
}

// restartCount is the restart count of the pod's one container.
func restartCount(pod *unstructured.Unstructured) int64 {
	statuses, _, _ := unstructured.NestedSlice(pod.Object, "status", "containerStatuses")
	if len(statuses) != 1 {
		return 0
	}
	n, _ := statuses[0].(map[string]any)["restartCount"].(int64)
	return n
}

// functionPod returns the running pod of a revision.
func (s *stack) functionPod(ctx context.Context, revision string) *unstructured.Unstructured {
	pods, err := s.client.Resource(gvrPod).Namespace(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/revision=" + revision})
	if err != nil || len(pods.Items) != 1 {
		s.t.Fatalf("ERROR: want one pod of revision %s: %v %v", revision, names(pods), err)
	}
	return &pods.Items[0]
}

// killContainer kills the process of the pod's one container with SIGKILL.
func (s *stack) killContainer(pod *unstructured.Unstructured) {
	statuses, _, _ := unstructured.NestedSlice(pod.Object, "status", "containerStatuses")
	if len(statuses) != 1 {
		s.t.Fatalf("ERROR: pod %s has %d container statuses", pod.GetName(), len(statuses))
	}
	id, _ := statuses[0].(map[string]any)["containerID"].(string)
	procs, err := processesOf(string(pod.GetUID()), strings.TrimPrefix(id, "containerd://"))
	if err != nil || len(procs) != 1 {
		s.t.Fatalf("ERROR: want the one process of pod %s's container: %v %v", pod.GetName(), procs, err)
	}
	if err := syscall.Kill(procs[0].pid, syscall.SIGKILL); err != nil {
		s.t.Fatal("ERROR:", err)
	}
}

// missingTag points the Function at a tag the registry doesn't have, and
// asserts the error Crossplane reports and that the active revision keeps
// serving; then points it back.
func (s *stack) missingTag(ctx context.Context, xr string, n int) {
	t := s.t
	rev := s.activeRevision(ctx)
	good, _, _ := unstructured.NestedString(rev.Object, "spec", "image")
	missing := fmt.Sprintf("%s/%s:v9.9.9", s.registry, installedFunctionRepository)
	s.patchFunction(ctx, missing)
	var reported string
	s.await(ctx, "Crossplane to report the missing tag", 2*time.Minute, func(ctx context.Context) (bool, error) {
		fn, err := s.client.Resource(gvrFunction).Get(ctx, installedFunction, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(fn.Object, "status", "conditions")
		for _, c := range conditions {
			m := c.(map[string]any)
			if msg, _ := m["message"].(string); m["status"] == "False" && strings.Contains(msg, "v9.9.9") {
				reported = fmt.Sprintf("%v=%v %v: %s", m["type"], m["status"], m["reason"], msg)
				return true, nil
			}
		}
		return false, errors.New(describeCondition(fn, "Installed"))
	})
	t.Logf("fault: Crossplane reports the missing tag: %s", reported)
	if !strings.Contains(reported, "MANIFEST_UNKNOWN") {
		t.Errorf("ERROR: Crossplane's report of a tag the registry lacks doesn't say the manifest is unknown: %s", reported)
	}
	if now := s.activeRevision(ctx); now.GetName() != rev.GetName() {
		t.Errorf("ERROR: the active revision changed from %s to %s", rev.GetName(), now.GetName())
	}
	took := s.awaitRepair(ctx, xr, n, "while the Function names a missing tag")
	t.Logf("fault: with the Function naming a missing tag, revision %s still serves: it put back a finalizer within %s", rev.GetName(), took.Round(time.Millisecond))
	s.patchFunction(ctx, good)
	s.await(ctx, "the Function to be Healthy again", 2*time.Minute, func(ctx context.Context) (bool, error) {
		fn, err := s.client.Resource(gvrFunction).Get(ctx, installedFunction, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(fn, "Installed") && conditionTrue(fn, "Healthy"), errors.New(describeCondition(fn, "Installed") + "; " + describeCondition(fn, "Healthy"))
	})
}

// packageConstraint is the Crossplane versions package/crossplane.yaml
// declares the function supports (spec.crossplane.version).
func (s *stack) packageConstraint() string {
	docs := readYAML(s.t, filepath.Join(s.root, "package", "crossplane.yaml"))
	if len(docs) != 1 {
		s.t.Fatalf("ERROR: package/crossplane.yaml holds %d documents, want 1", len(docs))
	}
	constraint, _, _ := unstructured.NestedString(docs[0].Object, "spec", "crossplane", "version")
	return constraint
}

// compatible asserts that Crossplane core reports its release's version, as
// hack/tools.sh stamps it (an unstamped core, whose version is empty, refuses
// every package that declares the Crossplane versions it supports), and that
// the package declares those versions and the installed revision, Healthy
// (awaitInstalled), isn't marked incompatible.
func (s *stack) compatible(ctx context.Context) {
	t := s.t
	cmd, done := command(t, time.Minute, s.bins["crossplane-core"], "--version")
	out, err := cmd.Output()
	if err = done(err); err != nil {
		t.Fatalf("ERROR: crossplane-core --version: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != s.releases.crossplane {
		t.Errorf("ERROR: Crossplane core reports the version %q, want %s (hack/tools.sh stamps it)", got, s.releases.crossplane)
	}
	constraint := s.packageConstraint()
	if constraint == "" {
		t.Error("ERROR: package/crossplane.yaml declares no spec.crossplane.version")
	}
	rev := s.activeRevision(ctx)
	healthy := describeCondition(rev, "RevisionHealthy")
	if !conditionTrue(rev, "RevisionHealthy") || strings.Contains(healthy, "incompatible") {
		t.Errorf("ERROR: revision %s: %s", rev.GetName(), healthy)
	}
	t.Logf("CONSTRAINT: the package declares spec.crossplane.version %q; Crossplane core, version %s, installed it: revision %s %s",
		constraint, strings.TrimSpace(string(out)), rev.GetName(), healthy)
}

// incompatibleCrossplane installs, beside the installed function, a second
// Function whose package declares only Crossplane versions from v99 on, and
// asserts that Crossplane's package manager refuses it: its revision
// unhealthy, incompatible with the running version, its runtime held back,
// no Deployment and no pod; while the installed function keeps serving.
// Then it deletes that Function and waits until its revision is gone.
func (s *stack) incompatibleCrossplane(ctx context.Context, xr string, n int) {
	t := s.t
	const name, constraint = "function-dependencies-incompatible", ">=v99.0.0"
	pushed := s.push(s.buildWithConstraint(constraint), "v0.1.2")
	active := s.activeRevision(ctx)
	s.create(ctx, gvrFunction, "", obj(map[string]any{
		"apiVersion": "pkg.crossplane.io/v1", "kind": "Function",
		"metadata": map[string]any{"name": name},
		// The installed function's, so that, were a Deployment made, it
		// would be one the nodes could run.
		"spec": map[string]any{"package": pushed.ref, "runtimeConfigRef": map[string]any{"name": installedFunction}},
	}))
	revisions := func(ctx context.Context) (*unstructured.UnstructuredList, error) {
		return s.client.Resource(gvrFunctionRevision).List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/package=" + name})
	}
	var rev *unstructured.Unstructured
	s.await(ctx, "Crossplane to refuse the package as incompatible", 3*time.Minute, func(ctx context.Context) (bool, error) {
		revs, err := revisions(ctx)
		if err != nil {
			return false, err
		}
		if len(revs.Items) != 1 {
			return false, fmt.Errorf("want one revision of Function %s: %v", name, names(revs))
		}
		rev = &revs.Items[0]
		c := condition(rev, "RevisionHealthy")
		message, _ := c["message"].(string)
		return c != nil && c["status"] == "False" && strings.Contains(message, "incompatible Crossplane version"), errors.New(describeCondition(rev, "RevisionHealthy"))
	})
	refusal := describeCondition(rev, "RevisionHealthy")
	if !strings.Contains(refusal, "("+s.releases.crossplane+")") {
		t.Errorf("ERROR: revision %s: the refusal doesn't name the running version %s: %s", rev.GetName(), s.releases.crossplane, refusal)
	}
	t.Logf("REFUSED: package %s declares spec.crossplane.version %q; Crossplane %s: revision %s %s", pushed.ref, constraint, s.releases.crossplane, rev.GetName(), refusal)
	// Crossplane's package runtime deploys a revision only once it is
	// healthy.
	s.await(ctx, "Crossplane's package runtime to hold the refused revision back", 2*time.Minute, func(ctx context.Context) (bool, error) {
		r, err := s.client.Resource(gvrFunctionRevision).Get(ctx, rev.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rev = r
		c := condition(r, "RuntimeHealthy")
		return c != nil && c["status"] == "False", errors.New(describeCondition(r, "RuntimeHealthy"))
	})
	t.Logf("REFUSED: revision %s %s", rev.GetName(), describeCondition(rev, "RuntimeHealthy"))
	// Meanwhile the installed function serves: a repair takes up to 30 s,
	// time for a Deployment of the refused revision to appear, were one made.
	took := s.awaitRepair(ctx, xr, n, "beside the refused package")
	if _, err := s.client.Resource(gvrDeployment).Namespace(installNamespace).Get(ctx, rev.GetName(), metav1.GetOptions{}); !kerrors.IsNotFound(err) {
		t.Errorf("ERROR: the refused revision %s has a Deployment (err %v), want none", rev.GetName(), err)
	}
	pods, err := s.client.Resource(gvrPod).Namespace(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/revision=" + rev.GetName()})
	if err != nil || len(pods.Items) > 0 {
		t.Errorf("ERROR: the refused revision %s has pods %v (err %v), want none", rev.GetName(), names(pods), err)
	}
	if now := s.activeRevision(ctx); now.GetName() != active.GetName() || revisionHealthy(now) != nil {
		t.Errorf("ERROR: the installed function's active revision was %s, Healthy; now %s: %v", active.GetName(), now.GetName(), revisionHealthy(now))
	}
	fn, err := s.client.Resource(gvrFunction).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	t.Logf("REFUSED: Function %s: %s; %s; no Deployment, no pod; beside it, revision %s of the installed function put back a finalizer within %s",
		name, describeCondition(fn, "Installed"), describeCondition(fn, "Healthy"), active.GetName(), took.Round(time.Millisecond))

	if err := s.client.Resource(gvrFunction).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal("ERROR:", err)
	}
	s.await(ctx, "the refused Function and its revision to go", 2*time.Minute, func(ctx context.Context) (bool, error) {
		_, err := s.client.Resource(gvrFunction).Get(ctx, name, metav1.GetOptions{})
		if !kerrors.IsNotFound(err) {
			return false, fmt.Errorf("Function %s: %v", name, err)
		}
		revs, err := revisions(ctx)
		return err == nil && len(revs.Items) == 0, firstError(err, fmt.Errorf("revisions %v", names(revs)))
	})
}

// buildWithConstraint builds the function's packages, for every platform,
// from a copy of package/ whose crossplane.yaml declares the Crossplane
// versions constraint, with the crossplane CLI and the runtime images
// hack/xpkg.sh built last, and returns their paths by architecture.
func (s *stack) buildWithConstraint(constraint string) map[string]string {
	t := s.t
	root := filepath.Join(s.dir, "package-incompatible")
	must(t, os.CopyFS(root, os.DirFS(filepath.Join(s.root, "package"))))
	meta := filepath.Join(root, "crossplane.yaml")
	docs := readYAML(t, meta)
	if len(docs) != 1 {
		t.Fatalf("ERROR: package/crossplane.yaml holds %d documents, want 1", len(docs))
	}
	must(t, unstructured.SetNestedField(docs[0].Object, constraint, "spec", "crossplane", "version"))
	// JSON is YAML.
	b, err := json.Marshal(docs[0].Object)
	must(t, err)
	must(t, os.WriteFile(meta, b, 0o644))
	pkgs := map[string]string{}
	for _, arch := range platforms {
		pkg := filepath.Join(s.xpkgDir, "function-dependencies-incompatible-"+arch+".xpkg")
		cmd, done := command(t, 5*time.Minute, s.bins["crossplane"], "xpkg", "build",
			"--package-root="+root,
			"--embed-runtime-image-tarball="+filepath.Join(s.xpkgDir, "runtime-"+arch+".tar"),
			// A folder that doesn't exist: no examples.
			"--examples-root="+filepath.Join(s.dir, "no-examples"),
			"-o", pkg)
		out, err := cmd.CombinedOutput()
		if err = done(err); err != nil {
			t.Fatalf("ERROR: crossplane xpkg build of the package declaring %q: %v\n%s", constraint, err, out)
		}
		pkgs[arch] = pkg
	}
	return pkgs
}
