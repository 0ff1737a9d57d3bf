package infer

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

var all = Kinds{ProviderConfigs: true, Credentials: true, ManagedReferences: true}

// res is a composed resource of the composition resource name, read from
// the YAML of its bodies, observed first.
func res(t *testing.T, name string, bodies ...string) Resource {
	t.Helper()
	r := Resource{Name: name}
	for _, b := range bodies {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(b), &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.Bodies = append(r.Bodies, request.ObjectOf(s))
	}
	r.Identity = r.Bodies[0].(request.Object).Identity()
	return r
}

type inferCase struct {
	reason       string
	resources    func(t *testing.T) []Resource
	kinds        Kinds
	want         []Edge
	outside      []Outside
	unidentified []Unidentified
}

func check(t *testing.T, cases map[string]inferCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Edges(context.Background(), tc.resources(t), tc.kinds)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Found{Edges: tc.want, Outside: tc.outside, Unidentified: tc.unidentified}, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nEdges(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

const (
	kubernetesPC = `{apiVersion: kubernetes.crossplane.io/v1alpha1, kind: ProviderConfig, metadata: {name: remote}, spec: {credentials: {source: Secret, secretRef: {name: kubeconfig, namespace: crossplane-system, key: kubeconfig}}}}`
	appObject    = `{apiVersion: kubernetes.crossplane.io/v1alpha2, kind: Object, metadata: {name: app}, spec: {providerConfigRef: {name: remote}}}`
)

func TestAResourceDependsOnTheProviderConfigItNames(t *testing.T) {
	check(t, map[string]inferCase{
		"Object": {
			reason: "An Object depends on the composed ProviderConfig of its own group that its providerConfigRef names.",
			resources: func(t *testing.T) []Resource {
				return []Resource{res(t, "app", appObject), res(t, "config", kubernetesPC)}
			},
			kinds: Kinds{ProviderConfigs: true},
			want:  []Edge{{Dependent: "app", Target: "config", Via: "spec.providerConfigRef"}},
		},
		"ParentGroup": {
			reason: "A managed resource's ProviderConfig is in its provider's group, which its own group ends in; the most specific group wins.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "subnet", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: a}, spec: {providerConfigRef: {name: default}}}`),
					res(t, "aws", `{apiVersion: aws.upbound.io/v1beta1, kind: ProviderConfig, metadata: {name: default}}`),
					res(t, "upbound", `{apiVersion: upbound.io/v1beta1, kind: ProviderConfig, metadata: {name: default}}`),
					res(t, "helm", `{apiVersion: helm.crossplane.io/v1beta1, kind: ProviderConfig, metadata: {name: default}}`),
				}
			},
			kinds: Kinds{ProviderConfigs: true},
			want:  []Edge{{Dependent: "subnet", Target: "aws", Via: "spec.providerConfigRef"}},
		},
		"NamespacedKind": {
			reason: "A namespaced managed resource's providerConfigRef says the kind: a ClusterProviderConfig, or a ProviderConfig in its own namespace only.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "cluster", `{apiVersion: eks.aws.m.upbound.io/v1beta1, kind: Cluster, metadata: {name: c, namespace: team}, spec: {providerConfigRef: {kind: ClusterProviderConfig, name: default}}}`),
					res(t, "node", `{apiVersion: eks.aws.m.upbound.io/v1beta1, kind: NodeGroup, metadata: {name: n, namespace: team}, spec: {providerConfigRef: {kind: ProviderConfig, name: default}}}`),
					res(t, "cpc", `{apiVersion: aws.m.upbound.io/v1beta1, kind: ClusterProviderConfig, metadata: {name: default}}`),
					res(t, "pc-other", `{apiVersion: aws.m.upbound.io/v1beta1, kind: ProviderConfig, metadata: {name: default, namespace: other}}`),
				}
			},
			kinds: Kinds{ProviderConfigs: true},
			want:  []Edge{{Dependent: "cluster", Target: "cpc", Via: "spec.providerConfigRef"}},
			outside: []Outside{{Dependent: "node", Config: object.Ref{
				APIVersion: "aws.m.upbound.io/v1beta1", Group: "aws.m.upbound.io", Kind: "ProviderConfig", Namespace: "team", Name: "default",
			}}},
		},
		"NotAsked": {
			reason: "Nothing is inferred of a kind the input doesn't ask for.",
			resources: func(t *testing.T) []Resource {
				return []Resource{res(t, "app", appObject), res(t, "config", kubernetesPC)}
			},
			kinds: Kinds{Credentials: true, ManagedReferences: true},
		},
		"NotComposed": {
			reason: "A ProviderConfig the composition doesn't compose makes no edge: it is outside the composite, named with the version of its provider's API, once however many bodies name it.",
			resources: func(t *testing.T) []Resource {
				return []Resource{res(t, "app", appObject, appObject)}
			},
			kinds: all,
			outside: []Outside{{Dependent: "app", Config: object.Ref{
				APIVersion: "kubernetes.crossplane.io/v1alpha1", Group: "kubernetes.crossplane.io", Kind: "ProviderConfig", Name: "remote",
			}}},
		},
		"NotComposedOfAnUnknownAPI": {
			reason: "A ProviderConfig outside the composite of a provider whose ProviderConfig API the function doesn't know is not named: Crossplane fails the reconcile when asked for a kind the cluster doesn't serve.",
			resources: func(t *testing.T) []Resource {
				return []Resource{res(t, "db", `{apiVersion: sql.example.org/v1, kind: Database, metadata: {name: db}, spec: {providerConfigRef: {name: default}}}`)}
			},
			kinds: all,
		},
		"NotComposedNamespacedInTheClusterScope": {
			reason: "A namespaced ProviderConfig outside the composite is in the dependent's namespace; a cluster-scoped dependent names none.",
			resources: func(t *testing.T) []Resource {
				return []Resource{res(t, "app", `{apiVersion: kubernetes.m.crossplane.io/v1alpha1, kind: Object, metadata: {name: app}, spec: {providerConfigRef: {kind: ProviderConfig, name: remote}}}`)}
			},
			kinds: all,
		},
	})
}

