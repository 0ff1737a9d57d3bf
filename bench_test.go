package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	function "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"
)

// The benchmarks measure RunFunction against the floor: a pass-through
// function that does only what every function editing composed resources must
// do. hack/bench.sh runs them with -count and prints the table of the README.
//
//	BenchmarkInProcess  RunFunction and the floor called directly, N = 10 to 10,000
//	BenchmarkGraph      the work between decoding and encoding alone
//	BenchmarkServed     (e2e tag) this function, the floor, echo (the request's
//	                    desired state sent back as it came) and the neighbours
//	                    served on loopback, called through gRPC

// benchSizes are the numbers of composed resources of the benchmarks.
var benchSizes = []int{10, 100, 1_000, 10_000}

// A benchShape describes a generated request.
type benchShape struct {
	n int
	// Each dependent Object has minRefs to maxRefs references to distinct
	// composed resources.
	minRefs, maxRefs int
	// external makes about one dependent in twenty reference a Secret that is
	// not in the composition, besides its other references.
	external bool
	// namespaced composes kubernetes.m.crossplane.io Objects for a namespaced
	// composite, instead of cluster-scoped kubernetes.crossplane.io ones.
	namespaced bool
}

// realistic is the shape of the benchmarks' requests.
func realistic(n int) benchShape { return benchShape{n: n, minRefs: 1, maxRefs: 3, external: true} }

