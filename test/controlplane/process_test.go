//go:build controlplane

package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A process is one component of the control plane, running on this machine.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
	// bin, args and env are what started it, so that it can start again.
	bin  string
	args []string
	env  []string
	// killed is set when the test killed it on purpose: its exit is no
	// failure.
	killed atomic.Bool
}

// start runs bin with args, its output in the logs folder. The process stops
// when the test ends, whatever happens; if the test binary itself dies, the
// kernel kills the process (Pdeathsig).
func start(t *testing.T, logs, name, bin string, args []string, env ...string) *process {
	t.Helper()
	p := &process{name: name, log: filepath.Join(logs, name+".log"), done: make(chan struct{}), bin: bin, args: args, env: env}
	// Appended to: a component started again continues its log, which the
	// tests count lines of.
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("ERROR: cannot create the log of %s: %v", name, err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = f.Close()
		t.Fatalf("ERROR: cannot start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error("ERROR:", err)
		}
	})
	return p
}

// killedExit bounds how long a process killed with SIGKILL takes to be
// gone. The signal can't be caught; only a process stuck in the kernel (an
// uninterruptible sleep) outlives it, and waiting for one would hang the
// test.
const killedExit = 30 * time.Second

// stop ends the process: SIGTERM, then SIGKILL after ten seconds. It
// returns an error if the process is still there killedExit after that.
func (p *process) stop() error {
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		return p.awaitKilled()
	}
}

// kill kills the process as a crash would: SIGKILL to its process group. It
// returns an error if the process is still there killedExit later.
func (p *process) kill() error {
	p.killed.Store(true)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	return p.awaitKilled()
}

// awaitKilled waits, within killedExit, for the process just sent SIGKILL
// to exit.
func (p *process) awaitKilled() error {
	select {
	case <-p.done:
		return nil
	case <-time.After(killedExit):
		return fmt.Errorf("waited %s for %s (pid %d) to exit after SIGKILL: it is still there", killedExit, p.name, p.cmd.Process.Pid)
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// failure describes a process that exited, with the end of its log.
func (p *process) failure() error {
	return fmt.Errorf("%s exited (%v); the end of its log:\n%s", p.name, p.err, tail(p.log, 30))
}

// tail returns the last n lines of a file.
func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePort returns a loopback port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ERROR: cannot find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// requireFree waits up to three minutes for a port a component can't be
// moved from to be free (another test may hold it for a while), then fails
// the test.
func requireFree(t *testing.T, port int, who string) {
	t.Helper()
	var err error
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(time.Second) {
		var l net.Listener
		if l, err = net.Listen("tcp", fmt.Sprintf(":%d", port)); err == nil {
			_ = l.Close()
			return
		}
	}
	t.Fatalf("ERROR: %s needs port %d, which stayed taken for three minutes: %v", who, port, err)
}

// listening reports whether something accepts connections at addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// command is exec.Command bounded by d, and by the test's time
// (testContext): past either, the command and every process it started (its
// process group) are killed, and its Wait returns at most ten seconds later
// even if one of them still holds its output. Pass the command's error to
// the returned function once it has ended: it says so when the command ran
// out of time.
func command(t *testing.T, d time.Duration, name string, args ...string) (*exec.Cmd, func(error) error) {
	ctx, cancel := context.WithTimeout(testContext(t), d)
	begin := time.Now()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd, func(err error) error {
		defer cancel()
		switch {
		case err == nil || ctx.Err() == nil:
			return err
		case time.Since(begin) < d:
			return fmt.Errorf("killed when the test's time ran out, %s in: %w", time.Since(begin).Round(time.Second), err)
		}
		return fmt.Errorf("not done within %s, so killed: %w", d, err)
	}
}

// toolsBuild bounds hack/tools.sh: hack/controlplane-test.sh builds the
// tools before the test, which then only finds them; cold, in the test,
// they take about half an hour on two cores.
const toolsBuild = 45 * time.Minute

// tools builds (when missing) and returns the pinned tools.
func tools(t *testing.T, root string, names ...string) map[string]string {
	t.Helper()
	cmd, done := command(t, toolsBuild, "bash", append([]string{filepath.Join(root, "hack", "tools.sh")}, names...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err = done(err); err != nil {
		t.Fatalf("ERROR: cannot build tools %v: %v\n%s", names, err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Log(s)
	}
	paths := strings.Fields(string(out))
	if len(paths) != len(names) {
		t.Fatalf("ERROR: hack/tools.sh printed %d paths for %d tools: %q", len(paths), len(names), out)
	}
	bins := map[string]string{}
	for i, n := range names {
		bins[n] = paths[i]
	}
	return bins
}

// goBuild bounds a go build the test runs; hack/controlplane-test.sh
// builds beforehand, so that the test's own builds find the build cache
// warm.
const goBuild = 15 * time.Minute

// buildFunction builds function-dependencies from the working tree.
func buildFunction(t *testing.T, root, out string) string {
	t.Helper()
	bin := filepath.Join(out, "function-dependencies")
	cmd, done := command(t, goBuild, "go", "build", "-o", bin, ".")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	if err = done(err); err != nil {
		t.Fatalf("ERROR: cannot build the function: %v\n%s", err, b)
	}
	return bin
}
