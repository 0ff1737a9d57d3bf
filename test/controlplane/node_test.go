//go:build controlplane

package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var gvrNode = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// The nodes of the install scenario. The kubelet refuses a loopback node
// IP, so each node's is a TEST-NET-1 address (RFC 5737, never routed) on
// the loopback interface of the node's own network namespace, which goes
// with the namespace.
const (
	// pauseImage is the pod sandbox image, built here and imported into
	// containerd: registry.k8s.io can't be reached.
	pauseImage = "localhost/function-dependencies-pause:test"
	// criNamespace is the containerd namespace of the CRI plugin.
	criNamespace = "k8s.io"
)

// nodeIPs are the address of each node, by name.
var nodeIPs = map[string]string{"fd-node-a": "192.0.2.1", "fd-node-b": "192.0.2.2"}

// kernelDefaults are the kernel settings a kubelet insists on (its
// setupKernelTunables), machine-wide ones that it would otherwise change.
// In the node's mount namespace a file holding each value is bound over
// its /proc/sys file, and the kubelet runs with protectKernelDefaults: it
// reads the values it wants and changes nothing; were a bind missing, it
// would stop rather than change the machine.
var kernelDefaults = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// A node is containerd and a kubelet on this machine, in a mount and a
// network namespace of their own: containerd (Debian's package, with runc)
// runs the kubelet's pods, on the node's network only, from images it pulls
// from the registry on loopback over plain HTTP. Each node has a network of
// its own, as nodes do, so that two pods on the host network can both serve
// the function's port; the test forwards the API server's and the
// registry's ports into it, and reaches its pods through serviceProxy.
type node struct {
	s        *stack
	name, ip string
	dir      string
	socket   string
	// cgroupRoot is the kubelet's cgroup root, of this run alone
	// (nodeCgroupRoot).
	cgroupRoot string
	containerd *process
	// netns is the node's network namespace, /proc/PID/ns/net.
	netns string
}

// ownNetworkNamespace reports whether the test runs in a network namespace
// that has no interface but loopback, as hack/controlplane-test.sh makes
// one: nothing there can reach another machine.
func ownNetworkNamespace() bool {
	ifaces, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}

// buildPause builds the pod sandbox's image, for every node to import.
func (s *stack) buildPause(imagebuilder string) string {
	pause := filepath.Join(s.dir, "pause")
	// Under testdata, so that go test ./... streams the test's output
	// rather than wait for a second package.
	build, done := command(s.t, goBuild, "go", "build", "-trimpath", "-o", pause, "./testdata/pause")
	build.Dir = filepath.Join(s.root, "test", "controlplane")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	if err = done(err); err != nil {
		s.t.Fatalf("ERROR: cannot build the pause binary: %v\n%s", err, out)
	}
	image, done := command(s.t, 2*time.Minute, imagebuilder, "-binary", pause, "-out", pause+".tar", "-tag", pauseImage)
	out, err = image.CombinedOutput()
	if err = done(err); err != nil {
		s.t.Fatalf("ERROR: cannot build the pause image: %v\n%s", err, out)
	}
	return pause + ".tar"
}

