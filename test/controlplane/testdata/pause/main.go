// Command pause is the pod sandbox image of the install scenario's node
// (test/controlplane): the kubelet's default, registry.k8s.io/pause, can't be
// pulled here, and a sandbox needs only a process that holds the pod's
// namespaces until it is told to stop.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	// As PID 1 of its namespace, a signal without a handler is ignored.
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
