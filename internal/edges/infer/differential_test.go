package infer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// The pools random resources draw from are small, so that names, labels,
// identifiers and Secrets collide: collisions are what the indices of Edges
// must get right.
var (
	randomNames      = []string{"a", "b", "default", "vpc", ""}
	randomNamespaces = []string{"", "team", "other"}
	randomGroups     = []string{"ec2.aws.upbound.io", "aws.upbound.io", "upbound.io", "ec2.aws.m.upbound.io", "aws.m.upbound.io", "kubernetes.crossplane.io", "kubernetes.m.crossplane.io", "helm.crossplane.io", "", "odd.", "sub.odd."}
	randomKinds      = []string{"ProviderConfig", "ClusterProviderConfig", "VPC", "Vpc", "Subnet", "Object", "Secret", "RouteTable", "Route", "InternetGateway", "SecurityGroup", "DBSubnetGroup", ""}
	randomSecrets    = []string{"kubeconfig", "token", ""}
	randomIDs        = []string{"id-1", "id-2", "vpc-1", "arn:aws:x", ""}
	randomLabelKeys  = []string{"app", "tier", "zone"}
	randomLabelVals  = []any{"web", "db", 1.0, true, nil}
	// randomFields are the reference fields and the fields they resolve:
	// several name a kind, several are each other's plural.
	randomFields = []string{"vpcIdRef", "vpcId", "subnetIdRefs", "subnetIds", "vpcIdSelector", "routeTableIdRef", "routeTableId", "gatewayIdRef", "gatewayId", "securityGroupIdSelector", "securityGroupIds", "securityGroupId", "dbSubnetGroupNameRef", "dbSubnetGroupName", "subnetIdSelector", "subnetId"}
)

// randomResources are up to n composed resources of the rules' every shape:
// shared names and labels, resolved and unresolved references and
// selectors, ProviderConfigs and what writes their Secrets, in and out of
// namespaces, with fields missing or of the wrong type.
func randomResources(t *testing.T, rng *rand.Rand, n int, groups, kinds []string) []Resource {
	t.Helper()
	pick := func(from []string) string { return from[rng.IntN(len(from))] }
	resources := make([]Resource, rng.IntN(n+1))
	for i := range resources {
		group, kind := pick(groups), pick(kinds)
		name, namespace := pick(randomNames), pick(randomNamespaces)
		switch {
		case kind == "Secret" && rng.IntN(4) != 0:
			group, name = "", pick(randomSecrets)
		case kind == "Object" && rng.IntN(4) != 0:
			group = pick([]string{"kubernetes.crossplane.io", "kubernetes.m.crossplane.io"})
		}
		bodies := rng.IntN(3)
		if bodies == 0 && rng.IntN(2) == 0 {
			bodies = 1
		}
		r := Resource{Name: fmt.Sprintf("r%d", i)}
		for b := range bodies {
			m := randomBody(rng, group, kind, name, namespace, b == 0)
			s, err := structpb.NewStruct(m)
			if err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			r.Bodies = append(r.Bodies, request.ObjectOf(s))
		}
		r.Identity.Group, r.Identity.Kind, r.Identity.Namespace, r.Identity.Name = group, kind, namespace, name
		if len(r.Bodies) > 0 && rng.IntN(4) != 0 {
			r.Identity = r.Bodies[0].(request.Object).Identity()
		}
		resources[i] = r
	}
	return resources
}

