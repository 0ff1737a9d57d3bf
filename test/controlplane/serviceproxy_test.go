//go:build controlplane

package controlplane

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var gvrEndpointSlice = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}

// A serviceProxy stands in for the cluster's network between Crossplane
// and one Service's pods. Crossplane makes a function's Service headless:
// in a cluster its name resolves to each ready pod's address, and
// Crossplane's gRPC client (round_robin) connects to the pods it resolved.
// Here the name resolves to the proxy's one loopback address
// (coreMountNamespace), and the proxy passes each connection to one of the
// Service's ready endpoints, as kube-controller-manager's EndpointSlice
// controller lists them (the set cluster DNS answers with), in turn; an
// endpoint that refuses the connection is passed over for the next. The
// pods are on the host network of a node, so an endpoint's address is its
// node's, and the proxy dials it in that node's network namespace. What
// differs from a cluster: Crossplane holds one connection, not one per pod
// it resolved, so a killed replica costs it a reconnect where in a cluster
// it may already hold a connection to the other.
type serviceProxy struct {
	s                  *stack
	namespace, service string
	// netns is each node's network namespace, by the node's address.
	netns map[string]string

	mu   sync.Mutex
	next int
	// serving is the endpoint of the latest connection.
	serving string
}

// proxyService starts a serviceProxy at listen for the Service of namespace
// and name, whose endpoints run on nodes.
func (s *stack) proxyService(ctx context.Context, listen, namespace, name string, nodes ...*node) *serviceProxy {
	p := &serviceProxy{s: s, namespace: namespace, service: name, netns: map[string]string{}}
	for _, n := range nodes {
		p.netns[n.ip] = n.netns
	}
	s.serve("", listen, func(c net.Conn) { p.pass(ctx, c) })
	return p
}

// pass joins c to a connection to the first ready endpoint, in turn, that
// accepts one; if none does, c is closed.
func (p *serviceProxy) pass(ctx context.Context, c net.Conn) {
	endpoints, err := p.endpoints(ctx)
	if err != nil || len(endpoints) == 0 {
		return
	}
	p.mu.Lock()
	first := p.next % len(endpoints)
	p.next++
	p.mu.Unlock()
	for i := range endpoints {
		e := endpoints[(first+i)%len(endpoints)]
		host, _, _ := net.SplitHostPort(e)
		var d net.Conn
		if err := inNetNS(p.netns[host], func() (err error) { d, err = net.DialTimeout("tcp", e, 2*time.Second); return err }); err != nil {
			continue
		}
		p.mu.Lock()
		p.serving = host
		p.mu.Unlock()
		join(c, d)
		return
	}
}

// endpoints lists the Service's ready endpoints as address:port, sorted.
func (p *serviceProxy) endpoints(ctx context.Context) ([]string, error) {
	list, err := p.s.client.Resource(gvrEndpointSlice).Namespace(p.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "kubernetes.io/service-name=" + p.service,
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, es := range list.Items {
		ports, _, _ := unstructured.NestedSlice(es.Object, "ports")
		eps, _, _ := unstructured.NestedSlice(es.Object, "endpoints")
		for _, port := range ports {
			number, _, _ := unstructured.NestedInt64(port.(map[string]any), "port")
			for _, ep := range eps {
				ep := ep.(map[string]any)
				if ready, found, _ := unstructured.NestedBool(ep, "conditions", "ready"); found && !ready {
					continue
				}
				addrs, _, _ := unstructured.NestedStringSlice(ep, "addresses")
				for _, a := range addrs {
					out = append(out, net.JoinHostPort(a, strconv.FormatInt(number, 10)))
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// servingNode is the address of the node whose endpoint took the latest
// connection.
func (p *serviceProxy) servingNode() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.serving
}
