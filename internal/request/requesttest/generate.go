// Package requesttest generates RunFunctionRequests for tests and
// benchmarks.
package requesttest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// A Shape describes a generated request.
type Shape struct {
	N int
	// Each dependent Object has minRefs to maxRefs references to distinct
	// composed resources.
	MinRefs, MaxRefs int
	// external makes about one dependent in twenty reference a Secret that is
	// not in the composition, besides its other references.
	External bool
	// namespaced composes kubernetes.m.crossplane.io Objects for a namespaced
	// composite, instead of cluster-scoped kubernetes.crossplane.io ones.
	Namespaced bool
}

// Realistic is the shape of the benchmarks' requests.
func Realistic(n int) Shape { return Shape{N: n, MinRefs: 1, MaxRefs: 3, External: true} }

// Generate generates a request as Crossplane sends it to a step after the
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
func Generate(s Shape) *fnv1.RunFunctionRequest {
	rng := rand.New(rand.NewPCG(uint64(s.N), 6))
	apiVersion, namespace, xr := ClusterObject, "", ClusterXR
	if s.Namespaced {
		apiVersion, namespace = NamespacedObject, "team"
		xr = &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "example.org/v1alpha1", "kind": "App", "metadata": {"name": "app", "namespace": "team"}}`)}
	}
	shared := max(1, s.N/100)
	objects := generateObjects(rng, s, shared)
	carryFinalizers(rng, objects, shared)

	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: xr, Resources: make(map[string]*fnv1.Resource, s.N)},
		Desired:  &fnv1.State{Resources: make(map[string]*fnv1.Resource, s.N)},
	}
	for i, g := range objects {
		references := referencesOf(rng, s, objects, i, shared, apiVersion, namespace)
		o := Obj{APIVersion: apiVersion, Name: "app-" + g.name, Namespace: namespace, References: references}
		if i%7 == 0 {
			o.Finalizers = []string{"example.org/earlier-step"}
		}
		kind := "ConfigMap"
		if i%2 == 1 {
			kind = "Deployment"
		}
		desired := o.Resource()
		dressDesired(desired, manifest(kind, g.name))
		req.Desired.Resources[g.name] = desired
		if !g.exists {
			continue
		}
		o.UID, o.Deleting = g.uid, g.deleting
		o.Finalizers = append([]string{object.ObjectFinalizer}, g.carried...)
		observed := o.Resource()
		dressObserved(observed, manifest(kind, g.name), g.name, g.uid, i)
		req.Observed.Resources[g.name] = observed
	}
	return req
}

// A generated Object, before it is written as desired and observed state.
type generated struct {
	name, uid string
	targets   []int
	exists    bool
	deleting  bool
	carried   []string // reference finalizers on the observed object
}

// generateObjects generates the Objects: the first shared ones, then those
// that reference them and earlier ones.
func generateObjects(rng *rand.Rand, s Shape, shared int) []generated {
	objects := make([]generated, s.N)
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
		o.targets = pickTargets(rng, s, i, shared)
	}
	return objects
}

// pickTargets picks the Objects Object i references: the first a shared
// Object; the others another shared Object or any earlier one.
func pickTargets(rng *rand.Rand, s Shape, i, shared int) []int {
	k := min(i, s.MinRefs+rng.IntN(s.MaxRefs-s.MinRefs+1))
	var targets []int
	for len(targets) < k {
		t := rng.IntN(shared)
		if len(targets) > 0 && rng.IntN(2) == 0 {
			t = rng.IntN(i)
		}
		if !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	return targets
}

// carryFinalizers puts the reference finalizers of the existing Objects on
// their targets, but for those the #371 race lost.
func carryFinalizers(rng *rand.Rand, objects []generated, shared int) {
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
				objects[t].carried = append(objects[t].carried, RefPrefix+d.uid)
			}
		}
	}
}

// referencesOf is Object i's spec.references, as JSON.
func referencesOf(rng *rand.Rand, s Shape, objects []generated, i, shared int, apiVersion, namespace string) string {
	refs := make([]string, 0, len(objects[i].targets)+1)
	for j, t := range objects[i].targets {
		// Shared Objects are waited for; others are read from.
		target := fmt.Sprintf(`{"apiVersion": %q, "kind": "Object", "name": "app-%s"%s}`, apiVersion, objects[t].name, namespaceField(namespace))
		if j == 0 || t < shared {
			refs = append(refs, `{"dependsOn": `+target+`}`)
		} else {
			refs = append(refs, `{"patchesFrom": `+strings.TrimSuffix(target, "}")+`, "fieldPath": "status.atProvider.manifest.metadata.uid"}, "toFieldPath": "metadata.annotations[example.org/source-uid]"}`)
		}
	}
	if s.External && i >= shared && rng.IntN(20) == 0 {
		refs = append(refs, `{"dependsOn": {"apiVersion": "v1", "kind": "Secret", "name": "registry-credentials", "namespace": "team"}}`)
	}
	if len(refs) == 0 {
		return ""
	}
	return "[" + strings.Join(refs, ", ") + "]"
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

// manifest returns a fresh manifest of the kind, named.
func manifest(kind, name string) *structpb.Struct {
	m := proto.Clone(benchManifests[kind]).(*structpb.Struct)
	m.Fields["metadata"].GetStructValue().Fields["name"] = structpb.NewStringValue(name)
	return m
}

// dressDesired gives a desired Object its manifest and the fields a
// Composition sets besides those the function reads.
func dressDesired(r *fnv1.Resource, manifest *structpb.Struct) {
	spec := r.GetResource().GetFields()["spec"].GetStructValue()
	spec.Fields["forProvider"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"manifest": structpb.NewStructValue(manifest)}})
	spec.Fields["providerConfigRef"] = structpb.NewStructValue(MustStruct(map[string]any{"name": "kubernetes-provider"}))
}

// dressObserved gives an observed Object what the API server and the provider
// add: metadata, defaults, and the object's state in status.
func dressObserved(r *fnv1.Resource, m *structpb.Struct, name, uid string, i int) {
	dressDesired(r, m)
	fields := r.GetResource().GetFields()
	metadata := fields["metadata"].GetStructValue().GetFields()
	for k, v := range MustStruct(map[string]any{
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
	spec["readiness"] = structpb.NewStructValue(MustStruct(map[string]any{"policy": "SuccessfulCreate"}))

	// The object as the provider last read it.
	atProvider := proto.Clone(m).(*structpb.Struct)
	md := atProvider.GetFields()["metadata"].GetStructValue().GetFields()
	md["uid"] = structpb.NewStringValue(uid[:9] + "5eed-" + uid[14:])
	md["resourceVersion"] = structpb.NewStringValue(strconv.Itoa(91_442_000 + i))
	md["creationTimestamp"] = structpb.NewStringValue("2026-11-02T09:14:09Z")
	md["generation"] = structpb.NewNumberValue(1)
	if m.GetFields()["kind"].GetStringValue() == "Deployment" {
		atProvider.Fields["status"] = structpb.NewStructValue(MustStruct(map[string]any{
			"observedGeneration": float64(1), "replicas": float64(3), "readyReplicas": float64(3), "updatedReplicas": float64(3), "availableReplicas": float64(3),
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": "2026-11-02T09:15:31Z"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastTransitionTime": "2026-11-02T09:15:31Z"},
			},
		}))
	}
	fields["status"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"atProvider": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"manifest": structpb.NewStructValue(atProvider)}}),
		"conditions": structpb.NewListValue(MustStruct(map[string]any{"c": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-11-02T09:15:32Z"},
			map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "2026-11-02T09:14:09Z"},
		}}).GetFields()["c"].GetListValue()),
	}})
}

// MustStruct is the struct of a map, whose []string values become lists.
func MustStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(normalise(m).(map[string]any))
	if err != nil {
		panic(err)
	}
	return s
}

// normalise turns []string into []any, which structpb accepts.
func normalise(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalise(e)
		}
		return v
	case []string:
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = s
		}
		return out
	default:
		return v
	}
}
