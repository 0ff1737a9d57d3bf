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

	function "github.com/crossplane/function-sdk-go"
	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	fnv1beta1 "github.com/crossplane/function-sdk-go/proto/v1beta1"
)

// serve serves the function as function-sdk-go's Serve does, and stops
// gracefully on SIGTERM or SIGINT: Kubernetes sends SIGTERM to a function pod
// it replaces, and calls in flight then finish instead of failing. The SDK's
// Serve handles no signal and doesn't expose its server, so this builds the
// server from the SDK's own options.
func serve(fn fnv1.FunctionRunnerServiceServer, metricsAddress string, o ...function.ServeOption) error {
	so := &function.ServeOptions{Network: function.DefaultNetwork, Address: function.DefaultAddress, MaxRecvMsgSize: function.DefaultMaxRecvMsgSize}
	for _, apply := range o {
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
	if metricsAddress != "" {
		opts = append(opts, grpc.ChainUnaryInterceptor(metrics.UnaryServerInterceptor()))
	}
	srv := grpc.NewServer(opts...)
	reflection.Register(srv)
	fnv1.RegisterFunctionRunnerServiceServer(srv, fn)
	fnv1beta1.RegisterFunctionRunnerServiceServer(srv, function.ServeBeta(fn))

	if metricsAddress != "" {
		registry := prometheus.NewRegistry()
		registry.MustRegister(metrics)
		metrics.InitializeMetrics(srv)
		metricsServer := &http.Server{Addr: metricsAddress, Handler: promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), ReadHeaderTimeout: 30 * time.Second}
		go func() { _ = metricsServer.ListenAndServe() }() // Metrics are best effort, as in the SDK.
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.GracefulStop() // Serve returns once the calls in flight have finished.
	}()
	return errors.Wrap(srv.Serve(lis), "cannot serve gRPC connections")
}
