package infer

import (
	"context"
	"fmt"
	"testing"
)

// referencing are n Subnets, each of which names the 100 before it (as
// many as there are) in its spec.forProvider.subnetIdRefs: an edge for each
// name, each target alone of its name.
func referencing(n int) []Resource {
	const refs = 100
	resources := make([]Resource, n)
	for i := range resources {
		var names []any
		for t := max(0, i-refs); t < i; t++ {
			names = append(names, map[string]any{"name": fmt.Sprintf("subnet-%05d", t)})
		}
		name := fmt.Sprintf("subnet-%05d", i)
		resources[i] = benchResource(name, "ec2.aws.upbound.io", "Subnet", name, map[string]any{"forProvider": map[string]any{"subnetIdRefs": names}}, nil, "")
	}
	return resources
}

// usingOneProviderConfig are a composed ProviderConfig and n Subnets that
// use it: n edges.
func usingOneProviderConfig(n int) []Resource {
	resources := []Resource{benchResource("config", "aws.upbound.io", providerConfig, "default", map[string]any{}, nil, "")}
	for i := 1; i <= n; i++ {
		resources = append(resources, benchResource(fmt.Sprintf("r%05d", i), "ec2.aws.upbound.io", "Subnet", fmt.Sprintf("subnet-%05d", i),
			map[string]any{"providerConfigRef": map[string]any{"name": "default"}}, nil, ""))
	}
	return resources
}

// writingOneSecret are a composed ProviderConfig and n Subnets that all
// write the Secret it reads its credentials from: n edges, all the
// ProviderConfig's.
func writingOneSecret(n int) []Resource {
	secret := map[string]any{"name": "conn", "namespace": "crossplane-system"}
	resources := []Resource{benchResource("config", "kubernetes.crossplane.io", providerConfig, "remote",
		map[string]any{"credentials": map[string]any{"source": "Secret", "secretRef": secret}}, nil, "")}
	for i := 1; i <= n; i++ {
		resources = append(resources, benchResource(fmt.Sprintf("r%05d", i), "ec2.aws.upbound.io", "Subnet", fmt.Sprintf("subnet-%05d", i),
			map[string]any{"writeConnectionSecretToRef": secret}, nil, ""))
	}
	return resources
}

func TestInferenceRefusesMoreThanMaxEdgesNamingTheKindTheFieldAndTheCount(t *testing.T) {
	cases := map[string]struct {
		reason    string
		resources []Resource
		edges     int
		err       string
	}{
		"ProviderConfigsUpToTheBound": {
			reason:    "As many resources using one ProviderConfig as the bound make as many edges, all found.",
			resources: usingOneProviderConfig(MaxEdges),
			edges:     MaxEdges,
		},
		"ProviderConfigsPastTheBound": {
			reason:    "One resource more makes one edge too many: the refusal names the kind, the resource and its field.",
			resources: usingOneProviderConfig(MaxEdges + 1),
			err:       "infer ProviderConfigs: inference found more than the 20000 dependencies one composite may have; the one past it is r20001's spec.providerConfigRef (composed resource 20002 of 20002): infer fewer kinds, or split the composite",
		},
		"CredentialsPastTheBound": {
			reason:    "One ProviderConfig whose Secret more resources write than the bound makes its edges past it.",
			resources: writingOneSecret(MaxEdges + 1),
			err:       "infer Credentials: inference found more than the 20000 dependencies one composite may have; the one past it is config's spec.credentials.secretRef → spec.writeConnectionSecretToRef (composed resource 1 of 20002): infer fewer kinds, or split the composite",
		},
		"ManagedReferencesUpToTheBound": {
			reason:    "250 Subnets naming the 100 before them make 19,950 edges, all found.",
			resources: referencing(250),
			edges:     19_950,
		},
		"ManagedReferencesPastTheBound": {
			reason:    "The 251st Subnet's names take the edges past the bound.",
			resources: referencing(251),
			err:       "infer ManagedReferences: inference found more than the 20000 dependencies one composite may have; the one past it is subnet-00250's spec.forProvider.subnetIdRefs (composed resource 251 of 251): infer fewer kinds, or split the composite",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			found, err := Edges(context.Background(), tc.resources, all)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("%s\nEdges(...): %v\nwant %s", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil || len(found.Edges) != tc.edges {
				t.Errorf("%s\nEdges(...) = %d edges, %v; want %d", tc.reason, len(found.Edges), err, tc.edges)
			}
		})
	}
}

// TestRefusingPastMaxEdgesCostsNoMoreThanFindingThemUpToIt infers from
// 1,000 Subnets that name 100 others each, 94,950 edges, and from 250, 19,950:
// refusing the first allocates about what finding the second does, for
// inference stops at the edge past the bound.
func TestRefusingPastMaxEdgesCostsNoMoreThanFindingThemUpToIt(t *testing.T) {
	up, past := referencing(250), referencing(1_000)
	var err error
	found := testing.AllocsPerRun(1, func() { _, err = Edges(context.Background(), up, all) })
	if err != nil {
		t.Fatal(err)
	}
	refused := testing.AllocsPerRun(1, func() { _, err = Edges(context.Background(), past, all) })
	if err == nil {
		t.Fatal("Edges(1,000 × 100) found them all, want a refusal")
	}
	if refused > 1.5*found {
		t.Errorf("refusing 94,950 edges made %.0f allocations, more than 1.5 times the %.0f of finding 19,950", refused, found)
	}
}
