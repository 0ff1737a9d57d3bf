//go:build controlplane

package controlplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
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
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// Pinned releases whose CRDs the test applies; the binaries are pinned by
// the modules under tools/.
const (
	providerKubernetesModule = "github.com/crossplane-contrib/provider-kubernetes@v1.2.1"
	crossplaneModule         = "github.com/crossplane/crossplane/v2@v2.4.0"
)

// releases are the pair of Crossplane core and provider-kubernetes a stack
// runs: their hack/tools.sh tool names and the modules their CRDs come from.
type releases struct {
	crossplane, provider             string
	crossplaneTool, providerTool     string
	crossplaneModule, providerModule string
	// moduleEnv is what `go mod download` needs for these modules beyond
	// the defaults.
	moduleEnv []string
	// v1 is Crossplane v1 (XRD apiextensions.crossplane.io/v1 with claims,
	// no Operations, no capabilities on FunctionRevisions) with a
	// provider-kubernetes v0 (cluster-scoped Objects only, no health probe).
	v1 bool
}

// v2Release is the stack of every test but the v1 one.
var v2Release = releases{
	crossplane: "v2.4.0", provider: "v1.2.1",
	crossplaneTool: "crossplane-core", providerTool: "provider-kubernetes",
	crossplaneModule: crossplaneModule, providerModule: providerKubernetesModule,
}

// provider-kubernetes v1.2.1 can't move its webhook server and metrics off
// controller-runtime's defaults.
const (
	providerWebhookPort = 9443
	providerMetricsPort = 8080
)

var (
	gvrCRD                   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrNamespace             = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrSecret                = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrConfigMap             = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrEvent                 = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	gvrServiceAccount        = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrObject                = schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha2", Resource: "objects"}
	gvrProviderConfig        = schema.GroupVersionResource{Group: "kubernetes.crossplane.io", Version: "v1alpha1", Resource: "providerconfigs"}
	gvrClusterProviderConfig = schema.GroupVersionResource{Group: "kubernetes.m.crossplane.io", Version: "v1alpha1", Resource: "clusterproviderconfigs"}
	gvrXRD                   = schema.GroupVersionResource{Group: "apiextensions.crossplane.io", Version: "v2", Resource: "compositeresourcedefinitions"}
	gvrComposition           = schema.GroupVersionResource{Group: "apiextensions.crossplane.io", Version: "v1", Resource: "compositions"}
	gvrFunctionRevision      = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "functionrevisions"}
	gvrValidatingWebhook     = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	gvrClusterUsage          = schema.GroupVersionResource{Group: "protection.crossplane.io", Version: "v1beta1", Resource: "clusterusages"}
	gvrEventV1               = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
)

// stack is the running control plane.
type stack struct {
	t    *testing.T
	root string
	dir  string
	logs string
	pki  *pki

	kubeconfig string
	config     *rest.Config
	client     dynamic.Interface

	// crossplaneWebhookPort is where Crossplane serves its Usage webhook.
	crossplaneWebhookPort int

	releases releases

	// controllers are kube-controller-manager's controllers beyond those
	// every test needs; coreWrap, when set, starts Crossplane through it with
	// its default package runtime (Deployment) instead of External. Both are
	// the install scenario's (installStack).
	controllers []string
	coreWrap    func(bin string, args []string) (string, []string)
	// registry is the OCI registry on loopback the install scenario pushes
	// to: 127.0.0.1:PORT; bins are its tools, xpkgDir the folder of the
	// packages it builds and xpkgs the first of them, by architecture;
	// nodes its nodes, by name.
	registry string
	bins     map[string]string
	xpkgDir  string
	xpkgs    map[string]string
	nodes    map[string]*node
	// providerNetNS is provider-kubernetes's network namespace, when it has
	// one of its own, and providerWebhook where its webhook is forwarded to
	// (startProviderNamespace).
	providerNetNS, providerWebhook string
	// functionProxy is the installed function's Service, as Crossplane
	// reaches it in the install scenario (proxyService).
	functionProxy *serviceProxy

	// mu guards procs: a component may be restarted while a poll checks
	// that the others run.
	mu    sync.Mutex
	procs []*process
	// ready says, by component, when a component started again is ready.
	ready map[string]func(context.Context) (bool, error)
}

