//go:build e2e

// Package harness builds and runs the real binaries the end-to-end tests use:
// the pinned tools from hack/tools.sh and the function itself, served on
// loopback ports and stopped when the test ends.
package harness

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Root is the repository's root folder.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find the harness's source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Tool returns the path of a pinned tool, building it first if the cache
// lacks it (hack/tools.sh prints the paths).
func Tool(t testing.TB, name string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(Root(t), "hack", "tools.sh"), name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cannot build tool %q: %v\n%s", name, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Function returns the path of the function's binary, built once per test
// process from the working tree into the repository's git-ignored
// .cache/test, where it stays between runs: go build rewrites it only when
// the function changed.
//
// go test runs the test packages in parallel, and each builds the binary:
// under a lock file, so that one build writes it while the others wait and
// then find it current, and no package starts the binary while another is
// writing it.
func Function(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root := Root(t)
		dir := filepath.Join(root, ".cache", "test")
		if err := os.MkdirAll(dir, 0o750); err != nil {
			buildErr = err
			return
		}
		lock, err := os.OpenFile(filepath.Join(dir, "function-dependencies.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			buildErr = err
			return
		}
		defer lock.Close() // Closing the file releases the lock.
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "function-dependencies")
		cmd := exec.Command("go", "build", "-o", buildPath, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("cannot build the function: %v", buildErr)
	}
	return buildPath
}

// FreeAddress returns a loopback address with a port nobody listens on.
func FreeAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Serve starts a function binary with --insecure on a free loopback address
// and returns the address once it accepts connections. The process is stopped
// when the test ends; its output is logged if the test fails.
func Serve(t testing.TB, binary string, args ...string) string {
	t.Helper()
	address := FreeAddress(t)
	cmd := exec.Command(binary, append([]string{"--insecure", "--address=" + address}, args...)...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", binary, err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(binary), output.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("%s exited before serving: %v\n%s", binary, exitErr, output.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", address, time.Second); err == nil {
			_ = c.Close()
			return address
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on %s within 30s", binary, address)
	return ""
}
