//go:build controlplane

package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// startProviderNamespace gives provider-kubernetes a network namespace of
// its own, for the install scenario: provider-kubernetes v1.2.1 serves its
// webhook on :9443, which it can't be moved from, and Crossplane dials every
// function it installs on 9443 too, the port of the function's Service, so
// both can't listen in one namespace. A process of the test (sleep) holds
// the namespace, which has only a loopback interface; the test forwards the
// API server's port into it, and the provider's webhook and health ports
// out of it, so every address stays what it would be beside the others.
func (s *stack) startProviderNamespace(ctx context.Context) {
	holder := s.start("provider-netns", "unshare", []string{"--net", "sh", "-c", "ip link set lo up && exec sleep infinity"})
	s.await(ctx, "the provider's network namespace", 10*time.Second, func(context.Context) (bool, error) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", holder.cmd.Process.Pid))
		return err == nil && strings.HasPrefix(string(cmdline), "sleep"), err
	})
	s.providerNetNS = fmt.Sprintf("/proc/%d/ns/net", holder.cmd.Process.Pid)

	u, err := url.Parse(s.config.Host)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	s.forward(s.providerNetNS, u.Host, "", u.Host)
	webhook := fmt.Sprintf("127.0.0.1:%d", freePort(s.t))
	s.forward("", webhook, s.providerNetNS, fmt.Sprintf("127.0.0.1:%d", providerWebhookPort))
	s.providerWebhook = webhook
}

// forward accepts connections at listen in the network namespace from (a
// /proc/PID/ns/net path, or "" for the test's own) and joins each to a
// connection to dial in the namespace to, until the test ends.
func (s *stack) forward(from, listen, to, dial string) {
	s.serve(from, listen, func(c net.Conn) {
		var d net.Conn
		if err := inNetNS(to, func() (err error) { d, err = net.DialTimeout("tcp", dial, 10*time.Second); return err }); err != nil {
			return
		}
		join(c, d)
	})
}

// serve accepts connections at listen in the network namespace ns ("" for
// the test's own) until the test ends, and hands each to handle, which
// closes it on return.
func (s *stack) serve(ns, listen string, handle func(net.Conn)) {
	var l net.Listener
	if err := inNetNS(ns, func() (err error) { l, err = net.Listen("tcp", listen); return err }); err != nil {
		s.t.Fatalf("ERROR: cannot listen at %s in %s: %v", listen, orThisNamespace(ns), err)
	}
	s.t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}

// join copies each connection's bytes to the other until both are done,
// then closes d.
func join(c, d net.Conn) {
	defer d.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	}
	go pipe(d, c)
	go pipe(c, d)
	<-done
	<-done
}

func orThisNamespace(ns string) string {
	if ns == "" {
		return "the test's network namespace"
	}
	return ns
}

// inNetNS runs f on a thread in the network namespace ns ("" is the
// thread's own): the sockets f opens belong to that namespace for good.
func inNetNS(ns string, f func() error) error {
	if ns == "" {
		return f()
	}
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer self.Close()
	target, err := os.Open(ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := setns(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	ferr := f()
	if err := setns(self); err != nil {
		// The thread stays in the other namespace: locked, it ends with
		// this goroutine rather than serve another.
		return fmt.Errorf("cannot return from %s: %w", ns, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func setns(f *os.File) error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }

// inProviderNamespace returns how provider-kubernetes starts in its network
// namespace, when it has one, and forwards its health port out of it.
func (s *stack) inProviderNamespace(bin string, args []string, health int) (string, []string) {
	if s.providerNetNS == "" {
		return bin, args
	}
	addr := "127.0.0.1:" + strconv.Itoa(health)
	s.forward("", addr, s.providerNetNS, addr)
	return "nsenter", append([]string{"--net=" + s.providerNetNS, "--", bin}, args...)
}