// testContext ends 30 s before the test's deadline, so that a test that
// runs out of time still stops its components and reports what it saw.
func testContext(t *testing.T) context.Context {
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		t.Cleanup(cancel)
	}
	return ctx
}

// startStack builds what is missing and starts every component. It returns
// once Crossplane and provider-kubernetes are running and the functions are
// registered.
func startStack(ctx context.Context, t *testing.T) *stack {
	t.Helper()
	return startRelease(ctx, t, v2Release)
}

// startRelease is startStack for the Crossplane and provider-kubernetes of r.
func startRelease(ctx context.Context, t *testing.T, r releases) *stack {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	s := &stack{t: t, root: filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")), releases: r}
	s.dir = t.TempDir()
	s.logs = logsDir(t)

	begin := time.Now()
	bins := tools(t, s.root, "etcd", "kube-apiserver", "kube-controller-manager", r.providerTool, r.crossplaneTool,
		"function-patch-and-transform", "function-auto-ready")
	if bin := os.Getenv("FD_CONTROLPLANE_FUNCTION"); bin != "" {
		bins["function-dependencies"] = bin
		t.Logf("function-dependencies: %s (FD_CONTROLPLANE_FUNCTION)", bin)
	} else {
		bins["function-dependencies"] = buildFunction(t, s.root, s.dir)
	}
	t.Logf("binaries ready in %s", time.Since(begin).Round(time.Second))

	requireFree(t, providerWebhookPort, "provider-kubernetes's webhook server")
	requireFree(t, providerMetricsPort, "provider-kubernetes's metrics server")

	var err error
	if s.pki, err = newPKI(filepath.Join(s.dir, "pki")); err != nil {
		t.Fatalf("ERROR: cannot make certificates: %v", err)
	}

	begin = time.Now()
	s.startKubernetes(ctx, bins)
	t.Logf("etcd, kube-apiserver and kube-controller-manager ready in %s", time.Since(begin).Round(time.Millisecond))

	s.applyCRDs(ctx)
	s.startProvider(ctx, bins[r.providerTool])
	s.startCrossplane(ctx, bins[r.crossplaneTool])
	for _, fn := range []string{"function-patch-and-transform", "function-dependencies", "function-auto-ready"} {
		s.serveFunction(ctx, fn, bins[fn])
	}
	t.Logf("STACK START: the whole control plane was ready in %s (binaries already built)", time.Since(begin).Round(time.Millisecond))
	return s
}

// logsDir is where the components log. The logs are kept when the test
// fails, and removed when it passes.
func logsDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("FD_CONTROLPLANE_LOGS")
	if base != "" {
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal("ERROR:", err)
		}
	}
	dir, err := os.MkdirTemp(base, "controlplane-logs-")
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	// Registered first, so it runs last: after every process stopped.
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("FD_CONTROLPLANE_KEEP_LOGS") != "" {
			t.Logf("the components' logs are in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func (s *stack) start(name, bin string, args []string, env ...string) *process {
	p := start(s.t, s.logs, name, bin, args, env...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, p)
	return p
}

// readyWhen remembers when a component is ready, for restart, and returns
// the check.
func (s *stack) readyWhen(name string, ready func(context.Context) (bool, error)) func(context.Context) (bool, error) {
	if s.ready == nil {
		s.ready = map[string]func(context.Context) (bool, error){}
	}
	s.ready[name] = ready
	return ready
}

// restart kills a component as a crash would, leaves it down for down, and
// starts it again with the same arguments, waiting until it is ready. It may
// run beside the test's goroutine, and so returns its error.
func (s *stack) restart(ctx context.Context, name string, down time.Duration) error {
	s.mu.Lock()
	i := slices.IndexFunc(s.procs, func(p *process) bool { return p.name == name && !p.killed.Load() })
	if i < 0 {
		s.mu.Unlock()
		return fmt.Errorf("no %s runs to restart", name)
	}
	p := s.procs[i]
	s.mu.Unlock()
	if err := p.kill(); err != nil {
		return err
	}
	time.Sleep(down)
	s.start(name, p.bin, p.args, p.env...)
	if err := s.poll(ctx, 60*time.Second, 200*time.Millisecond, s.ready[name]); err != nil {
		return fmt.Errorf("%s started again is not ready: %w", name, err)
	}
	return nil
}

// count counts the lines of a component's log that contain substr.
func (s *stack) count(component, substr string) int {
	b, err := os.ReadFile(filepath.Join(s.logs, component+".log"))
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	return bytes.Count(b, []byte(substr))
}

// crossplaneLines counts the lines of Crossplane's log that contain every
// one of substrs.
func (s *stack) crossplaneLines(substrs ...string) int {
	b, err := os.ReadFile(filepath.Join(s.logs, "crossplane.log"))
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	n := 0
	for line := range bytes.Lines(b) {
		if !slices.ContainsFunc(substrs, func(sub string) bool { return !bytes.Contains(line, []byte(sub)) }) {
			n++
		}
	}
	return n
}

// alive returns an error when a component has exited.
func (s *stack) alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.exited() && !p.killed.Load() {
			return p.failure()
		}
	}
	return nil
}

