package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	grpcprometheus "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	function "github.com/crossplane/function-sdk-go"
	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	fnv1beta1 "github.com/crossplane/function-sdk-go/proto/v1beta1"
)

// serveOptions are what serve adds to the SDK's options.
type serveOptions struct {
	// metricsAddress is where Prometheus metrics are served; "" serves none.
	metricsAddress string
	// gracePeriod is how long calls in flight may finish after SIGTERM.
	gracePeriod time.Duration
	// calls is how many calls run at once; the others wait their turn.
	calls int
}

// serve serves the function as function-sdk-go's Serve does, at most
// o.calls calls at once, and stops gracefully on SIGTERM or SIGINT:
// Kubernetes sends SIGTERM to a function pod it replaces, and calls in flight
// then finish instead of failing, for up to the grace period; those still
// running after it are cancelled, so that the pod exits before Kubernetes
// kills it. The SDK's Serve handles no signal and doesn't expose its server,
// so this builds the server from the SDK's own options.
func serve(fn fnv1.FunctionRunnerServiceServer, o serveOptions, sdk ...function.ServeOption) error {
	so := &function.ServeOptions{Network: function.DefaultNetwork, Address: function.DefaultAddress, MaxRecvMsgSize: function.DefaultMaxRecvMsgSize}
	for _, apply := range sdk {
		if err := apply(so); err != nil {
			return errors.Wrap(err, "cannot apply ServeOption")
		}
	}
	if so.Credentials == nil {
		return errors.New("no credentials provided - did you specify the Insecure or MTLSCertificates options?")
	}
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), so.Network, so.Address)
	if err != nil {
		return errors.Wrapf(err, "cannot listen for %s connections at address %q", so.Network, so.Address)
	}

	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(so.MaxRecvMsgSize), grpc.Creds(so.Credentials)}
	metrics := grpcprometheus.NewServerMetrics()
	interceptors := []grpc.UnaryServerInterceptor{}
	if o.metricsAddress != "" {
		interceptors = append(interceptors, metrics.UnaryServerInterceptor())
	}
	// After the metrics, so that a call's time counts its wait.
	opts = append(opts, grpc.ChainUnaryInterceptor(append(interceptors, atMost(o.calls))...))
	srv := grpc.NewServer(opts...)
	reflection.Register(srv)
	fnv1.RegisterFunctionRunnerServiceServer(srv, fn)
	fnv1beta1.RegisterFunctionRunnerServiceServer(srv, function.ServeBeta(fn))

	if o.metricsAddress != "" {
		registry := prometheus.NewRegistry()
		registry.MustRegister(metrics)
		metrics.InitializeMetrics(srv)
		metricsServer := &http.Server{Addr: o.metricsAddress, Handler: promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), ReadHeaderTimeout: 30 * time.Second}
		go func() { _ = metricsServer.ListenAndServe() }() // Metrics are best effort, as in the SDK.
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		drained := make(chan struct{})
		go func() {
			srv.GracefulStop() // Serve returns once the calls in flight have finished.
			close(drained)
		}()
		select {
		case <-drained:
		case <-time.After(o.gracePeriod):
			srv.Stop() // Cancels the calls still in flight, which then stop.
		}
	}()
	return errors.Wrap(srv.Serve(lis), "cannot serve gRPC connections")
}

// atMost returns an interceptor that runs at most n calls at once: the
// others wait, in no promised order, until one ends or their caller gives
// up. Each call holds its request, its decoded composed resources and its
// response at once; without a bound, a burst of large calls takes more
// memory than the pod has, and all of them fail together.
func atMost(n int) grpc.UnaryServerInterceptor {
	slots := make(chan struct{}, max(n, 1))
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		defer func() { <-slots }()
		return handler(ctx, req)
	}
}
