//go:build e2e

package harness

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A Process is a running binary whose output the test can read.
type Process struct {
	Cmd *exec.Cmd

	mu     sync.Mutex
	output bytes.Buffer
	exited chan struct{}
	err    error
}

// Write collects the process's standard output and error.
func (p *Process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.Write(b)
}

// Output is what the process wrote to standard output and error so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process exited; valid once Exited is closed.
func (p *Process) Err() error { return p.err }

// StartProcess starts a binary with the arguments and, besides the test's
// own, the environment variables env ("NAME=value"). It is killed when the
// test ends, and its output logged if the test failed.
func StartProcess(t testing.TB, binary string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{Cmd: exec.Command(binary, args...), exited: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p, p
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", binary, err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("output of %s %v:\n%s", filepath.Base(binary), args, p.Output())
		}
	})
	return p
}

// WaitListening returns once the process accepts TCP connections at the
// address, or fails the test when it exits first or takes over 30 seconds.
func (p *Process) WaitListening(t testing.TB, address string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			t.Fatalf("%s exited before listening on %s: %v\n%s", p.Cmd.Path, address, p.err, p.Output())
		default:
		}
		if c, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", address); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on %s within 30s\n%s", p.Cmd.Path, address, p.Output())
}

// ServeFunction starts the function's binary on a free loopback address,
// without its metrics server (whose default port, :8080, tests that run at
// the same time would fight over), with the arguments and extra environment,
// and returns it and the address once it listens.
func ServeFunction(t testing.TB, env []string, args ...string) (*Process, string) {
	t.Helper()
	address := FreeAddress(t)
	p := StartProcess(t, Function(t), env, append([]string{"--address=" + address, "--metrics-address="}, args...)...)
	p.WaitListening(t, address)
	return p, address
}