func TestAProviderConfigDependsOnWhatWritesItsCredentials(t *testing.T) {
	check(t, map[string]inferCase{
		"ObjectManifest": {
			reason: "A ProviderConfig depends on the Object whose manifest is its credentials Secret.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "config", kubernetesPC),
					res(t, "kubeconfig", `{apiVersion: kubernetes.crossplane.io/v1alpha2, kind: Object, metadata: {name: kc}, spec: {forProvider: {manifest: {apiVersion: v1, kind: Secret, metadata: {name: kubeconfig, namespace: crossplane-system}}}}}`),
					res(t, "elsewhere", `{apiVersion: kubernetes.crossplane.io/v1alpha2, kind: Object, metadata: {name: kc2}, spec: {forProvider: {manifest: {apiVersion: v1, kind: Secret, metadata: {name: kubeconfig, namespace: default}}}}}`),
				}
			},
			kinds: Kinds{Credentials: true},
			want:  []Edge{{Dependent: "config", Target: "kubeconfig", Via: "spec.credentials.secretRef → spec.forProvider.manifest"}},
		},
		"ConnectionSecret": {
			reason: "A ProviderConfig depends on the managed resource that writes its credentials Secret as its connection secret: v1's with a namespace, v2's in its own namespace.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "eks", `{apiVersion: eks.aws.upbound.io/v1beta1, kind: Cluster, metadata: {name: c}, spec: {writeConnectionSecretToRef: {name: kubeconfig, namespace: crossplane-system}}}`),
					res(t, "helm", `{apiVersion: helm.crossplane.io/v1beta1, kind: ProviderConfig, metadata: {name: c}, spec: {credentials: {source: Secret, secretRef: {name: kubeconfig, namespace: crossplane-system, key: kubeconfig}}}}`),
					res(t, "gke", `{apiVersion: container.gcp.m.upbound.io/v1beta1, kind: Cluster, metadata: {name: g, namespace: team}, spec: {writeConnectionSecretToRef: {name: gke-conn}}}`),
					res(t, "k8s", `{apiVersion: kubernetes.m.crossplane.io/v1alpha1, kind: ProviderConfig, metadata: {name: g, namespace: team}, spec: {credentials: {source: Secret, secretRef: {name: gke-conn, key: kubeconfig}}}}`),
				}
			},
			kinds: Kinds{Credentials: true},
			want: []Edge{
				{Dependent: "helm", Target: "eks", Via: "spec.credentials.secretRef → spec.writeConnectionSecretToRef"},
				{Dependent: "k8s", Target: "gke", Via: "spec.credentials.secretRef → spec.writeConnectionSecretToRef"},
			},
		},
		"ComposedSecretAndIdentity": {
			reason: "A ProviderConfig depends on a composed Secret it reads its credentials or its identity from.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "config", `{apiVersion: kubernetes.crossplane.io/v1alpha1, kind: ProviderConfig, metadata: {name: remote}, spec: {identity: {source: Secret, secretRef: {name: token, namespace: ops}}}}`),
					res(t, "token", `{apiVersion: v1, kind: Secret, metadata: {name: token, namespace: ops}}`),
				}
			},
			kinds: Kinds{Credentials: true},
			want:  []Edge{{Dependent: "config", Target: "token", Via: "spec.identity.secretRef → Secret"}},
		},
		"NotAProviderConfig": {
			reason: "Only a ProviderConfig's credentials make an edge.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "thing", `{apiVersion: example.org/v1, kind: Thing, metadata: {name: t}, spec: {credentials: {secretRef: {name: token, namespace: ops}}}}`),
					res(t, "token", `{apiVersion: v1, kind: Secret, metadata: {name: token, namespace: ops}}`),
				}
			},
			kinds: all,
		},
	})
}

