//go:build e2e

package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// observe returns the composed resources of a render as the API server
// returns them once every provider has reconciled them: a name where the
// render left it to the API server (generateName), a uid, Ready and Synced
// conditions; for a managed resource of an Upbound provider, the
// crossplane.io/external-name annotation, every selector resolved as the
// provider resolves it (into its …Ref or …Refs, and the sibling field filled
// with the target's identifier), and status.atProvider as upjet fills it:
// the parameters, the id, on AWS the ARN, and the few computed fields the
// corpus's compositions read back (computed); for an Object,
// status.atProvider.manifest; a composed Usage's resourceSelector resolved
// into its resourceRef, as Crossplane's Usage controller does. Nothing here
// reads function-dependencies' rules: the providers know which kind each
// field references, and so does providerReferences.
func observe(t *testing.T, out output) []doc {
	t.Helper()
	xr := xrOf(t, out)
	var observed []doc
	for _, d := range out.docs[1:] {
		if harness.String(d, "apiVersion") == resultAPIVersion {
			continue
		}
		d = harness.DeepCopy(t, d)
		resource := harness.String(d, "metadata", "annotations", annotationResource)
		if harness.String(d, "metadata", "name") == "" {
			prefix := harness.String(d, "metadata", "generateName")
			if prefix == "" {
				prefix = harness.String(xr, "metadata", "name") + "-"
			}
			harness.Set(d, prefix+suffix(resource), "metadata", "name")
		}
		harness.Set(d, "uid-"+resource, "metadata", "uid")
		if upjet(d) {
			identify(d)
		}
		// A ProviderConfig has no conditions; everything else composed
		// here (managed resources, composites, Usages) is Ready.
		if harness.String(d, "kind") != "ProviderConfig" {
			harness.Set(d, []any{
				doc{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": observedAt},
				doc{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": observedAt},
			}, "status", "conditions")
		}
		observed = append(observed, d)
	}
	// Sorted by name, as the API server lists them: a provider takes the
	// first of several a single-valued selector matches.
	byName := slices.Clone(observed)
	slices.SortStableFunc(byName, func(a, b doc) int {
		return strings.Compare(harness.String(a, "metadata", "name"), harness.String(b, "metadata", "name"))
	})
	for _, d := range observed {
		if fp, ok := harness.Lookup(d, "spec", "forProvider").(doc); ok && upjet(d) {
			resolve(t, d, fp, byName)
			atProvider, _ := harness.DeepCopy(t, doc{"p": fp})["p"].(doc)
			stripReferences(atProvider)
			maps.Copy(atProvider, harness.Lookup(d, "status", "atProvider").(doc))
			if c, ok := computed[harness.String(d, "apiVersion")+"/"+harness.String(d, "kind")]; ok {
				c(d, atProvider)
			}
			harness.Set(d, atProvider, "status", "atProvider")
		}
		if m, ok := harness.Lookup(d, "spec", "forProvider", "manifest").(doc); ok && strings.HasPrefix(harness.String(d, "apiVersion"), "kubernetes.crossplane.io/") {
			harness.Set(d, harness.DeepCopy(t, m), "status", "atProvider", "manifest")
		}
		if harness.String(d, "kind") == "Usage" {
			for _, side := range []string{"of", "by"} {
				if s, ok := harness.Lookup(d, "spec", side).(doc); ok {
					resolveUsage(s, byName)
				}
			}
		}
	}
	return observed
}

// observedAt is when every observed condition last changed.
const observedAt = "2024-01-01T00:00:00Z"

// upjet says whether a composed resource is a managed resource of one of
// the Upbound providers (provider-upjet-aws, -gcp, -azure), whose selectors
// and status this file knows.
func upjet(d doc) bool {
	group, _, _ := strings.Cut(harness.String(d, "apiVersion"), "/")
	_, managed := harness.Lookup(d, "spec", "forProvider").(doc)
	return managed && strings.HasSuffix(group, ".upbound.io")
}

// stripReferences removes what spec.forProvider has and status.atProvider
// hasn't: references, selectors and secret references.
func stripReferences(m doc) {
	for k, v := range m {
		switch {
		case strings.HasSuffix(k, "Ref"), strings.HasSuffix(k, "Refs"), strings.HasSuffix(k, "Selector"):
			delete(m, k)
		case k != "":
			if vd, ok := v.(doc); ok {
				stripReferences(vd)
			}
			if vl, ok := v.([]any); ok {
				for _, e := range vl {
					if ed, ok := e.(doc); ok {
						stripReferences(ed)
					}
				}
			}
		}
	}
}

// computed are the fields of status.atProvider the cloud computes that the
// corpus's compositions read back into their XR's status (and, through it,
// into later resources), by apiVersion and kind.
var computed = map[string]func(d, atProvider doc){
	"eks.aws.upbound.io/v1beta1/Cluster": func(d, atProvider doc) {
		name := harness.String(d, "metadata", "name")
		atProvider["identity"] = []any{doc{"oidc": []any{doc{"issuer": "https://oidc.eks.us-west-2.amazonaws.com/id/" + strings.ToUpper(hash(name, 16))}}}}
		if vpc, ok := harness.List(atProvider, "vpcConfig")[0].(doc); ok {
			vpc["clusterSecurityGroupId"] = "sg-" + hash("cluster/"+name, 17)
		}
	},
	"cloudplatform.gcp.upbound.io/v1beta1/ServiceAccount": func(d, atProvider doc) {
		atProvider["email"] = harness.String(d, "metadata", "annotations", "crossplane.io/external-name") + "@corpus-project.iam.gserviceaccount.com"
	},
	"container.gcp.upbound.io/v1beta1/Cluster": func(_, atProvider doc) {
		atProvider["project"] = "corpus-project"
	},
	"containerservice.azure.upbound.io/v1beta2/KubernetesCluster": func(d, atProvider doc) {
		atProvider["oidcIssuerUrl"] = "https://westus.oic.prod-aks.azure.com/00000000-0000-0000-0000-000000000000/" + hash(harness.String(d, "metadata", "name"), 16) + "/"
	},
}

// hash is a stable hexadecimal stand-in of n characters for an identifier a
// cloud assigns.
func hash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// suffix is the five characters the API server appends to a generateName,
// here derived from the composition resource name so that renders repeat.
func suffix(resource string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	sum := sha256.Sum256([]byte(resource))
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(b)
}

// identify sets what the provider records of the external resource: its
// external name (a composition may set it, to import a resource), its id
// and, on AWS, its ARN. An EC2 resource's external name is the id AWS
// assigns, every other's is its name.
func identify(d doc) {
	name := harness.String(d, "metadata", "name")
	group, _, _ := strings.Cut(harness.String(d, "apiVersion"), "/")
	kind := harness.String(d, "kind")
	external := harness.String(d, "metadata", "annotations", "crossplane.io/external-name")
	if external == "" {
		external = name
		if group == "ec2.aws.upbound.io" {
			prefix, ok := ec2Prefixes[kind]
			if !ok {
				prefix = strings.ToLower(kind)
			}
			external = prefix + "-" + hash(kind+"/"+name, 17)
		}
		harness.Set(d, external, "metadata", "annotations", "crossplane.io/external-name")
	}
	// The id as each provider family forms it: AWS's is the external
	// name, GCP's and Azure's a path (a GCP service account's names its
	// project and email, which compositions read back).
	id := external
	switch {
	case group == "cloudplatform.gcp.upbound.io" && kind == "ServiceAccount":
		id = fmt.Sprintf("projects/corpus-project/serviceAccounts/%s@corpus-project.iam.gserviceaccount.com", external)
	case strings.HasSuffix(group, ".gcp.upbound.io"):
		id = fmt.Sprintf("projects/corpus-project/%ss/%s", strings.ToLower(kind), external)
	case group == "azure.upbound.io" && kind == "ResourceGroup":
		id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/" + external
	case strings.HasSuffix(group, ".azure.upbound.io"):
		id = fmt.Sprintf("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/corpus/providers/%s/%s/%s", group, kind, external)
	}
	harness.Set(d, id, "status", "atProvider", "id")
	if service, ok := strings.CutSuffix(group, ".aws.upbound.io"); ok {
		// IAM is global: its ARNs name no region.
		region := harness.String(d, "spec", "forProvider", "region")
		if service == "iam" {
			region = ""
		}
		harness.Set(d, fmt.Sprintf("arn:aws:%s:%s:123456789012:%s/%s", service, region, strings.ToLower(kind), external), "status", "atProvider", "arn")
	}
}

// ec2Prefixes start the ids EC2 gives the kinds of the corpus.
var ec2Prefixes = map[string]string{
	"VPC": "vpc", "Subnet": "subnet", "InternetGateway": "igw", "RouteTable": "rtb", "Route": "r-rtb",
	"MainRouteTableAssociation": "rtbassoc", "RouteTableAssociation": "rtbassoc", "SecurityGroup": "sg",
	"SecurityGroupRule": "sgr",
}

// A providerReference is what a provider's reference resolver knows of a
// selector field: the kind it selects and which of the target's
// identifiers it copies into the sibling field.
type providerReference struct {
	group, kind string
	// arn is true where the field takes the target's ARN, else its
	// external name.
	arn bool
	// multi names the dependent kinds whose field of that name is a list
	// (subnetIds and subnetIdRefs instead of subnetId and subnetIdRef).
	multi []string
}

// providerReferences are the selectors the corpus's compositions use, with
// their targets as the providers' generated resolvers have them
// (provider-upjet-aws, -gcp and -azure). A selector missing here fails the
// test: add it from the provider's resolver, never by guess from its name.
var providerReferences = map[string]providerReference{
	"vpcIdSelector":              {group: "ec2.aws.upbound.io", kind: "VPC"},
	"gatewayIdSelector":          {group: "ec2.aws.upbound.io", kind: "InternetGateway"},
	"routeTableIdSelector":       {group: "ec2.aws.upbound.io", kind: "RouteTable"},
	"securityGroupIdSelector":    {group: "ec2.aws.upbound.io", kind: "SecurityGroup"},
	"subnetIdSelector":           {group: "ec2.aws.upbound.io", kind: "Subnet", multi: []string{"Cluster", "NodeGroup"}},
	"roleArnSelector":            {group: "iam.aws.upbound.io", kind: "Role", arn: true},
	"nodeRoleArnSelector":        {group: "iam.aws.upbound.io", kind: "Role", arn: true},
	"roleSelector":               {group: "iam.aws.upbound.io", kind: "Role"},
	"policyArnSelector":          {group: "iam.aws.upbound.io", kind: "Policy", arn: true},
	"clusterNameSelector":        {group: "eks.aws.upbound.io", kind: "Cluster"},
	"serviceAccountIdSelector":   {group: "cloudplatform.gcp.upbound.io", kind: "ServiceAccount"},
	"clusterSelector":            {group: "container.gcp.upbound.io", kind: "Cluster"},
	"networkSelector":            {group: "compute.gcp.upbound.io", kind: "Network"},
	"subnetworkSelector":         {group: "compute.gcp.upbound.io", kind: "Subnetwork"},
	"resourceGroupNameSelector":  {group: "azure.upbound.io", kind: "ResourceGroup"},
	"virtualNetworkNameSelector": {group: "network.azure.upbound.io", kind: "VirtualNetwork"},
	"vnetSubnetIdSelector":       {group: "network.azure.upbound.io", kind: "Subnet"},
}

// resolve resolves every selector in a managed resource's spec.forProvider,
// at any depth, that has no reference yet.
func resolve(t *testing.T, d, m doc, byName []doc) {
	t.Helper()
	for _, key := range slices.Sorted(maps.Keys(m)) {
		switch v := m[key].(type) {
		case doc:
			base, isSelector := strings.CutSuffix(key, "Selector")
			if !isSelector {
				resolve(t, d, v, byName)
				continue
			}
			ref, ok := providerReferences[key]
			if !ok {
				t.Fatalf("%s %s: no provider reference known for %s: add it to providerReferences", harness.String(d, "kind"), harness.String(d, "metadata", "name"), key)
			}
			var targets []doc
			for _, c := range byName {
				group, _, _ := strings.Cut(harness.String(c, "apiVersion"), "/")
				if group == ref.group && harness.String(c, "kind") == ref.kind && labelsMatch(c, v) {
					targets = append(targets, c)
				}
			}
			if len(targets) == 0 {
				t.Logf("%s %s: %s selects nothing: left unresolved, as the provider would", harness.String(d, "kind"), harness.String(d, "metadata", "name"), key)
				continue
			}
			value := func(c doc) string {
				if ref.arn {
					return harness.String(c, "status", "atProvider", "arn")
				}
				return harness.String(c, "metadata", "annotations", "crossplane.io/external-name")
			}
			if slices.Contains(ref.multi, harness.String(d, "kind")) {
				if _, done := m[base+"Refs"]; done {
					continue
				}
				var refs, values []any
				for _, c := range targets {
					refs = append(refs, doc{"name": harness.String(c, "metadata", "name")})
					values = append(values, value(c))
				}
				m[base+"Refs"], m[base+"s"] = refs, values
				continue
			}
			if _, done := m[base+"Ref"]; done {
				continue
			}
			m[base+"Ref"], m[base] = doc{"name": harness.String(targets[0], "metadata", "name")}, value(targets[0])
		case []any:
			for _, e := range v {
				if ed, ok := e.(doc); ok {
					resolve(t, d, ed, byName)
				}
			}
		}
	}
}

// resolveUsage resolves one side of a composed Usage, as Crossplane's Usage
// controller does: the first resource of the side's kind whose labels
// match (every composed resource has the XR as its controller).
func resolveUsage(side doc, byName []doc) {
	sel, ok := side["resourceSelector"].(doc)
	if !ok || side["resourceRef"] != nil {
		return
	}
	for _, c := range byName {
		if harness.String(c, "apiVersion") == harness.String(side, "apiVersion") && harness.String(c, "kind") == harness.String(side, "kind") && labelsMatch(c, sel) {
			side["resourceRef"] = doc{"name": harness.String(c, "metadata", "name")}
			return
		}
	}
}

// labelsMatch says whether a resource carries every label a selector's
// matchLabels asks for.
func labelsMatch(d, selector doc) bool {
	want, _ := selector["matchLabels"].(doc)
	for k, v := range want {
		if harness.String(d, "metadata", "labels", k) != v {
			return false
		}
	}
	return true
}
