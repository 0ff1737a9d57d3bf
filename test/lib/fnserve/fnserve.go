// Package fnserve serves the function as Crossplane runs it: its binary, built
// from the working tree, listening for gRPC on a loopback port. Tests that
// drive the whole function reach it through this, the entry point Crossplane
// uses, so that they prove what Crossplane gets: the flags, the server's
// options, the wire encoding of every request and answer.
//
// Unlike test/lib/harness, it has no build tag: go test ./... runs the tests that
// use it.
package fnserve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// MaxMessage is the largest message the function receives: the default of
// its --max-recv-message-size, 4 MB. Calls send at most that and accept
// answers as large, so that a request the function would refuse fails here
// as it would in Crossplane.
const MaxMessage = 4 << 20

// dataRace is what the race detector writes when it finds a race.
const dataRace = "WARNING: DATA RACE"

// binaryEnv names, in the environment of a test process that built the
// binary, the binary's path, which the processes it starts inherit: go test
// -fuzz's workers run the same tests, and a build in each would take the
// seconds a short fuzzing run has.
const binaryEnv = "FNSERVE_FUNCTION_BINARY"

// A Server is the function's binary, serving on a loopback port.
type Server struct {
	// Client calls the function over gRPC, with message limits of MaxMessage.
	Client fnv1.FunctionRunnerServiceClient

	dir    string
	cmd    *exec.Cmd
	out    output
	exited chan struct{}
	err    error
	close  func()
}

// output collects what the binary writes to standard output and error.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Start builds the function's binary into a temporary folder, with the race
// detector when the test binary has it, unless the process that started
// this one did; starts it on a free loopback port and returns it once it
// accepts connections. Stop ends it.
func Start() (*Server, error) {
	s := &Server{exited: make(chan struct{})}
	binary := os.Getenv(binaryEnv)
	if binary == "" {
		var err error
		if binary, err = s.build(); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	if err := s.start(binary); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// build builds the binary into a temporary folder, which Stop removes.
func (s *Server) build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if s.dir, err = os.MkdirTemp("", "fnserve-"); err != nil {
		return "", err
	}
	binary := filepath.Join(s.dir, "function-dependencies")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build the function: %w\n%s", err, out)
	}
	return binary, os.Setenv(binaryEnv, binary)
}

func (s *Server) start(binary string) error {
	address, err := FreeAddress()
	if err != nil {
		return err
	}
	// No metrics server: its default port, :8080, is one that test packages
	// running at the same time would fight over.
	s.cmd = exec.Command(binary, "--insecure", "--address="+address, "--metrics-address=")
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("cannot start the function: %w", err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	exited := func() error {
		select {
		case <-s.exited:
			return fmt.Errorf("the function exited: %w\n%s", s.err, s.out.String())
		default:
			return nil
		}
	}
	s.Client, s.close, err = Dial(address, exited)
	return err
}

// Dial returns a client of the function that serves at the address, with
// message limits of MaxMessage, and a func that closes its connection, once
// something accepts TCP connections there. It returns an error when exited
// does, which says the server stopped before it listened, or after 30
// seconds.
func Dial(address string, exited func() error) (fnv1.FunctionRunnerServiceClient, func(), error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := exited(); err != nil {
			return nil, nil, fmt.Errorf("no function listens on %s: %w", address, err)
		}
		if c, err := (&net.Dialer{Timeout: time.Second}).DialContext(context.Background(), "tcp", address); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("the function did not listen on %s within 30s", address)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient(address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(MaxMessage), grpc.MaxCallRecvMsgSize(MaxMessage)))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot dial the function at %s: %w", address, err)
	}
	return fnv1.NewFunctionRunnerServiceClient(conn), func() { _ = conn.Close() }, nil
}

// Output is what the binary wrote so far.
func (s *Server) Output() string { return s.out.String() }

// Stop kills the binary and removes it. It returns an error when the binary
// exited before it was stopped, which no call should make it do, or when the
// race detector found a race in it: either is a failure of the tests that
// called it.
func (s *Server) Stop() error {
	var errs []error
	if s.close != nil {
		s.close()
	}
	if s.cmd != nil {
		select {
		case <-s.exited:
			errs = append(errs, fmt.Errorf("the function exited while the tests ran: %w\n%s", s.err, s.out.String()))
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if out := s.out.String(); strings.Contains(out, dataRace) {
			errs = append(errs, fmt.Errorf("the race detector found a race in the function:\n%s", out))
		}
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// moduleRoot is the folder of the function's go.mod: the package the binary
// is built from. go test runs a test binary in its package's folder, below it.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("cannot find the module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("cannot find the module: go env GOMOD names no go.mod")
	}
	return filepath.Dir(gomod), nil
}

// FreeAddress is a loopback address with a port nobody listens on.
func FreeAddress() (string, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cannot find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