// randomBody is one body of a resource: the observed one has what a
// provider resolved and reports.
func randomBody(rng *rand.Rand, group, kind, name, namespace string, observed bool) map[string]any {
	pick := func(from []string) string { return from[rng.IntN(len(from))] }
	maybe := func() bool { return rng.IntN(2) == 0 }
	apiVersion := "v1"
	if group != "" {
		apiVersion = group + "/v1beta1"
	}
	metadata := map[string]any{}
	if maybe() || name != "" {
		metadata["name"] = name
	}
	if namespace != "" {
		metadata["namespace"] = namespace
	}
	if maybe() {
		labels := map[string]any{}
		for _, k := range randomLabelKeys {
			if maybe() {
				labels[k] = randomLabelVals[rng.IntN(len(randomLabelVals))]
			}
		}
		metadata["labels"] = labels
	}
	if maybe() {
		metadata["annotations"] = map[string]any{externalName: pick(randomIDs)}
	}
	spec := map[string]any{}
	if rng.IntN(3) == 0 {
		ref := map[string]any{"name": pick(randomNames)}
		if maybe() {
			ref["kind"] = pick([]string{providerConfig, clusterProviderConfig, "Subnet"})
		}
		spec["providerConfigRef"] = ref
	}
	secretRef := func() map[string]any {
		ref := map[string]any{"name": pick(randomSecrets)}
		if maybe() {
			ref["namespace"] = pick(randomNamespaces)
		}
		return ref
	}
	if kind == providerConfig || kind == clusterProviderConfig || rng.IntN(8) == 0 {
		if maybe() {
			spec["credentials"] = map[string]any{"source": "Secret", "secretRef": secretRef()}
		}
		if rng.IntN(3) == 0 {
			spec["identity"] = map[string]any{"secretRef": secretRef()}
		}
	}
	if rng.IntN(3) == 0 {
		spec["writeConnectionSecretToRef"] = secretRef()
	}
	forProvider := randomReferences(rng, observed, 2)
	if kind == "Object" || rng.IntN(8) == 0 {
		if rng.IntN(4) != 0 {
			manifest := map[string]any{"apiVersion": pick([]string{"v1", "v1", "apps/v1"}), "kind": pick([]string{"Secret", "Secret", "ConfigMap"}), "metadata": secretRef()}
			for k, v := range randomReferences(rng, observed, 1) {
				manifest[k] = v
			}
			forProvider["manifest"] = manifest
		}
		if rng.IntN(8) == 0 {
			forProvider["values"] = randomReferences(rng, observed, 1)
		}
	}
	if len(forProvider) > 0 {
		spec["forProvider"] = forProvider
	}
	if rng.IntN(4) == 0 {
		spec["initProvider"] = randomReferences(rng, observed, 1)
	}
	m := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": metadata, "spec": spec}
	if observed && maybe() {
		atProvider := map[string]any{}
		if maybe() {
			atProvider["id"] = pick(randomIDs)
		}
		if maybe() {
			atProvider["arn"] = pick(randomIDs)
		}
		m["status"] = map[string]any{"atProvider": atProvider}
	}
	return m
}

// randomReferences are reference fields, the fields they resolve (in the
// observed body), and objects and lists of them, to depth.
func randomReferences(rng *rand.Rand, observed bool, depth int) map[string]any {
	pick := func(from []string) string { return from[rng.IntN(len(from))] }
	fields := map[string]any{}
	for range rng.IntN(5) {
		key := pick(randomFields)
		switch {
		case strings.HasSuffix(key, "Ref"):
			switch rng.IntN(6) {
			case 0:
				fields[key] = "not-an-object"
			case 1:
				fields[key] = map[string]any{}
			default:
				fields[key] = map[string]any{"name": pick(randomNames)}
			}
		case strings.HasSuffix(key, "Refs"):
			var refs []any
			for range rng.IntN(4) {
				if rng.IntN(6) == 0 {
					refs = append(refs, "x")
					continue
				}
				refs = append(refs, map[string]any{"name": pick(randomNames)})
			}
			fields[key] = refs
		case strings.HasSuffix(key, "Selector"):
			switch rng.IntN(5) {
			case 0:
				fields[key] = true
			case 1:
				fields[key] = map[string]any{"matchControllerRef": true}
			default:
				labels := map[string]any{}
				for _, k := range randomLabelKeys {
					if rng.IntN(3) == 0 {
						labels[k] = randomLabelVals[rng.IntN(len(randomLabelVals))]
					}
				}
				fields[key] = map[string]any{"matchLabels": labels}
			}
		case observed || rng.IntN(4) == 0:
			if rng.IntN(3) == 0 {
				var ids []any
				for range rng.IntN(4) {
					ids = append(ids, pick(randomIDs))
				}
				if rng.IntN(5) == 0 {
					ids = append(ids, 7.0)
				}
				fields[key] = ids
			} else {
				fields[key] = pick(randomIDs)
			}
		}
	}
	if depth > 0 && rng.IntN(3) == 0 {
		fields["nested"] = randomReferences(rng, observed, depth-1)
	}
	if depth > 0 && rng.IntN(3) == 0 {
		var items []any
		for range rng.IntN(3) {
			items = append(items, randomReferences(rng, observed, depth-1))
		}
		fields["rules"] = items
	}
	return fields
}