func TestAManagedResourceDependsOnWhatItsForProviderReferences(t *testing.T) {
	vpc := `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: net, labels: {net: main}, annotations: {crossplane.io/external-name: vpc-123}}}`
	check(t, map[string]inferCase{
		"RefAndRefs": {
			reason: "A …Ref and each of a …Refs name a composed resource, nested fields included, in spec.forProvider and spec.initProvider.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "nodes", `{apiVersion: eks.aws.upbound.io/v1beta1, kind: NodeGroup, metadata: {name: n}, spec: {forProvider: {clusterNameRef: {name: c}, nodeRoleArnRef: {name: r}, subnetIdRefs: [{name: a}, {name: b}]}, initProvider: {launchTemplate: [{idRef: {name: lt}}]}}}`),
					res(t, "cluster", `{apiVersion: eks.aws.upbound.io/v1beta1, kind: Cluster, metadata: {name: c}}`),
					res(t, "role", `{apiVersion: iam.aws.upbound.io/v1beta1, kind: Role, metadata: {name: r}}`),
					res(t, "subnet-a", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: a}}`),
					res(t, "subnet-b", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: b}}`),
					res(t, "template", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: LaunchTemplate, metadata: {name: lt}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want: []Edge{
				{Dependent: "nodes", Target: "cluster", Via: "spec.forProvider.clusterNameRef"},
				{Dependent: "nodes", Target: "role", Via: "spec.forProvider.nodeRoleArnRef"},
				{Dependent: "nodes", Target: "subnet-a", Via: "spec.forProvider.subnetIdRefs"},
				{Dependent: "nodes", Target: "subnet-b", Via: "spec.forProvider.subnetIdRefs"},
				{Dependent: "nodes", Target: "template", Via: "spec.initProvider.launchTemplate[0].idRef"},
			},
		},
		"ResolvedSelector": {
			reason: "A …Selector's target is the resource whose external name the resolved field holds, with every label the selector matches.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "subnet", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: s}, spec: {forProvider: {vpcId: vpc-123, vpcIdSelector: {matchControllerRef: true, matchLabels: {net: main}}}}}`),
					res(t, "vpc", vpc),
					res(t, "other", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: other, annotations: {crossplane.io/external-name: vpc-123}}}`),
					res(t, "pending", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: RouteTable, metadata: {name: rt}, spec: {forProvider: {vpcIdSelector: {matchLabels: {net: main}}}}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want:  []Edge{{Dependent: "subnet", Target: "vpc", Via: "spec.forProvider.vpcIdSelector"}},
		},
		"EachResolvedValueAlone": {
			reason: "Each value a selector resolved to is told apart by kind alone: the kind the field names wins among one value's resources only.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "nodes", `{apiVersion: eks.aws.upbound.io/v1beta1, kind: NodeGroup, metadata: {name: n}, spec: {forProvider: {subnetIds: [a, b], subnetIdSelector: {matchControllerRef: true}}}}`),
					res(t, "subnet-a", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: sa, annotations: {crossplane.io/external-name: a}}}`),
					res(t, "group-a", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: SecurityGroup, metadata: {name: ga, annotations: {crossplane.io/external-name: a}}}`),
					res(t, "group-b", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: SecurityGroup, metadata: {name: gb, annotations: {crossplane.io/external-name: b}}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want: []Edge{
				{Dependent: "nodes", Target: "subnet-a", Via: "spec.forProvider.subnetIdSelector"},
				{Dependent: "nodes", Target: "group-b", Via: "spec.forProvider.subnetIdSelector"},
			},
		},
		"EmptyValueFallsBackToThePlural": {
			reason: "A selector whose singular field is empty resolved its plural.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "nodes", `{apiVersion: eks.aws.upbound.io/v1beta1, kind: NodeGroup, metadata: {name: n}, spec: {forProvider: {subnetId: "", subnetIds: [a], subnetIdSelector: {matchControllerRef: true}}}}`),
					res(t, "subnet-a", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: sa, annotations: {crossplane.io/external-name: a}}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want:  []Edge{{Dependent: "nodes", Target: "subnet-a", Via: "spec.forProvider.subnetIdSelector"}},
		},
		"EveryObjectIsWalked": {
			reason: "The walk enters every object, a …Ref's own value too.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "route", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Route, metadata: {name: r}, spec: {forProvider: {tableRef: {name: t, extra: {gatewayIdRef: {name: g}}}}}}`),
					res(t, "table", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: RouteTable, metadata: {name: t}}`),
					res(t, "gateway", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: InternetGateway, metadata: {name: g}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want: []Edge{
				{Dependent: "route", Target: "table", Via: "spec.forProvider.tableRef"},
				{Dependent: "route", Target: "gateway", Via: "spec.forProvider.tableRef.extra.gatewayIdRef"},
			},
		},
		"ObservedResolvedRef": {
			reason: "What the provider resolved is observed: a Ref set from a Selector makes the edge, and the observed field's path comes first.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "subnet",
						`{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: s}, spec: {forProvider: {vpcIdRef: {name: net}, vpcIdSelector: {matchLabels: {net: main}}}}}`,
						`{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: s}, spec: {forProvider: {vpcIdSelector: {matchLabels: {net: main}}}}}`),
					res(t, "vpc", vpc),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want:  []Edge{{Dependent: "subnet", Target: "vpc", Via: "spec.forProvider.vpcIdRef"}},
		},
		"SameNameOtherKinds": {
			reason: "Where resources of several kinds share the name, the kind the field's name holds wins; ProviderConfigs are never a reference's target, nor the resource itself; a field that names none of their kinds infers nothing, and is unidentified.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "subnet", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Subnet, metadata: {name: main}, spec: {forProvider: {vpcIdRef: {name: main}, zoneRef: {name: main}}}}`),
					res(t, "vpc", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: main}}`),
					res(t, "table", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: RouteTable, metadata: {name: main}}`),
					res(t, "pc", `{apiVersion: aws.upbound.io/v1beta1, kind: ProviderConfig, metadata: {name: main}}`),
				}
			},
			kinds:        Kinds{ManagedReferences: true},
			want:         []Edge{{Dependent: "subnet", Target: "vpc", Via: "spec.forProvider.vpcIdRef"}},
			unidentified: []Unidentified{{Dependent: "subnet", Via: "spec.forProvider.zoneRef"}},
		},
	})
}