// startNode starts a node's containerd and kubelet, and returns once the
// node is registered. It stops them when the test ends and leaves nothing
// behind: the pods' containers are removed, the mounts and network settings
// go with the node's namespaces, and the cgroups the kubelet made are
// removed, under the node's own cgroup root (/<name>-<the test's process
// id>, nodeCgroupRoot): two kubelets under one would each remove the other's
// pods' cgroups as orphans, whether of this run or of another beside it.
func (s *stack) startNode(ctx context.Context, kubelet, pauseTar, name string) *node {
	t := s.t
	for _, cmd := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "unshare", "nsenter", "ip", "mount"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Fatalf("ERROR: the node needs %s: %v (hack/controlplane-test.sh installs Debian's containerd and runc)", cmd, err)
		}
	}
	n := &node{s: s, name: name, ip: nodeIPs[name], dir: filepath.Join(s.dir, name), cgroupRoot: nodeCgroupRoot(name)}
	if left := cgroupsUnder(n.cgroupRoot); len(left) > 0 {
		t.Fatalf("ERROR: node %s's cgroups exist already, left by an earlier run of process %d: %s", name, os.Getpid(), strings.Join(left, ", "))
	}
	// Other runs' roots are theirs to remove: a run beside this one uses
	// its own, and an earlier run's leftovers are only reported.
	for _, other := range otherNodeCgroupRoots(name, n.cgroupRoot) {
		t.Logf("node cgroups not of this run, left alone: %s", other)
	}
	// Removed last, once containerd and every process of the node stopped.
	t.Cleanup(func() {
		if err := removeCgroups(n.cgroupRoot); err != nil {
			t.Errorf("ERROR: left behind: %v", err)
		}
	})
	must(t, makeCgroupRoot(n.cgroupRoot))

	n.socket = filepath.Join(n.dir, "containerd.sock")
	for _, d := range []string{"containerd", "state", "cni/bin", "cni/conf", "certs.d", "kubelet", "pod-logs", "sysctl"} {
		must(t, os.MkdirAll(filepath.Join(n.dir, d), 0o755))
	}
	// Every pod here is on the host network, so no CNI plugin ever runs;
	// but until a network configuration is loaded, containerd reports the
	// network not ready, the node stays NotReady and keeps the not-ready
	// taint the API server gives a new node. This one names only the
	// loopback plugin.
	must(t, os.WriteFile(filepath.Join(n.dir, "cni/conf", "10-loopback.conflist"),
		[]byte(`{"cniVersion": "0.4.0", "name": "loopback-only", "plugins": [{"type": "loopback"}]}`+"\n"), 0o644))

	// Pulls from the registry on loopback are plain HTTP: containerd's
	// hosts.toml for it.
	hosts := filepath.Join(n.dir, "certs.d", s.registry)
	must(t, os.MkdirAll(hosts, 0o755))
	must(t, os.WriteFile(filepath.Join(hosts, "hosts.toml"), fmt.Appendf(nil, `server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, s.registry), 0o644))

	// Every path containerd writes is the test's; restrict_oom_score_adj
	// because this machine doesn't let a process lower its oom_score_adj
	// (without it every sandbox fails); no CNI: pods use the host network.
	must(t, os.WriteFile(filepath.Join(n.dir, "containerd.toml"), fmt.Appendf(nil, `version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[8]q
`, filepath.Join(n.dir, "containerd"), filepath.Join(n.dir, "state"), n.socket, filepath.Join(n.dir, "opt"),
		pauseImage, filepath.Join(n.dir, "cni/bin"), filepath.Join(n.dir, "cni/conf"), filepath.Join(n.dir, "certs.d")), 0o644))

	// The node's namespaces: a network with only a loopback interface,
	// which holds the node's address; a /run of its own (containerd's
	// shims put their sockets under /run/containerd whatever the
	// configuration says); a /var/log and a /var/lib of its own, folders
	// of the node's, since the kubelet writes to fixed paths there that no
	// flag moves (the symbolic links of /var/log/containers, and its
	// device plugins' socket /var/lib/kubelet/device-plugins/kubelet.sock,
	// which another kubelet, of this run or another, would take over);
	// and the kernel settings the kubelet reads.
	script := []string{"set -e", "ip link set lo up", fmt.Sprintf("ip addr add %s/32 dev lo", n.ip),
		"mount -t tmpfs -o mode=0755 " + name + "-run /run"}
	for _, d := range []string{"/var/log", "/var/lib"} {
		own := filepath.Join(n.dir, "root", d)
		must(t, os.MkdirAll(own, 0o755))
		script = append(script, fmt.Sprintf("mount --bind %q %s", own, d))
	}
	for _, key := range slices.Sorted(maps.Keys(kernelDefaults)) {
		f := filepath.Join(n.dir, "sysctl", strings.ReplaceAll(key, "/", "."))
		must(t, os.WriteFile(f, []byte(kernelDefaults[key]+"\n"), 0o444))
		script = append(script, fmt.Sprintf("mount --bind -o ro %q /proc/sys/%s", f, key))
	}
	script = append(script, `exec "$@"`)

	n.containerd = s.start(name+"-containerd", "unshare", []string{"--mount", "--net", "--propagation", "private",
		"sh", "-c", strings.Join(script, "\n"), "sh", "containerd", "--config", filepath.Join(n.dir, "containerd.toml")})
	s.await(ctx, name+"'s containerd", 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := n.ctr(ctx, "version")
		return err == nil, err
	})
	n.netns = fmt.Sprintf("/proc/%d/ns/net", n.containerd.cmd.Process.Pid)
	// Stopped after the kubelet (cleanups run last first): the kubelet would
	// start the pods again.
	t.Cleanup(n.removeContainers)
	u, err := url.Parse(s.config.Host)
	if err != nil {
		t.Fatal("ERROR:", err)
	}
	s.forward(n.netns, u.Host, "", u.Host)
	s.forward(n.netns, s.registry, "", s.registry)

	if out, err := n.ctr(ctx, "-n", criNamespace, "images", "import", pauseTar); err != nil {
		t.Fatalf("ERROR: cannot import the pause image: %v\n%s", err, out)
	}

	healthz := freePort(t)
	s.forward("", fmt.Sprintf("127.0.0.1:%d", healthz), n.netns, fmt.Sprintf("127.0.0.1:%d", healthz))
	must(t, os.WriteFile(filepath.Join(n.dir, "resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(n.dir, "kubelet.yaml"), fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /%[9]s
volumePluginDir: %[10]s
failSwapOn: false
containerRuntimeEndpoint: unix://%[1]s
address: 127.0.0.1
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
tlsCertFile: %[4]s
tlsPrivateKeyFile: %[5]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[6]s}
authorization: {mode: AlwaysAllow}
protectKernelDefaults: true
podLogsDir: %[7]s
resolvConf: %[8]s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
nodeStatusUpdateFrequency: 5s
`, n.socket, freePort(t), healthz, filepath.Join(s.pki.TLSDir, "tls.crt"), filepath.Join(s.pki.TLSDir, "tls.key"),
		s.pki.CAFile, filepath.Join(n.dir, "pod-logs"), filepath.Join(n.dir, "resolv.conf"), n.cgroupRoot, filepath.Join(n.dir, "volume-plugins")), 0o644))
	s.start(name+"-kubelet", "nsenter", []string{"--target", strconv.Itoa(n.containerd.cmd.Process.Pid), "--mount", "--net", "--",
		kubelet,
		"--config=" + filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig=" + s.kubeconfig,
		"--root-dir=" + filepath.Join(n.dir, "kubelet"),
		"--hostname-override=" + name,
		"--node-ip=" + n.ip,
		"--v=1",
	})
	s.await(ctx, name+"'s kubelet", 90*time.Second, s.readyWhen(name+"-kubelet", func(ctx context.Context) (bool, error) {
		if ok, err := httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))(ctx); !ok {
			return false, err
		}
		_, err := s.client.Resource(gvrNode).Get(ctx, name, metav1.GetOptions{})
		return err == nil, err
	}))
	return n
}