// benchRequest generates a request as Crossplane sends it to a step after the
// one that rendered the Objects. A hundredth of the Objects (at least one) are
// shared: every other Object references one of them, and more, like Objects
// that create their object in a shared namespace and read a shared config.
// Objects reference only Objects generated before them, so there is no cycle.
// Each Object's manifest is a Deployment or a ConfigMap of about 2 KB.
//
// Observed state is what the API server returns: UIDs, every Object's own
// finalizer, the reference finalizers the provider added (with one in five
// missing on shared Objects and one in twenty elsewhere: the #371 race),
// status.atProvider.manifest and conditions. One Object in fifty doesn't exist
// yet and one in a hundred is being deleted. Desired state is the previous
// step's output: no UID, no defaults, and an earlier step's finalizer on one
// Object in seven.
//
// test/loop's generatedRequest (fn_same_request_same_answer_test.go) has every complication of the
// rules; this one has the sizes and proportions of a real composition.
func benchRequest(s benchShape) *fnv1.RunFunctionRequest {
	rng := rand.New(rand.NewPCG(uint64(s.n), 6))
	apiVersion, namespace, xr := clusterObject, "", clusterXR
	if s.namespaced {
		apiVersion, namespace = namespacedObject, "team"
		xr = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "App", "metadata": {"name": "app", "namespace": "team"}}`)}
	}
	shared := max(1, s.n/100)

	type generated struct {
		name, uid string
		targets   []int
		exists    bool
		deleting  bool
		carried   []string // reference finalizers on the observed object
	}
	objects := make([]generated, s.n)
	for i := range objects {
		o := &objects[i]
		o.name = fmt.Sprintf("r%05d", i)
		o.exists = i < shared || rng.IntN(50) != 0
		o.deleting = o.exists && i >= shared && rng.IntN(100) == 0
		if o.exists {
			o.uid = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Int64N(1<<48))
		}
		if i < shared {
			continue
		}
		// The first reference is to a shared Object; the others to another
		// shared Object or to any earlier one.
		k := min(i, s.minRefs+rng.IntN(s.maxRefs-s.minRefs+1))
		for len(o.targets) < k {
			t := rng.IntN(shared)
			if len(o.targets) > 0 && rng.IntN(2) == 0 {
				t = rng.IntN(i)
			}
			if !slices.Contains(o.targets, t) {
				o.targets = append(o.targets, t)
			}
		}
	}
	for i := range objects {
		d := &objects[i]
		if !d.exists {
			continue
		}
		for _, t := range d.targets {
			lost := 20
			if t < shared {
				lost = 5
			}
			if rng.IntN(lost) != 0 {
				objects[t].carried = append(objects[t].carried, refPrefix+d.uid)
			}
		}
	}

	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: xr, Resources: make(map[string]*fnv1.Resource, s.n)},
		Desired:  &fnv1.State{Resources: make(map[string]*fnv1.Resource, s.n)},
	}
	for i, g := range objects {
		refs := make([]string, 0, len(g.targets)+1)
		for j, t := range g.targets {
			// Shared Objects are waited for; others are read from.
			target := fmt.Sprintf(`{"apiVersion": %q, "kind": "Object", "name": "app-%s"%s}`, apiVersion, objects[t].name, namespaceField(namespace))
			if j == 0 || t < shared {
				refs = append(refs, `{"dependsOn": `+target+`}`)
			} else {
				refs = append(refs, `{"patchesFrom": `+strings.TrimSuffix(target, "}")+`, "fieldPath": "status.atProvider.manifest.metadata.uid"}, "toFieldPath": "metadata.annotations[example.org/source-uid]"}`)
			}
		}
		if s.external && i >= shared && rng.IntN(20) == 0 {
			refs = append(refs, `{"dependsOn": {"apiVersion": "v1", "kind": "Secret", "name": "registry-credentials", "namespace": "team"}}`)
		}
		references := ""
		if len(refs) > 0 {
			references = "[" + strings.Join(refs, ", ") + "]"
		}

		o := obj{apiVersion: apiVersion, name: "app-" + g.name, namespace: namespace, references: references}
		if i%7 == 0 {
			o.finalizers = []string{"example.org/earlier-step"}
		}
		kind := "ConfigMap"
		if i%2 == 1 {
			kind = "Deployment"
		}
		desired := o.resource()
		dressDesired(desired, benchManifest(kind, g.name))
		req.Desired.Resources[g.name] = desired
		if !g.exists {
			continue
		}
		o.uid, o.deleting = g.uid, g.deleting
		o.finalizers = append([]string{objectFinalizer}, g.carried...)
		observed := o.resource()
		dressObserved(observed, benchManifest(kind, g.name), g.name, g.uid, i)
		req.Observed.Resources[g.name] = observed
	}
	return req
}

func namespaceField(namespace string) string {
	if namespace == "" {
		return ""
	}
	return fmt.Sprintf(`, "namespace": %q`, namespace)
}

// benchManifests are the manifests of the generated Objects, about 2 KB each as JSON.
var benchManifests = map[string]*structpb.Struct{
	"ConfigMap": resource.MustStructJSON(`{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": {"name": "NAME", "namespace": "app",
			"labels": {"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": "app", "app.kubernetes.io/component": "config", "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/managed-by": "crossplane"},
			"annotations": {"example.org/owner": "team-payments", "example.org/config-checksum": "sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"}},
		"data": {
			"LOG_LEVEL": "info", "LISTEN_ADDRESS": ":8080", "METRICS_ADDRESS": ":9090", "DATABASE_HOST": "postgres.data.svc.cluster.local", "DATABASE_PORT": "5432", "CACHE_TTL": "300s",
			"application.yaml": "server:\n  port: 8080\n  shutdownGracePeriod: 30s\n  readTimeout: 15s\n  writeTimeout: 15s\ndatabase:\n  host: postgres.data.svc.cluster.local\n  port: 5432\n  name: checkout\n  pool:\n    maxOpen: 20\n    maxIdle: 5\n    maxLifetime: 30m\ncache:\n  backend: redis\n  address: redis.data.svc.cluster.local:6379\n  ttl: 300s\nfeatures:\n  newCheckoutFlow: false\n  expressPay: true\n  giftCards: true\n  loyaltyPoints: false\nlogging:\n  level: info\n  format: json\n  sampling:\n    initial: 100\n    thereafter: 100\ntracing:\n  enabled: true\n  endpoint: otel-collector.observability.svc.cluster.local:4317\n  sampleRatio: 0.05\n",
			"rules.json": "{\"rateLimits\": [{\"path\": \"/api/v1/checkout\", \"perSecond\": 50, \"burst\": 100}, {\"path\": \"/api/v1/cart\", \"perSecond\": 200, \"burst\": 400}, {\"path\": \"/api/v1/payment\", \"perSecond\": 20, \"burst\": 40}], \"retries\": {\"attempts\": 3, \"backoff\": \"exponential\", \"initialInterval\": \"100ms\", \"maxInterval\": \"2s\"}}"}}`),
	"Deployment": resource.MustStructJSON(`{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {"name": "NAME", "namespace": "app",
			"labels": {"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": "app", "app.kubernetes.io/component": "api", "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/managed-by": "crossplane"}},
		"spec": {"replicas": 3, "revisionHistoryLimit": 5,
			"selector": {"matchLabels": {"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": "app"}},
			"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
			"template": {
				"metadata": {"labels": {"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": "app"}, "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}},
				"spec": {"serviceAccountName": "checkout", "terminationGracePeriodSeconds": 30,
					"securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
					"containers": [{"name": "api", "image": "registry.example.org/shop/checkout:v2.14.3", "imagePullPolicy": "IfNotPresent",
						"args": ["--config=/etc/checkout/application.yaml", "--listen=:8080", "--metrics=:9090"],
						"ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
						"envFrom": [{"configMapRef": {"name": "app-config"}}, {"secretRef": {"name": "checkout-credentials"}}],
						"env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}, {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}, {"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
						"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
						"readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 10, "failureThreshold": 3},
						"livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10, "periodSeconds": 20},
						"securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"]}},
						"volumeMounts": [{"name": "config", "mountPath": "/etc/checkout", "readOnly": true}, {"name": "tmp", "mountPath": "/tmp"}]}],
					"volumes": [{"name": "config", "configMap": {"name": "app-config"}}, {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
					"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "checkout"}}}]}}}}`),
}

// benchManifest returns a fresh manifest of the kind, named.
func benchManifest(kind, name string) *structpb.Struct {
	m := proto.Clone(benchManifests[kind]).(*structpb.Struct)
	m.Fields["metadata"].GetStructValue().Fields["name"] = structpb.NewStringValue(name)
	return m
}

// dressDesired gives a desired Object its manifest and the fields a
// Composition sets besides those the function reads.
func dressDesired(r *fnv1.Resource, manifest *structpb.Struct) {
	spec := r.GetResource().GetFields()["spec"].GetStructValue()
	spec.Fields["forProvider"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"manifest": structpb.NewStructValue(manifest)}})
	spec.Fields["providerConfigRef"] = structpb.NewStructValue(mustStruct(map[string]any{"name": "kubernetes-provider"}))
}

// dressObserved gives an observed Object what the API server and the provider
// add: metadata, defaults, and the object's state in status.
func dressObserved(r *fnv1.Resource, m *structpb.Struct, name, uid string, i int) {
	dressDesired(r, m)
	fields := r.GetResource().GetFields()
	metadata := fields["metadata"].GetStructValue().GetFields()
	for k, v := range mustStruct(map[string]any{
		"creationTimestamp": "2026-11-02T09:14:07Z",
		"generation":        float64(1 + i%4),
		"resourceVersion":   strconv.Itoa(48_213_000 + i),
		"labels":            map[string]any{"crossplane.io/composite": "app"},
		"annotations":       map[string]any{"crossplane.io/composition-resource-name": name},
		"ownerReferences": []any{map[string]any{
			"apiVersion": "example.org/v1alpha1", "kind": "XApp", "name": "app", "uid": "0b6d9b2c-5c1e-4f57-9d5e-1a2b3c4d5e6f",
			"controller": true, "blockOwnerDeletion": true,
		}},
	}).GetFields() {
		metadata[k] = v
	}
	spec := fields["spec"].GetStructValue().GetFields()
	spec["managementPolicies"] = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("*")}})
	spec["deletionPolicy"] = structpb.NewStringValue("Delete")
	spec["readiness"] = structpb.NewStructValue(mustStruct(map[string]any{"policy": "SuccessfulCreate"}))

	// The object as the provider last read it.
	atProvider := proto.Clone(m).(*structpb.Struct)
	md := atProvider.GetFields()["metadata"].GetStructValue().GetFields()
	md["uid"] = structpb.NewStringValue(uid[:9] + "5eed-" + uid[14:])
	md["resourceVersion"] = structpb.NewStringValue(strconv.Itoa(91_442_000 + i))
	md["creationTimestamp"] = structpb.NewStringValue("2026-11-02T09:14:09Z")
	md["generation"] = structpb.NewNumberValue(1)
	if m.GetFields()["kind"].GetStringValue() == "Deployment" {
		atProvider.Fields["status"] = structpb.NewStructValue(mustStruct(map[string]any{
			"observedGeneration": float64(1), "replicas": float64(3), "readyReplicas": float64(3), "updatedReplicas": float64(3), "availableReplicas": float64(3),
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": "2026-11-02T09:15:31Z"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastTransitionTime": "2026-11-02T09:15:31Z"},
			},
		}))
	}
	fields["status"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"atProvider": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"manifest": structpb.NewStructValue(atProvider)}}),
		"conditions": structpb.NewListValue(mustStruct(map[string]any{"c": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-11-02T09:15:32Z"},
			map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-11-02T09:14:09Z"},
		}}).GetFields()["c"].GetListValue()),
	}})
}