// await polls ready until it returns true, failing the test when the timeout
// passes or a component exits first.
func (s *stack) await(ctx context.Context, what string, timeout time.Duration, ready func(context.Context) (bool, error)) {
	s.t.Helper()
	if err := s.poll(ctx, timeout, 200*time.Millisecond, ready); err != nil {
		s.t.Fatalf("ERROR: waiting for %s: %v", what, err)
	}
}

// cacheSync bounds how long a cache of the API server takes to see an
// object just written: the RBAC authorizer's roles and bindings, the CRD
// handler's CRDs, the admission webhooks' configurations. Each is an informer,
// so the API server answers from it as it was a moment before: a
// SubjectAccessReview denies what a binding just created grants, a CRD just
// Established is not served yet, a webhook just configured is not called.
const cacheSync = 30 * time.Second

// awaitCache polls check until it holds, within cacheSync, for a question the
// API server answers from such a cache about something just written. Until
// then an answer is stale rather than wrong: only after it may a test assert
// what the cache says, and what it denies. It returns how long the cache
// took, for the log.
func (s *stack) awaitCache(ctx context.Context, what string, check func(context.Context) (bool, error)) (cacheWait, error) {
	begin := time.Now()
	var w cacheWait
	err := s.poll(ctx, cacheSync, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		w.asked++
		return check(ctx)
	})
	w.took = time.Since(begin)
	if err != nil {
		return w, fmt.Errorf("waiting for %s: %w (asked %d times)", what, err, w.asked)
	}
	return w, nil
}

// A cacheWait is how long a cache took to see a write, and how often it was
// asked meanwhile.
type cacheWait struct {
	took  time.Duration
	asked int
}

func (w cacheWait) String() string {
	if w.asked == 1 {
		return w.took.Round(time.Millisecond).String() + " (asked once)"
	}
	return fmt.Sprintf("%s (asked %d times)", w.took.Round(time.Millisecond), w.asked)
}

// poll calls cond every interval until it returns true, the timeout passes, a
// component exits or cond returns a permanent error. The last error cond
// returned is reported on timeout; and, if ctx ended first (the test's
// time ran out, or an enclosing wait's), that it did.
func (s *stack) poll(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (bool, error)) error {
	parent, begin := ctx, time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if err := s.alive(); err != nil {
			return err
		}
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.error
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			end := fmt.Sprintf("not done within %s", timeout)
			if err := parent.Err(); err != nil {
				why := "the test's time, or an enclosing wait's, ran out"
				if errors.Is(err, context.Canceled) {
					why = "cancelled"
				}
				end = fmt.Sprintf("not done %s into a wait of %s, when its context ended first (%s)", time.Since(begin).Round(time.Second), timeout, why)
			}
			if last != nil {
				return fmt.Errorf("%s: %w", end, last)
			}
			return errors.New(end)
		case <-time.After(interval):
		}
	}
}