// startScheduler starts kube-scheduler, which places the pods on the nodes.
func (s *stack) startScheduler(scheduler string) {
	s.start("kube-scheduler", scheduler, []string{
		"--kubeconfig=" + s.kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	})
}

// ctr runs containerd's own client against the node's containerd, within
// ctrWithin.
func (n *node) ctr(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ctrWithin)
	defer cancel()
	begin := time.Now()
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.socket}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("ctr %s: not done, so killed, after %s: %w", strings.Join(args, " "), time.Since(begin).Round(time.Second), err)
	}
	return out.Bytes(), err
}

// ctrWithin bounds one call of ctr.
const ctrWithin = 2 * time.Minute

// removeContainers kills and removes every container of the node's
// containerd, sandboxes included, so that no shim outlives the test.
func (n *node) removeContainers() {
	ctx := context.Background()
	if n.containerd.exited() {
		return
	}
	ids := func(what string) []string {
		out, err := n.ctr(ctx, "-n", criNamespace, what, "ls", "-q")
		if err != nil {
			n.s.t.Errorf("ERROR: cannot list the node's %s: %v: %s", what, err, out)
			return nil
		}
		return strings.Fields(string(out))
	}
	// Killing a pod's sandbox ends the shim its containers share, so a
	// later delete may find its task gone already: what counts is that
	// none is left.
	for _, id := range ids("tasks") {
		_, _ = n.ctr(ctx, "-n", criNamespace, "tasks", "kill", "--signal", "SIGKILL", id)
		_, _ = n.ctr(ctx, "-n", criNamespace, "tasks", "delete", "--force", id)
	}
	if left := ids("tasks"); len(left) > 0 {
		n.s.t.Errorf("ERROR: left behind running containers: %s", strings.Join(left, ", "))
	}
	if c := ids("containers"); len(c) > 0 {
		if out, err := n.ctr(ctx, append([]string{"-n", criNamespace, "containers", "delete"}, c...)...); err != nil {
			n.s.t.Errorf("ERROR: cannot remove the node's containers: %v: %s", err, out)
		}
	}
	if left := ids("containers"); len(left) > 0 {
		n.s.t.Errorf("ERROR: left behind containers: %s", strings.Join(left, ", "))
	}
}