// floor is a pass-through function: what every function that edits composed
// resources does on every request, with nothing else.
type floor struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

func (floor) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	if _, err := request.GetObservedComposedResources(req); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, err)
	}
	return rsp, nil
}

// benchFunction returns the function as main.go serves it.
func benchFunction(b *testing.B) *Function {
	b.Helper()
	log, err := function.NewLogger(false)
	if err != nil {
		b.Fatal(err)
	}
	return &Function{log: log}
}

// undoRun returns a func that takes back what RunFunction wrote into the
// request: response.To shares desired state with the request, so each run
// would otherwise start from what the run before declared. It restores the
// resources RunFunction added or removed and the lists it appended to
// (metadata.finalizers, spec.references) on the resources it changed, as a
// decoded request has them, without spare capacity, so that every run appends
// as the first did. Its cost is a map operation per changed resource. It
// checks once that undoing a run gives the request back exactly.
func undoRun(b *testing.B, f *Function, req *fnv1.RunFunctionRequest) func() {
	b.Helper()
	pristine := proto.Clone(req).(*fnv1.RunFunctionRequest)
	before := pristine.GetDesired().GetResources()
	rsp, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
	if err != nil {
		b.Fatal(err)
	}
	after := rsp.GetDesired().GetResources()

	type list struct {
		parent *structpb.Struct
		key    string
		length int // -1: the parent had no such list
	}
	var added []string
	var removed []string
	var lists []list
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[name]; !ok {
			added = append(added, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[name]
		switch {
		case !ok:
			removed = append(removed, name)
			continue
		case proto.Equal(before[name], a):
			continue
		}
		fields := req.GetDesired().GetResources()[name].GetResource().GetFields()
		for _, l := range []list{{parent: fields["metadata"].GetStructValue(), key: "finalizers"}, {parent: fields["spec"].GetStructValue(), key: "references"}} {
			if l.parent == nil {
				continue
			}
			l.length = -1
			if v, ok := l.parent.GetFields()[l.key]; ok {
				l.length = len(v.GetListValue().GetValues())
			}
			lists = append(lists, l)
		}
	}
	if len(added)+len(removed)+len(lists) == 0 {
		b.Fatal("RunFunction changes nothing in the generated request: the benchmark measures nothing")
	}
	resources := maps.Clone(req.GetDesired().GetResources())
	undo := func() {
		desired := req.GetDesired().GetResources()
		for _, name := range added {
			delete(desired, name)
		}
		for _, name := range removed {
			desired[name] = resources[name]
		}
		for _, l := range lists {
			if l.length < 0 {
				delete(l.parent.Fields, l.key)
				continue
			}
			v := l.parent.Fields[l.key].GetListValue()
			v.Values = slices.Clip(v.Values[:l.length])
		}
	}
	if _, err := f.RunFunction(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	undo()
	if !proto.Equal(req, pristine) {
		b.Fatal("undoing RunFunction doesn't give the request back: RunFunction changes desired state in a way undoRun doesn't know")
	}
	return undo
}

// runOn benchmarks RunFunction on the request.
func runOn(b *testing.B, req *fnv1.RunFunctionRequest) {
	b.Helper()
	f := benchFunction(b)
	undo := undoRun(b, f, req)
	b.ReportAllocs()
	size := 0
	for b.Loop() {
		rsp, err := f.RunFunction(context.Background(), req)
		if err != nil || len(rsp.GetConditions()) == 0 {
			b.Fatalf("RunFunction(...): %v, %v", rsp, err)
		}
		if size == 0 {
			size = proto.Size(rsp)
		}
		undo()
	}
	// What the response costs on the wire, against the request's desired
	// state sent back as it came (echo over gRPC).
	b.ReportMetric(float64(size)/float64(proto.Size(&fnv1.RunFunctionResponse{Desired: req.GetDesired()})), "response/echo")
}

// BenchmarkInProcess calls RunFunction and the floor directly on the same
// decoded request: what each costs beyond gRPC.
func BenchmarkInProcess(b *testing.B) {
	shapes := make([]benchShape, 0, len(benchSizes)+1)
	for _, n := range benchSizes {
		shapes = append(shapes, realistic(n))
	}
	namespaced := realistic(1_000)
	namespaced.namespaced = true
	shapes = append(shapes, namespaced)

	for _, s := range shapes {
		name := fmt.Sprintf("N=%d", s.n)
		if s.namespaced {
			name += "-namespaced"
		}
		// A benchmark with sub-benchmarks runs once, whatever -count says,
		// and only when -bench selects one of them.
		b.Run(name, func(b *testing.B) {
			req := benchRequest(s)
			b.Run("fn=ours", func(b *testing.B) { runOn(b, req) })
			b.Run("fn=floor", func(b *testing.B) {
				// The floor replaces the request's desired resources with
				// equal ones; a clone keeps them from the other benchmarks.
				req := proto.Clone(req).(*fnv1.RunFunctionRequest)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := (floor{}).RunFunction(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkGraph measures RunFunction on a decoded request in which every
// dependent has three references to other composed resources (2,970 edges at
// N=1,000), whole and in its three phases: reading the composed resources
// from the request's structs, deciding (the graph, the finalizers, the
// Usages, the references and creation order, and the report), and writing
// desired state, the condition and the results into the response.
func BenchmarkGraph(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			req := benchRequest(benchShape{n: n, minRefs: 3, maxRefs: 3})
			edges := float64(referenceCount(req))
			f := benchFunction(b)
			in, err := readInput(req)
			if err != nil {
				b.Fatal(err)
			}
			xr := refOf(req.GetObserved().GetComposite().GetResource())
			c := composedResources(req, true, false)

			b.Run("phase=all", func(b *testing.B) {
				runOn(b, req)
				b.ReportMetric(edges, "edges")
			})
			b.Run("phase=read", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := readInput(req); err != nil {
						b.Fatal(err)
					}
					composedResources(req, true, false)
				}
			})
			b.Run("phase=decide", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					decide(in, xr, c)
				}
				b.ReportMetric(edges, "edges")
			})
			b.Run("phase=write", func(b *testing.B) {
				d := decide(in, xr, c)
				undo := undoRun(b, f, req)
				b.ReportAllocs()
				for b.Loop() {
					d.writeTo(response.To(req, response.DefaultTTL), f.log)
					undo()
				}
			})
		})
	}
}

// referenceCount counts the references of the request's desired Objects.
func referenceCount(req *fnv1.RunFunctionRequest) int {
	n := 0
	for _, r := range req.GetDesired().GetResources() {
		n += len(value(r.GetResource(), "spec", "references").GetListValue().GetValues())
	}
	return n
}