func TestIndexingChangesNoEdgeNorReport(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	// seen counts what the random resources made the rules find, so that
	// the comparison is known to cover every rule and report.
	seen := map[string]int{}
	for i := range 4000 {
		n, groups, kinds := 12, randomGroups, randomKinds
		switch {
		case i%100 == 0:
			n = 150
		case i%10 == 0:
			// ProviderConfigs of one provider, cluster-scoped and
			// namespaced, and its managed resources.
			n, groups, kinds = 40, []string{"aws.upbound.io", "ec2.aws.upbound.io", "aws.m.upbound.io", "ec2.aws.m.upbound.io"}, []string{providerConfig, clusterProviderConfig, "Subnet"}
		}
		resources := randomResources(t, rng, n, groups, kinds)
		k := Kinds{ProviderConfigs: rng.IntN(4) != 0, Credentials: rng.IntN(4) != 0, ManagedReferences: rng.IntN(4) != 0}
		want := referenceEdges(resources, k)
		got := Edges(resources, k)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: Edges(...) differs from the reference: -reference, +indexed:\n%s", i, diff)
		}
		for _, e := range want.Edges {
			switch {
			case e.Via == "spec.providerConfigRef":
				seen["providerConfigRef"]++
			case strings.Contains(e.Via, " → "):
				_, writer, _ := strings.Cut(e.Via, " → ")
				seen["→ "+writer]++
			case strings.Contains(e.Via, "Selector"):
				seen["selector"]++
			case strings.Contains(e.Via, "Refs"):
				seen["refs"]++
			default:
				seen["ref"]++
			}
		}
		for _, u := range want.Unidentified {
			switch {
			case strings.Contains(u.Via, "Selector"):
				seen["unidentified selector"]++
			default:
				seen["unidentified ref"]++
			}
		}
	}
	for _, what := range []string{"providerConfigRef", "→ Secret", "→ spec.writeConnectionSecretToRef", "→ spec.forProvider.manifest", "selector", "refs", "ref", "unidentified selector", "unidentified ref"} {
		if seen[what] < 20 {
			t.Errorf("the random resources made only %d edges or reports of %q: the comparison doesn't cover it", seen[what], what)
		}
	}
	t.Logf("compared: %v", seen)
}

func TestIndexingChangesNothingOnTheHostileShapes(t *testing.T) {
	for shape, resources := range hostile {
		t.Run(shape, func(t *testing.T) {
			resources := resources(200)
			want := referenceEdges(resources, all)
			if len(want.Edges)+len(want.Unidentified) < len(resources)-1 {
				t.Fatalf("the reference finds %d edges and %d unidentified: the shape makes the rules find too little", len(want.Edges), len(want.Unidentified))
			}
			if diff := cmp.Diff(want, Edges(resources, all)); diff != "" {
				t.Errorf("Edges(...) differs from the reference: -reference, +indexed:\n%s", diff)
			}
		})
	}
}
