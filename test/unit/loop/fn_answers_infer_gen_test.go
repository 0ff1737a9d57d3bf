package loop

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// What genRequest adds for the inference rules of issue 26, with choices
// drawn after all its others, so that a seed's request is the one it was
// wherever it draws none: the input's infer, and composed resources of the
// shapes the rules read, their fields drawn from small pools of names so
// that they often name each other, and sometimes what isn't there, another
// namespace, two resources of one name or a body observed otherwise than
// desired.

// genInferNames are the names the shapes give and refer to.
var genInferNames = []string{"pc", "default", "main", "creds"}

// inferenceShapes adds the shapes and draws infer.
func (g reqGen) inferenceShapes(req *fnv1.RunFunctionRequest, xrNamespace string) {
	if g.chance(40) {
		return
	}
	in := req.GetInput().AsMap()
	if len(in) == 0 { // A nil Struct's map is empty, not nil.
		in = map[string]any{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"}
	}
	var infer []any
	for _, rule := range []string{oracle.InferProviderConfigs, oracle.InferCredentials, oracle.InferManagedReferences} {
		if g.chance(75) {
			infer = append(infer, rule)
		}
	}
	if infer != nil || g.chance(50) {
		in["infer"] = infer
	}
	req.Input = requesttest.MustStruct(in)
	// genRequest makes two resources of one identity at times; their edges
	// to one target would share one Usage, a composition's mistake the
	// rules don't say how to protect: the shapes give them no edge.
	identities := map[oracle.Identity]int{}
	plan := oracle.Expect(oracle.FromRequest(req))
	for _, n := range plan.Nodes {
		identities[n.Identity]++
	}

	name := func() string { return pickOne(g, genInferNames...) }
	namespace := func() string {
		if xrNamespace != "" {
			return pickOne(g, "", xrNamespace, xrNamespace, "other")
		}
		return pickOne(g, "ns-a", "ns-a", "ns-b")
	}
	m := func() bool { return xrNamespace != "" || g.chance(25) } // a namespaced .m. API
	// Nor do the shapes make two of one identity.
	made := map[string]bool{}
	for i := range 1 + g.c.intn(6) {
		var body map[string]any
		switch g.c.intn(6) {
		case 0:
			body = g.inferProviderConfig(name(), m(), namespace)
		case 1, 2, 3:
			body = g.inferManaged(name(), m(), namespace)
		case 4:
			body = genBody("v1", "Secret", pickOne(g, "creds", "main"), namespace())
		default:
			group := oracle.ClusterObjectGroup
			if m() {
				group = oracle.NamespacedObjectGroup
			}
			body = genBody(group+"/v1alpha1", oracle.ObjectKind, name(), "")
			if group == oracle.NamespacedObjectGroup {
				genSet(body, "metadata.namespace", namespace())
			}
			genSet(body, "spec.forProvider.manifest", genBody("v1", pickOne(g, "Secret", "Secret", "ConfigMap"), "creds", pickOne(g, "", "ns-a", xrNamespace)))
			if g.chance(40) {
				genSet(body, "spec.providerConfigRef", map[string]any{"name": name()})
			}
		}
		key := fmt.Sprintf("inf%02d", i)
		group, _ := oracle.GroupOf(loopText(body, "apiVersion"))
		id := strings.Join([]string{group, loopText(body, "kind"), cmp.Or(loopText(body, "metadata", "namespace"), xrNamespace), loopText(body, "metadata", "name")}, "/")
		if made[id] {
			genSet(body, "metadata.name", loopText(body, "metadata", "name")+"-"+key)
		}
		made[id] = true
		g.addInferred(req, key, body)
	}
	// Some edges' Usages exist: the function emitted them before.
	if g.chance(30) {
		for i, u := range oracle.Expect(oracle.FromRequest(req)).Usages {
			if g.chance(60) {
				body, _ := u.Emitted()
				name := fmt.Sprintf("usage-seen-%d", i)
				genSet(body, "metadata.name", name)
				genSet(body, "metadata.uid", "uid-"+name)
				req.Observed.Resources[name] = &fnv1.Resource{Resource: requesttest.MustStruct(body)}
			}
		}
	}
	// The composition's Objects name a ProviderConfig.
	for _, state := range []*fnv1.State{req.GetDesired(), req.GetObserved()} {
		for _, key := range slices.Sorted(maps.Keys(state.GetResources())) {
			r := state.GetResources()[key]
			body := r.GetResource().AsMap()
			if n := plan.Nodes[key]; n == nil || identities[n.Identity] > 1 || !oracle.IsObject(loopText(body, "apiVersion"), loopText(body, "kind")) || !g.chance(30) {
				continue
			}
			ref := map[string]any{"name": name()}
			if g.chance(20) {
				ref["kind"] = "ClusterProviderConfig"
			}
			genSet(body, "spec.providerConfigRef", ref)
			r.Resource = requesttest.MustStruct(body)
		}
	}
	if g.chance(50) {
		g.sharedNames(req, xrNamespace)
	}
}

// sharedNames adds what issue 31's rule tells apart, drawn after the rest:
// an InternetGateway, a RouteTable and a NATGateway all named main, some of
// them with an external name, or an id or ARN their provider observes, and
// a Route of that name whose gatewayIdRef and routeTableIdRef name main,
// its gatewayId resolved to one of those or to nothing composed, or not
// resolved yet.
func (g reqGen) sharedNames(req *fnv1.RunFunctionRequest, xrNamespace string) {
	group, namespace := "ec2.aws.upbound.io", ""
	if xrNamespace != "" || g.chance(25) {
		group, namespace = "ec2.aws.m.upbound.io", cmp.Or(xrNamespace, "ns-a")
	}
	for i, kind := range []string{"InternetGateway", "RouteTable", "NATGateway", "Route"} {
		body := genBody(group+"/v1beta1", kind, "main", namespace)
		id := fmt.Sprintf("id-%d", i)
		switch {
		case kind == "Route":
			genSet(body, "spec.forProvider.gatewayIdRef", map[string]any{"name": "main"})
			genSet(body, "spec.forProvider.routeTableIdRef", map[string]any{"name": "main"})
			if g.chance(60) {
				genSet(body, "spec.forProvider.gatewayId", pickOne(g, "id-0", "id-0", "id-2", "id-9"))
			}
		case !g.chance(75):
			continue
		case g.chance(30):
			genSet(body, "metadata.annotations", map[string]any{oracle.ExternalNameAnnotation: id})
		case g.chance(70):
			genSet(body, pickOne(g, "status.atProvider.id", "status.atProvider.arn"), id)
		}
		g.addInferred(req, fmt.Sprintf("shared%02d", i), body)
	}
}

// inferProviderConfig is a ProviderConfig or ClusterProviderConfig of
// provider-kubernetes or of the AWS provider's groups, which may read its
// credentials from a Secret.
func (g reqGen) inferProviderConfig(name string, m bool, namespace func() string) map[string]any {
	group := pickOne(g, "kubernetes.crossplane.io", "aws.upbound.io", "upbound.io")
	if m {
		group = pickOne(g, "kubernetes.m.crossplane.io", "aws.m.upbound.io")
	}
	kind := "ProviderConfig"
	if m && g.chance(30) {
		kind = "ClusterProviderConfig"
	}
	body := genBody(group+"/v1beta1", kind, name, "")
	if m && kind == "ProviderConfig" {
		genSet(body, "metadata.namespace", namespace())
	}
	if g.chance(60) {
		ref := map[string]any{"name": pickOne(g, "creds", "creds", "main", "")}
		if ns := namespace(); g.chance(70) {
			ref["namespace"] = ns
		}
		genSet(body, pickOne(g, "spec.credentials.secretRef", "spec.identity.secretRef"), ref)
	}
	return body
}

// inferManaged is a managed resource of the AWS provider that names
// others: its ProviderConfig, a …Ref, a list of …Refs, a …Selector with its
// resolved value or values, a connection secret; and may carry an
// external name and labels that selectors match.
func (g reqGen) inferManaged(name string, m bool, namespace func() string) map[string]any {
	service := pickOne(g, "ec2", "eks", "rds")
	group := service + ".aws.upbound.io"
	if m {
		group = service + ".aws.m.upbound.io"
	}
	body := genBody(group+"/v1beta1", pickOne(g, "VPC", "Subnet", "Cluster", "Instance"), name, "")
	if m {
		genSet(body, "metadata.namespace", namespace())
	}
	part := pickOne(g, "spec.forProvider", "spec.forProvider", "spec.initProvider")
	if g.chance(50) {
		ref := map[string]any{"name": pickOne(g, "pc", "default", "missing")}
		if g.chance(20) {
			ref["kind"] = "ClusterProviderConfig"
		}
		genSet(body, "spec.providerConfigRef", ref)
	}
	if g.chance(40) {
		genSet(body, part+".vpcIdRef", map[string]any{"name": pickOne(g, "main", "default", "missing", "")})
	}
	if g.chance(25) {
		genSet(body, part+".vpcConfig", []any{map[string]any{"subnetIdRefs": []any{map[string]any{"name": "main"}, map[string]any{"name": pickOne(g, "pc", "creds", "missing")}}}})
	}
	if g.chance(30) {
		selector := map[string]any{}
		if g.chance(60) {
			selector["matchLabels"] = map[string]any{"net": pickOne(g, "a", "b")}
		}
		genSet(body, part+".subnetIdSelector", selector)
		if g.chance(70) {
			genSet(body, part+".subnetId", pickOne(g, "ext-1", "ext-2"))
		} else {
			genSet(body, part+".subnetIds", []any{"ext-1", pickOne(g, "ext-2", "ext-3")})
		}
	}
	if g.chance(50) {
		genSet(body, "metadata.annotations", map[string]any{oracle.ExternalNameAnnotation: pickOne(g, "ext-1", "ext-2")})
		genSet(body, "metadata.labels", map[string]any{"net": pickOne(g, "a", "b")})
	}
	if g.chance(25) {
		to := map[string]any{"name": "creds"}
		if g.chance(50) {
			to["namespace"] = namespace()
		}
		genSet(body, "spec.writeConnectionSecretToRef", to)
	}
	return body
}

// addInferred adds a resource of the body to the request: desired,
// observed or both, an observed one with a UID, and sometimes being deleted
// or observed with one of its fields only (what a provider resolved).
func (g reqGen) addInferred(req *fnv1.RunFunctionRequest, key string, body map[string]any) {
	desired, observed := true, g.chance(70)
	if observed && g.chance(15) {
		desired = false
	}
	if desired {
		d := body
		if observed && g.chance(20) {
			d = genCopy(body)
			delete(d, "spec") // Desired names nothing; what observed names was resolved.
		}
		if _, ok := d["status"]; ok {
			d = genCopy(d)
			delete(d, "status") // What a provider observes is observed only.
		}
		req.Desired.Resources[key] = &fnv1.Resource{Resource: requesttest.MustStruct(d)}
	}
	if observed {
		o := genCopy(body)
		genSet(o, "metadata.uid", "uid-"+key)
		if loopText(o, "metadata", "name") == "" {
			genSet(o, "metadata.name", "gen-"+key)
		}
		if g.chance(8) {
			genSet(o, "metadata.deletionTimestamp", "2026-11-30T10:00:00Z")
		}
		req.Observed.Resources[key] = &fnv1.Resource{Resource: requesttest.MustStruct(o)}
	}
}

func genBody(apiVersion, kind, name, namespace string) map[string]any {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
}

// genSet sets the field at the dotted path, making the maps on the way;
// "" leaves it out.
func genSet(m map[string]any, path string, v any) {
	if v == "" {
		return
	}
	harness.Set(m, v, strings.Split(path, ".")...)
}

// genCopy copies a body deep enough to set fields of its own.
func genCopy(m map[string]any) map[string]any {
	return requesttest.MustStruct(m).AsMap()
}