// aws is a managed resource of an Upbound AWS provider's service, named
// after the composite as many compositions name everything, with more of
// its body in YAML.
func aws(t *testing.T, name, service, kind, more string) Resource {
	t.Helper()
	return res(t, name, `{apiVersion: `+service+`.aws.upbound.io/v1beta1, kind: `+kind+`, metadata: {name: xr`+more+`}`)
}

func TestAReferenceIsIdentifiedByValueThenByKind(t *testing.T) {
	check(t, map[string]inferCase{
		"TheOnlyCandidateByName": {
			reason: "A …Ref whose name one composed resource has (the dependent and ProviderConfigs aside) means it, whatever its kind.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					aws(t, "route", "ec2", "Route", `}, spec: {forProvider: {gatewayIdRef: {name: xr}}}}`),
					aws(t, "gateway", "ec2", "InternetGateway", `}}`),
					res(t, "pc", `{apiVersion: aws.upbound.io/v1beta1, kind: ProviderConfig, metadata: {name: xr}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want:  []Edge{{Dependent: "route", Target: "gateway", Via: "spec.forProvider.gatewayIdRef"}},
		},
		"TheResolvedValueSinglesItOut": {
			reason: "Of the resources of the name, the one whose ID the provider copied into the resolved field (observed only) is the target, for the desired body's …Ref too; a kind the field doesn't name (gatewayIdRef, an InternetGateway) doesn't matter.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					aws(t, "route", "ec2", "Route", `}, spec: {forProvider: {gatewayIdRef: {name: xr}, gatewayId: igw-1}}}`),
					aws(t, "gateway", "ec2", "InternetGateway", `}, status: {atProvider: {id: igw-1}}}`),
					aws(t, "nat", "ec2", "NATGateway", `}, status: {atProvider: {id: nat-1}}}`),
					aws(t, "vpc", "ec2", "VPC", `, annotations: {crossplane.io/external-name: vpc-1}}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want:  []Edge{{Dependent: "route", Target: "gateway", Via: "spec.forProvider.gatewayIdRef"}},
		},
		"AValueInAnyBody": {
			reason: "The resolved field is read in every body at the reference's place: the desired body's …Refs and …Ref are identified by what the observed body holds, an external name or an ARN, where kinds can't tell.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "nodes",
						`{apiVersion: eks.aws.upbound.io/v1beta1, kind: NodeGroup, metadata: {name: n}, spec: {forProvider: {scaling: [{subnetIds: [subnet-1]}], targetArn: "arn:role"}}}`,
						`{apiVersion: eks.aws.upbound.io/v1beta1, kind: NodeGroup, metadata: {name: n}, spec: {forProvider: {scaling: [{subnetIdRefs: [{name: xr}]}], targetArnRef: {name: xr}}}}`),
					aws(t, "subnet", "ec2", "Subnet", `, annotations: {crossplane.io/external-name: subnet-1}}}`),
					res(t, "azure-subnet", `{apiVersion: network.azure.upbound.io/v1beta1, kind: Subnet, metadata: {name: xr}}`),
					aws(t, "role", "iam", "Role", `}, status: {atProvider: {arn: "arn:role"}}}`),
					aws(t, "policy", "iam", "Policy", `}, status: {atProvider: {arn: "arn:policy"}}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want: []Edge{
				{Dependent: "nodes", Target: "subnet", Via: "spec.forProvider.scaling[0].subnetIdRefs"},
				{Dependent: "nodes", Target: "role", Via: "spec.forProvider.targetArnRef"},
			},
		},
		"TheKindAmongThoseOfTheValue": {
			reason: "A cluster, its auth and its node group may all carry the composite's name as external name: of those the value leaves, the kind clusterNameRef names is the target.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					aws(t, "addon", "eks", "Addon", `}, spec: {forProvider: {clusterNameRef: {name: xr}, clusterName: xr}}}`),
					aws(t, "cluster", "eks", "Cluster", `, annotations: {crossplane.io/external-name: xr}}}`),
					aws(t, "auth", "eks", "ClusterAuth", `, annotations: {crossplane.io/external-name: xr}}}`),
					aws(t, "nodes", "eks", "NodeGroup", `, annotations: {crossplane.io/external-name: xr}}}`),
					aws(t, "role", "iam", "Role", `}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want:  []Edge{{Dependent: "addon", Target: "cluster", Via: "spec.forProvider.clusterNameRef"}},
		},
		"TheKindWhenNoValueIsThereYet": {
			reason: "Before the provider resolved it, or when no candidate holds the value, the kind the field names singles out the target: vpcIdRef a VPC, executionRoleArnRef a Role.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					aws(t, "subnet", "ec2", "Subnet", `}, spec: {forProvider: {vpcIdRef: {name: xr}}}}`),
					aws(t, "task", "ecs", "TaskDefinition", `}, spec: {forProvider: {executionRoleArnRef: {name: xr}, executionRoleArn: "arn:elsewhere"}}}`),
					aws(t, "vpc", "ec2", "VPC", `}}`),
					aws(t, "role", "iam", "Role", `}}`),
					aws(t, "table", "ec2", "RouteTable", `}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want: []Edge{
				{Dependent: "subnet", Target: "vpc", Via: "spec.forProvider.vpcIdRef"},
				{Dependent: "task", Target: "role", Via: "spec.forProvider.executionRoleArnRef"},
			},
		},
		"TheKindIsWholeWordsThatEndTheField": {
			reason: "routeTableIdRef names a RouteTable, not the Route whose word it holds; gatewayIdRef doesn't name an InternetGateway, so of one and a VPC nothing singles out its target, and the field is unidentified once though both bodies hold it.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					res(t, "assoc",
						`{apiVersion: ec2.aws.upbound.io/v1beta1, kind: MainRouteTableAssociation, metadata: {name: xr}, spec: {forProvider: {routeTableIdRef: {name: xr}}}}`,
						`{apiVersion: ec2.aws.upbound.io/v1beta1, kind: MainRouteTableAssociation, metadata: {name: xr}, spec: {forProvider: {routeTableIdRef: {name: xr}}}}`),
					aws(t, "route", "ec2", "Route", `}, spec: {forProvider: {gatewayIdRef: {name: xr}}}}`),
					aws(t, "table", "ec2", "RouteTable", `}}`),
					aws(t, "gateway", "ec2", "InternetGateway", `}}`),
					res(t, "route-2",
						`{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Route, metadata: {name: r2}, spec: {forProvider: {gatewayIdRef: {name: xr}}}}`,
						`{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Route, metadata: {name: r2}, spec: {forProvider: {gatewayIdRef: {name: xr}}}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want:  []Edge{{Dependent: "assoc", Target: "table", Via: "spec.forProvider.routeTableIdRef"}},
			unidentified: []Unidentified{
				{Dependent: "route", Via: "spec.forProvider.gatewayIdRef"},
				{Dependent: "route-2", Via: "spec.forProvider.gatewayIdRef"},
			},
		},
		"ASelectorByTheSameRule": {
			reason: "A resolved …Selector's candidates are those that carry its labels: of two VPCs, the one whose ID the field holds; a value no candidate holds leaves the kind the field names; a selector not resolved yet is no reference yet.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					aws(t, "subnet", "ec2", "Subnet", `}, spec: {forProvider: {vpcIdSelector: {matchLabels: {net: a}}, vpcId: vpc-2}}}`),
					aws(t, "group", "ec2", "SecurityGroupRule", `}, spec: {forProvider: {securityGroupIdSelector: {matchLabels: {net: a}}, securityGroupId: sg-9}}}`),
					aws(t, "pending", "ec2", "Route", `}, spec: {forProvider: {vpcIdSelector: {matchLabels: {net: b}}}}}`),
					res(t, "vpc-1", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: one, labels: {net: a}, annotations: {crossplane.io/external-name: vpc-1}}}`),
					res(t, "vpc-2", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: two, labels: {net: a}}, status: {atProvider: {id: vpc-2}}}`),
					res(t, "sg", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: SecurityGroup, metadata: {name: sg, labels: {net: a}}}`),
					res(t, "vpc-b1", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: b1, labels: {net: b}}}`),
					res(t, "vpc-b2", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: b2, labels: {net: b}}}`),
				}
			},
			kinds: Kinds{ManagedReferences: true},
			want: []Edge{
				{Dependent: "subnet", Target: "vpc-2", Via: "spec.forProvider.vpcIdSelector"},
				{Dependent: "group", Target: "sg", Via: "spec.forProvider.securityGroupIdSelector"},
			},
		},
		"EachValueOfASelectorOnItsOwn": {
			reason: "A selector resolved to two values: the first, which no candidate holds, leaves a kind the field doesn't name, so it is unidentified; the second still singles out the Cluster that holds it.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					aws(t, "lb", "ec2", "LB", `}, spec: {forProvider: {subnetIdSelector: {matchLabels: {net: b}}, subnetIds: [ext-1, ext-2]}}}`),
					res(t, "cluster", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: Cluster, metadata: {name: c, labels: {net: b}, annotations: {crossplane.io/external-name: ext-2}}}`),
				}
			},
			kinds:        Kinds{ManagedReferences: true},
			want:         []Edge{{Dependent: "lb", Target: "cluster", Via: "spec.forProvider.subnetIdSelector"}},
			unidentified: []Unidentified{{Dependent: "lb", Via: "spec.forProvider.subnetIdSelector"}},
		},
		"ASelectorNothingSinglesOut": {
			reason: "Two VPCs carry the selector's labels and the ID it resolved to: neither value nor kind tells them apart, so the field is unidentified.",
			resources: func(t *testing.T) []Resource {
				return []Resource{
					aws(t, "subnet", "ec2", "Subnet", `}, spec: {forProvider: {vpcIdSelector: {matchLabels: {net: a}}, vpcId: vpc-1}}}`),
					res(t, "vpc-1", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: one, labels: {net: a}, annotations: {crossplane.io/external-name: vpc-1}}}`),
					res(t, "vpc-2", `{apiVersion: ec2.aws.upbound.io/v1beta1, kind: VPC, metadata: {name: two, labels: {net: a}, annotations: {crossplane.io/external-name: vpc-1}}}`),
				}
			},
			kinds:        Kinds{ManagedReferences: true},
			unidentified: []Unidentified{{Dependent: "subnet", Via: "spec.forProvider.vpcIdSelector"}},
		},
	})
}

func TestTheKindsWordsEndTheFieldsWords(t *testing.T) {
	cases := map[string]struct {
		field, kind string
		want        bool
	}{
		"AnAcronymKind":             {"vpcIdRef", "VPC", true},
		"NameBeforeRef":             {"clusterNameRef", "Cluster", true},
		"ArnBeforeRef":              {"executionRoleArnRef", "Role", true},
		"IdsBeforeRefs":             {"vpcSecurityGroupIdRefs", "SecurityGroup", true},
		"ASelector":                 {"subnetIdSelector", "Subnet", true},
		"AnAcronymRunStartsAKind":   {"dbSubnetGroupNameRef", "DBSubnetGroup", true},
		"AFirstWordIsNoKind":        {"routeTableIdRef", "Route", false},
		"AKindOfMoreWordsThanField": {"gatewayIdRef", "InternetGateway", false},
		"ALastWordOfTheKindAlone":   {"gatewayIdRef", "Gateway", true},
		"NoWordsLeft":               {"idRef", "Id", false},
		"PartOfAWordIsNone":         {"subnetworkRef", "Subnet", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := names(fieldWords(tc.field), tc.kind); got != tc.want {
				t.Errorf("names(fieldWords(%q), %q) = %t, want %t", tc.field, tc.kind, got, tc.want)
			}
		})
	}
}