func (s *stack) startKubernetes(ctx context.Context, bins map[string]string) {
	etcdClient, etcdPeer := freePort(s.t), freePort(s.t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	s.start("etcd", bins["etcd"], []string{
		"--name=default",
		"--data-dir=" + filepath.Join(s.dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	})
	s.await(ctx, "etcd", 30*time.Second, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer rsp.Body.Close()
		b, _ := io.ReadAll(rsp.Body)
		return rsp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"true"`)), nil
	})

	apiPort := freePort(s.t)
	s.start("kube-apiserver", bins["kube-apiserver"], []string{
		"--etcd-servers=" + clientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(s.dir, "apiserver"),
		"--tls-cert-file=" + s.pki.ServingCert,
		"--tls-private-key-file=" + s.pki.ServingKey,
		"--client-ca-file=" + s.pki.CAFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + s.pki.ServiceAccountPub,
		"--service-account-signing-key-file=" + s.pki.ServiceAccountKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	})
	kubeconfig, err := s.pki.kubeconfig(fmt.Sprintf("https://127.0.0.1:%d", apiPort))
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.kubeconfig = filepath.Join(s.dir, "admin.kubeconfig")
	if err := os.WriteFile(s.kubeconfig, kubeconfig, 0o600); err != nil {
		s.t.Fatal("ERROR:", err)
	}
	if s.config, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.config.QPS, s.config.Burst = 200, 400
	if s.client, err = dynamic.NewForConfig(s.config); err != nil {
		s.t.Fatal("ERROR:", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(s.config)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.await(ctx, "kube-apiserver", 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, err
	})

	s.start("kube-controller-manager", bins["kube-controller-manager"], []string{
		"--kubeconfig=" + s.kubeconfig,
		"--controllers=" + strings.Join(append([]string{"garbagecollector", "namespace", "serviceaccount", "serviceaccount-token"}, s.controllers...), ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--service-account-private-key-file=" + s.pki.ServiceAccountKey,
		"--root-ca-file=" + s.pki.CAFile,
	})
	// The service account controller creating the default namespace's
	// service account shows the controller manager is running.
	s.await(ctx, "kube-controller-manager", 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := s.client.Resource(gvrServiceAccount).Namespace("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// moduleDir returns the folder of a module version in the module cache,
// downloading it if needed.
//
// The module cache first, with no network: hack/controlplane-test.sh
// downloads (and so verifies) both modules before it enters a network
// namespace of its own, and in there a lookup that goes to the checksum
// database fails as soon as any go command on the machine has moved the
// database's cached tree head on (seen here: it needed tiles it didn't have).
func moduleDir(t *testing.T, module string, env ...string) string {
	t.Helper()
	if dir, err := downloadModule(t, module, "GOPROXY=off", "GOSUMDB=off"); err == nil {
		return dir
	}
	dir, err := downloadModule(t, module, env...)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	return dir
}

// moduleDownload bounds `go mod download` of one module: from the module
// cache it takes a moment, and a download that hangs on the network must
// not hang the test.
const moduleDownload = 10 * time.Minute

func downloadModule(t *testing.T, module string, env ...string) (string, error) {
	cmd, done := command(t, moduleDownload, "go", "mod", "download", "-json", module)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	err = done(err)
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); err != nil || jerr != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("cannot download %s (%v): %w %s", module, env, errors.Join(err, jerr), m.Error)
	}
	return m.Dir, nil
}

// applyCRDs installs the CRDs of provider-kubernetes and Crossplane, with the
// Object conversion webhook pointed at the provider running on this machine.
func (s *stack) applyCRDs(ctx context.Context) {
	caBundle := base64.StdEncoding.EncodeToString(s.pki.caPEM)
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", providerWebhookPort)
	if s.providerWebhook != "" {
		url = "https://" + s.providerWebhook + "/convert"
	}
	var crds []*unstructured.Unstructured
	for _, src := range []struct {
		dir      string
		provider bool
	}{
		{filepath.Join(moduleDir(s.t, s.releases.providerModule, s.releases.moduleEnv...), "package", "crds"), true},
		{filepath.Join(moduleDir(s.t, s.releases.crossplaneModule, s.releases.moduleEnv...), "cluster", "crds"), false},
	} {
		files, err := filepath.Glob(filepath.Join(src.dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			s.t.Fatalf("ERROR: no CRDs in %s: %v", src.dir, err)
		}
		for _, f := range files {
			for _, crd := range readYAML(s.t, f) {
				// The provider's conversion webhook names an in-cluster
				// Service; here the provider serves it on this machine.
				if _, ok, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig"); ok && src.provider {
					must(s.t, unstructured.SetNestedMap(crd.Object, map[string]any{"url": url, "caBundle": caBundle}, "spec", "conversion", "webhook", "clientConfig"))
				}
				crds = append(crds, crd)
			}
		}
	}
	for _, crd := range crds {
		if _, err := s.client.Resource(gvrCRD).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			s.t.Fatalf("ERROR: cannot create CRD %s: %v", crd.GetName(), err)
		}
	}
	// Established is the CRD's status; the API server serves its kind only
	// once its CRD handler's informer has that status too, and until then
	// answers NotFound: ask for the kind itself.
	all := cacheWait{}
	begin := time.Now()
	for _, crd := range crds {
		gvr, err := servedResource(crd)
		if err != nil {
			s.t.Fatal("ERROR:", err)
		}
		w, err := s.awaitCache(ctx, "CRD "+crd.GetName()+" to be served", func(ctx context.Context) (bool, error) {
			u, err := s.client.Resource(gvrCRD).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !conditionTrue(u, "Established") {
				return false, errors.New(describeCondition(u, "Established"))
			}
			_, err = s.client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, err
		})
		if err != nil {
			s.t.Fatal("ERROR:", err)
		}
		all.asked += w.asked
	}
	all.took = time.Since(begin)
	s.t.Logf("applied %d CRDs of provider-kubernetes %s and Crossplane %s; all Established and served %s after", len(crds), s.releases.provider, s.releases.crossplane, all)
}

// servedResource is the resource a CRD defines, at its storage version: a
// list of it needs no conversion webhook.
func servedResource(crd *unstructured.Unstructured) (schema.GroupVersionResource, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["storage"] == true {
			return schema.GroupVersionResource{Group: group, Version: fmt.Sprint(m["name"]), Resource: plural}, nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("CRD %s: no version has storage: true", crd.GetName())
}

func (s *stack) startProvider(ctx context.Context, bin string) {
	s.create(ctx, gvrNamespace, "", obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "crossplane-system"}}))
	kubeconfig, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.create(ctx, gvrSecret, "crossplane-system", obj(map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "provider-kubernetes-kubeconfig", "namespace": "crossplane-system"},
		"stringData": map[string]any{"kubeconfig": string(kubeconfig)},
	}))
	credentials := map[string]any{
		"source":    "Secret",
		"secretRef": map[string]any{"namespace": "crossplane-system", "name": "provider-kubernetes-kubeconfig", "key": "kubeconfig"},
	}
	s.create(ctx, gvrProviderConfig, "", obj(map[string]any{
		"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig",
		"metadata": map[string]any{"name": "default"}, "spec": map[string]any{"credentials": credentials},
	}))
	if s.releases.v1 {
		// provider-kubernetes v0 has neither the namespaced group nor a
		// health probe: its webhook server listening shows it runs.
		s.start("provider-kubernetes", bin, []string{"--debug"},
			"KUBECONFIG="+s.kubeconfig, "TLS_SERVER_CERTS_DIR="+s.pki.TLSDir, "WEBHOOK_TLS_CERT_DIR=")
		addr := fmt.Sprintf("127.0.0.1:%d", providerWebhookPort)
		s.await(ctx, "provider-kubernetes", 60*time.Second, s.readyWhen("provider-kubernetes", func(context.Context) (bool, error) { return listening(addr), nil }))
		return
	}
	s.create(ctx, gvrClusterProviderConfig, "", obj(map[string]any{
		"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "ClusterProviderConfig",
		"metadata": map[string]any{"name": "default"}, "spec": map[string]any{"credentials": credentials},
	}))

	health := freePort(s.t)
	// Default concurrency (--max-reconcile-rate=100): #371 needs parallel
	// reconciles.
	bin, args := s.inProviderNamespace(bin, []string{
		"--debug",
		"--health-probe-bind-addr=127.0.0.1:" + strconv.Itoa(health),
	}, health)
	s.start("provider-kubernetes", bin, args, "KUBECONFIG="+s.kubeconfig, "TLS_SERVER_CERTS_DIR="+s.pki.TLSDir, "WEBHOOK_TLS_CERT_DIR=",
		// An experiment of issue 17: the provider's alpha watches, which
		// Objects with spec.watch: true use (see composition).
		"ENABLE_WATCHES="+strconv.FormatBool(providerWatches()))
	s.await(ctx, "provider-kubernetes", 60*time.Second, s.readyWhen("provider-kubernetes", httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))))
}

// startCrossplane starts Crossplane core with its webhook server, and points
// the API server's Usage webhook at it. Webhooks on also start the Usage
// controllers: without them no Usage protects anything. On v2 Operations
// are on too: the Operation test needs them, and the others create none.
// Core v1.19's `start` has no Operations and one --cache-dir for v2's
// --xpkg-cache-dir and --xfn-cache-dir; its Usages are beta and on by
// default, and only the webhook makes one refuse a deletion.
func (s *stack) startCrossplane(ctx context.Context, bin string) {
	health := freePort(s.t)
	// provider-kubernetes holds the default, 9443.
	s.crossplaneWebhookPort = freePort(s.t)
	args := []string{
		"--debug", "core", "start",
		"--namespace=crossplane-system",
		"--leader-election=false",
		"--tls-client-certs-dir=" + s.pki.TLSDir,
		// tls.crt and tls.key, for 127.0.0.1: what the API server dials.
		"--tls-server-certs-dir=" + s.pki.TLSDir,
		"--webhook-port=" + strconv.Itoa(s.crossplaneWebhookPort),
		"--metrics-port=" + strconv.Itoa(freePort(s.t)),
		"--health-probe-port=" + strconv.Itoa(health),
	}
	if s.releases.v1 {
		args = append(args, "--cache-dir="+filepath.Join(s.dir, "cache"))
	} else {
		args = append(args,
			// Alpha in v2.4.0: the Operation, CronOperation and WatchOperation
			// controllers (their CRDs come with the others, from cluster/crds).
			"--enable-operations",
			"--xpkg-cache-dir="+filepath.Join(s.dir, "xpkg"),
			"--xfn-cache-dir="+filepath.Join(s.dir, "xfn"))
	}
	if s.coreWrap != nil {
		bin, args = s.coreWrap(bin, args)
	} else {
		args = append(args, "--package-runtime=External")
	}
	s.start("crossplane", bin, args, "KUBECONFIG="+s.kubeconfig)
	// With webhooks on, /readyz also waits for the webhook server.
	s.await(ctx, "Crossplane", 60*time.Second, s.readyWhen("crossplane", httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))))
	s.applyUsageWebhook(ctx)
}

// applyUsageWebhook creates the ValidatingWebhookConfiguration that the
// stack's Crossplane ships for Usages, pointed at Crossplane on this machine. In a cluster
// `crossplane core init` creates it from the same file, with the Service and
// the CA bundle of the TLS Secret it generates; `core start` never touches it,
// so the test owns it. Then it proves the API server calls the webhook: a
// DELETE of an object labelled in use reaches Crossplane's handler.
func (s *stack) applyUsageWebhook(ctx context.Context) {
	file := filepath.Join(moduleDir(s.t, s.releases.crossplaneModule, s.releases.moduleEnv...), "cluster", "webhookconfigurations", "usage.yaml")
	caBundle := base64.StdEncoding.EncodeToString(s.pki.caPEM)
	for _, cfg := range readYAML(s.t, file) {
		webhooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
		for i, w := range webhooks {
			hook := w.(map[string]any)
			path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			if path == "" {
				s.t.Fatalf("ERROR: %s: webhook %v has no service path", file, hook["name"])
			}
			hook["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", s.crossplaneWebhookPort, path),
				"caBundle": caBundle,
			}
			webhooks[i] = hook
		}
		must(s.t, unstructured.SetNestedSlice(cfg.Object, webhooks, "webhooks"))
		s.create(ctx, gvrValidatingWebhook, "", cfg)
	}

	// The API server loads webhook configurations asynchronously: until it
	// has, a DELETE passes without calling the webhook. Crossplane logs
	// every call (--debug), so probe until the log shows one.
	const called = "Validating no usages"
	before := s.count("crossplane", called)
	probe := 0
	w, err := s.awaitCache(ctx, "the API server to call Crossplane's Usage webhook", func(ctx context.Context) (bool, error) {
		probe++
		name := fmt.Sprintf("usage-webhook-probe-%d", probe)
		s.create(ctx, gvrConfigMap, "default", obj(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "labels": map[string]any{inUseLabel: "true"}},
		}))
		// No Usage names it: the webhook allows the deletion.
		if err := s.client.Resource(gvrConfigMap).Namespace("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return false, permanent{fmt.Errorf("deleting ConfigMap %s, which no Usage names: %w", name, err)}
		}
		return s.count("crossplane", called) > before, fmt.Errorf("%d probes reached no webhook", probe)
	})
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.t.Logf("Crossplane's Usage webhook serves on 127.0.0.1:%d; the API server called it %s after the configuration was created",
		s.crossplaneWebhookPort, w)
}

// serveFunction serves a function on loopback with mTLS and registers it with
// Crossplane: a paused FunctionRevision, so that the package manager leaves it
// alone, whose status names the endpoint.
func (s *stack) serveFunction(ctx context.Context, name, bin string) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(s.t))
	args := []string{"--debug", "--address=" + addr, "--tls-certs-dir=" + s.pki.TLSDir}
	if name == "function-dependencies" {
		// As example/operation/install.yaml runs it: a sweep's request
		// carries every Object.
		args = append(args, "--max-recv-message-size=64")
	}
	s.start(name, bin, args)
	s.await(ctx, name, 30*time.Second, func(context.Context) (bool, error) { return listening(addr), nil })

	rev := s.create(ctx, gvrFunctionRevision, "", obj(map[string]any{
		"apiVersion": "pkg.crossplane.io/v1", "kind": "FunctionRevision",
		"metadata": map[string]any{
			"name":        name + "-local",
			"labels":      map[string]any{"pkg.crossplane.io/package": name},
			"annotations": map[string]any{"crossplane.io/paused": "true"},
		},
		"spec": map[string]any{"image": "local.invalid/" + name + ":test", "desiredState": "Active", "revision": int64(1)},
	}))
	// Crossplane's revision controller may update the revision in between:
	// read it again and retry on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := s.client.Resource(gvrFunctionRevision).Get(ctx, rev.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		must(s.t, unstructured.SetNestedField(latest.Object, addr, "status", "endpoint"))
		// Crossplane v1's FunctionRevision has no capabilities.
		if !s.releases.v1 {
			must(s.t, unstructured.SetNestedStringSlice(latest.Object, capabilities(name), "status", "capabilities"))
		}
		_, err = s.client.Resource(gvrFunctionRevision).UpdateStatus(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.t.Fatalf("ERROR: cannot set the endpoint of %s: %v", name, err)
	}
}

// capabilities are what a function's package declares, as the package
// manager would copy them to its revision's status: function-dependencies's
// package/crossplane.yaml declares operation too, which Crossplane checks
// before an Operation runs a function.
func capabilities(function string) []string {
	if function == "function-dependencies" {
		return []string{"composition", "operation"}
	}
	return []string{"composition"}
}

// create creates an object, retrying while its type is not served yet.
func (s *stack) create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, u *unstructured.Unstructured) *unstructured.Unstructured {
	s.t.Helper()
	var out *unstructured.Unstructured
	if err := s.poll(ctx, 60*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		out, err = s.client.Resource(gvr).Namespace(namespace).Create(ctx, u, metav1.CreateOptions{})
		if kerrors.IsNotFound(err) {
			return false, err
		}
		if err != nil {
			return false, permanent{err}
		}
		return true, nil
	}); err != nil {
		s.t.Fatalf("ERROR: cannot create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
	return out
}

// hold checks every interval for d that check passes, and returns its first
// failure.
func (s *stack) hold(ctx context.Context, d, interval time.Duration, check func(context.Context) error) error {
	begin := time.Now()
	end := begin.Add(d)
	for time.Now().Before(end) {
		if err := s.alive(); err != nil {
			return err
		}
		if err := check(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped %s into a check of %s, when its context ended first: %w", time.Since(begin).Round(time.Second), d, ctx.Err())
		case <-time.After(interval):
		}
	}
	return nil
}

// permanent is an error that ends a poll at once.
type permanent struct{ error }

func httpOK(url string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer rsp.Body.Close()
		_, _ = io.Copy(io.Discard, rsp.Body)
		return rsp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", url, rsp.Status)
	}
}

// readYAML reads every object of a YAML file.
func readYAML(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	defer f.Close()
	d := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := d.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("ERROR: cannot read %s: %v", file, err)
		}
		if len(m) > 0 {
			out = append(out, obj(m))
		}
	}
}

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal("ERROR:", err)
	}
}

// conditionTrue reports whether the object's condition of type typ is True.
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	c := condition(u, typ)
	return c != nil && c["status"] == "True"
}

func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

func describeCondition(u *unstructured.Unstructured, typ string) string {
	c := condition(u, typ)
	if c == nil {
		return typ + " absent"
	}
	return strings.TrimSpace(fmt.Sprintf("%s=%v %v: %v", typ, c["status"], c["reason"], c["message"]))
}