// cgroupHierarchies are this machine's cgroup hierarchies (v1, the
// cgroupfs driver's, and the unified one beside them where runc also makes
// a pod's cgroups), every one the kubelet and runc may write to.
func cgroupHierarchies() []string {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*")
	return slices.DeleteFunc(dirs, func(d string) bool {
		fi, err := os.Lstat(d)
		return err != nil || !fi.IsDir()
	})
}

// nodeCgroupRoot is the cgroup root of this run's node name: the name and
// the test's process id, which no other running test has (cgroups are the
// machine's, and hack/controlplane-test.sh runs each test in a process of
// its own, in no process namespace of its own). A root of that name that
// exists already was left by an earlier run of the same id.
func nodeCgroupRoot(name string) string {
	return fmt.Sprintf("%s-%d", name, os.Getpid())
}

// otherNodeCgroupRoots lists the cgroup roots of node name that are not
// this run's (own), each with whose it is: another run's, whose process
// still runs; an earlier run's, whose process is gone; or one named without
// a process id, an earlier version's of this test.
func otherNodeCgroupRoots(name, own string) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range cgroupHierarchies() {
		dirs, _ := filepath.Glob(filepath.Join(h, name+"*"))
		for _, d := range dirs {
			root := filepath.Base(d)
			suffix, ok := strings.CutPrefix(root, name)
			if root == own || seen[root] || !ok || (suffix != "" && !strings.HasPrefix(suffix, "-")) {
				continue
			}
			seen[root] = true
			whose := "named without a process id, an earlier version's of this test (running or left)"
			if pid, err := strconv.Atoi(strings.TrimPrefix(suffix, "-")); err == nil {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
					whose = fmt.Sprintf("the run of process %d, which still runs", pid)
				} else {
					whose = fmt.Sprintf("left by the run of process %d, which no longer runs", pid)
				}
			}
			out = append(out, fmt.Sprintf("/%s (%s)", root, whose))
		}
	}
	return out
}

// cgroupsUnder lists a node's cgroup root in every hierarchy where it
// exists.
func cgroupsUnder(root string) []string {
	var out []string
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, root)); err == nil {
			out = append(out, filepath.Join(h, root))
		}
	}
	return out
}

// makeCgroupRoot makes a node's cgroup root in every hierarchy, as the
// kubelet wants its cgroupRoot to exist; a new cpuset cgroup has no CPU
// and no memory node until given its parent's.
func makeCgroupRoot(root string) error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, root)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(h, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeCgroups removes a node's cgroups, deepest first: a cgroup goes only
// once it has no children and no process.
func removeCgroups(root string) error {
	var errs []error
	for _, top := range cgroupsUnder(root) {
		var dirs []string
		_ = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, d := range dirs {
			var err error
			// A cgroup whose last process just exited can be busy for a
			// moment.
			for i := 0; i < 50; i++ {
				if err = os.Remove(d); err == nil || errors.Is(err, fs.ErrNotExist) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// startRegistry serves an OCI registry on loopback (crane registry serve),
// its blobs in the test's folder, and names it 127.0.0.1:PORT: a name
// Crossplane's package manager and the crossplane CLI talk plain HTTP to
// (go-containerregistry's name.Registry.Scheme), and one a Function's
// spec.package accepts (its validation wants a dot in the registry's name,
// so not localhost:PORT).
func (s *stack) startRegistry(ctx context.Context, crane string) {
	port := freePort(s.t)
	must(s.t, os.MkdirAll(filepath.Join(s.dir, "registry"), 0o755))
	s.start("registry", crane, []string{"registry", "serve", "--address", fmt.Sprintf("127.0.0.1:%d", port), "--disk", filepath.Join(s.dir, "registry")})
	s.await(ctx, "the registry", 30*time.Second, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/v2/", port), nil)
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = rsp.Body.Close()
		return rsp.StatusCode == http.StatusOK, fmt.Errorf("/v2/: %s", rsp.Status)
	})
	s.registry = fmt.Sprintf("127.0.0.1:%d", port)
}
