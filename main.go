// Package main implements function-dependencies, a Crossplane function that
// orders the deletion of composed resources by their dependencies.
//
// As a step of a Composition's pipeline it builds the graph of the composed
// resources' dependencies (provider-kubernetes Objects' spec.references, the
// input's dependencies and, when asked, the ones it infers), declares each
// live dependent Object's reference finalizer on what it references, writes
// Crossplane Usages where no finalizer can protect an edge, holds resources
// back until their dependencies allow, and reports it all in the composite's
// DeletionOrdered condition. As an Operation it repairs the reference
// finalizers of the cluster's Objects, and wakes those a teardown waits for.
//
// The graph command draws the same graph from a render or a live cluster,
// and lists what is missing.
package main

import (
	"runtime/debug"
	"time"

	"github.com/alecthomas/kong"

	function "github.com/crossplane/function-sdk-go"

	"github.com/crossplane-contrib/function-dependencies/internal/graphcmd"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

// version is the release this binary was built as: hack/xpkg.sh stamps it
// (-X main.version=...) from FD_XPKG_VERSION, so that each release's image,
// and so its package's digest, is its own.
var version = "dev"

// Version is what this binary reports, with --version and in its first log
// line: the version hack/xpkg.sh stamped, else the module version `go
// install ...@vX.Y.Z` records, else "dev".
func Version() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(version, info, ok)
}

func versionOf(stamped string, info *debug.BuildInfo, ok bool) string {
	if stamped != "dev" {
		return stamped
	}
	if ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// CLI of this Function.
type CLI struct {
	Version kong.VersionFlag `help:"Print the version and exit."`

	Serve ServeCmd         `cmd:"" default:"withargs" help:"Serve the function over gRPC (the default)."`
	Graph graphcmd.Command `cmd:"" help:"Draw the dependency graph of resources read from YAML, and list missing reference finalizers: exits 1 when one is missing."`
}

// ServeCmd serves the function.
type ServeCmd struct {
	Debug bool `help:"Emit debug logs in addition to info logs." short:"d"`

	Network            string `default:"tcp"   help:"Network on which to listen for gRPC connections."`
	Address            string `default:":9443" help:"Address at which to listen for gRPC connections."`
	TLSCertsDir        string `env:"TLS_SERVER_CERTS_DIR" help:"Directory containing server certs (tls.key, tls.crt) and the CA used to verify client certificates (ca.crt)."`
	Insecure           bool   `help:"Run without mTLS credentials. If you supply this flag --tls-certs-dir will be ignored."`
	MaxRecvMessageSize int    `default:"4" help:"Maximum size of received messages in MB."`
	MetricsAddress     string `default:":8080" help:"Address at which to serve Prometheus metrics; empty serves none."`

	MaxResponseSize    int           `default:"4" help:"Largest response in MB that the function sends: Crossplane reads 4. Raise it only for a Crossplane that reads more."`
	GracePeriod        time.Duration `default:"20s" help:"How long calls in flight may finish after SIGTERM before they are cancelled: keep it under the pod's terminationGracePeriodSeconds (30s by default)."`
	MaxConcurrentCalls int           `default:"0" help:"Calls served at once; the others wait their turn. 0 sizes it for the container's memory limit: one call per 8 times --max-recv-message-size, at least one; 16 without a limit."`
}

// Run this Function.
func (c *ServeCmd) Run() error {
	log, err := function.NewLogger(c.Debug)
	if err != nil {
		return err
	}
	maxRecv := c.MaxRecvMessageSize * 1024 * 1024
	calls := concurrentCalls(c.MaxConcurrentCalls, maxRecv, memoryLimit)
	log.Info("Serving function-dependencies", "version", Version(), "address", c.Address, "concurrent-calls", calls)
	fn := newFunction(log).WithLimits(protocol.Limits{ResponseBytes: c.MaxResponseSize * 1024 * 1024})
	return serve(fn, serveOptions{metricsAddress: c.MetricsAddress, gracePeriod: c.GracePeriod, calls: calls},
		function.Listen(c.Network, c.Address),
		function.MTLSCertificates(c.TLSCertsDir),
		function.Insecure(c.Insecure),
		function.MaxRecvMessageSize(maxRecv))
}

func main() {
	ctx := kong.Parse(&CLI{}, cliOptions()...)
	ctx.FatalIfErrorf(ctx.Run())
}

// cliOptions are the command line's options, the same in main and its tests.
func cliOptions() []kong.Option {
	return []kong.Option{
		kong.Description("A Crossplane function that orders the deletion of composed resources by their dependencies: reference finalizers for provider-kubernetes Objects, Usages for the rest, in a Composition or as an Operation."),
		kong.Vars{"version": Version()},
	}
}
