package oracle

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// set sets the field at the dotted path, making the maps on the way.
func (r res) set(path string, v any) res {
	harness.Set(r, v, strings.Split(path, ".")...)
	return r
}

func (r res) in(namespace string) res { r.md()["namespace"] = namespace; return r }

// external gives a managed resource the external name a …Selector resolves
// to, and its labels as key-value pairs.
func (r res) external(name string, kv ...string) res {
	r.set("metadata.annotations", map[string]any{ExternalNameAnnotation: name})
	labels := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		labels[kv[i]] = kv[i+1]
	}
	return r.set("metadata.labels", labels)
}

// secretRef is a reference to a Secret; "" leaves the namespace out.
func secretRef(name, namespace string) map[string]any {
	ref := map[string]any{"name": name}
	if namespace != "" {
		ref["namespace"] = namespace
	}
	return ref
}

// manifestOf is an Object's manifest of a core object.
func manifestOf(kind, name, namespace string) map[string]any {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md}
}

func pcRef(name string) map[string]any { return map[string]any{"name": name} }

func refs(names ...string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"name": n}
	}
	return out
}

// The resources the inference cases compose.
var (
	kubernetesPC = func(name string) res { return resource("kubernetes.crossplane.io/v1alpha1", "ProviderConfig", name) }
	nsKubernetes = func(name string) res { return resource("kubernetes.m.crossplane.io/v1alpha1", "ProviderConfig", name) }
	ec2          = func(kind, name string) res { return resource("ec2.aws.upbound.io/v1beta1", kind, name) }
	secret       = func(name string) res { return resource("v1", "Secret", name) }
)

var inferAll = []string{InferProviderConfigs, InferCredentials, InferManagedReferences}

func TestInference(t *testing.T) {
	no, yes := false, true
	// usedProviderConfig is an Object that uses a composed ProviderConfig,
	// both observed; with usage, the function's observed Usage of the one by
	// the other.
	usedProviderConfig := func(infer []string, usage bool) State {
		observed := map[string]res{
			"obj": object("obj").uid("u-obj").set("spec.providerConfigRef", pcRef("pc")),
			"pc":  kubernetesPC("pc").uid("u-pc"),
		}
		if usage {
			observed["usage"] = res{"apiVersion": ProtectionAPI, "kind": "ClusterUsage",
				"metadata": map[string]any{"name": "u", "uid": "u-usage", "labels": map[string]any{UsageLabel: "true"}},
				"spec": map[string]any{
					"of": map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "resourceRef": map[string]any{"name": "pc"}},
					"by": map[string]any{"apiVersion": ClusterObjectGroup + "/v1alpha2", "kind": ObjectKind, "resourceRef": map[string]any{"name": "obj"}},
				}}
			observed["pc"] = observed["pc"].fin(f("u-obj"))
		}
		return state(Input{Infer: infer}, map[string]res{
			"obj": object("obj").set("spec.providerConfigRef", pcRef("pc")),
			"pc":  kubernetesPC("pc"),
		}, observed)
	}
	pcUsage := map[string]any{
		"apiVersion": ProtectionAPI, "kind": "ClusterUsage", "metadata": map[string]any{},
		"spec": map[string]any{
			"of":             map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha1", "kind": "ProviderConfig", "resourceRef": map[string]any{"name": "pc"}},
			"by":             map[string]any{"apiVersion": ClusterObjectGroup + "/v1alpha2", "kind": ObjectKind, "resourceRef": map[string]any{"name": "obj"}},
			"reason":         "obj depends on pc (function-dependencies)",
			"replayDeletion": true,
		},
	}
	// network is a VPC, a Subnet that references it by name, a Cluster by
	// a list of names, a Route by a selector, and a SecurityGroup whose
	// selector's labels the VPC lacks; and an aws ProviderConfig, which the
	// Subnet names in a …Ref of its own.
	network := func(infer []string) State {
		return state(Input{Infer: infer}, map[string]res{
			"vpc":    ec2("VPC", "vpc-main").external("vpc-123", "net", "a"),
			"subnet": ec2("Subnet", "subnet-a").set("spec.forProvider.vpcIdRef", pcRef("vpc-main")).set("spec.forProvider.configRef", pcRef("default")),
			"cluster": resource("eks.aws.upbound.io/v1beta1", "Cluster", "c").
				set("spec.forProvider.vpcConfig", []any{map[string]any{"subnetIdRefs": refs("subnet-a")}}),
			"route": ec2("Route", "r").set("spec.forProvider.vpcIdSelector", map[string]any{"matchLabels": map[string]any{"net": "a"}}).set("spec.forProvider.vpcId", "vpc-123"),
			"sg":    ec2("SecurityGroup", "sg").set("spec.initProvider.vpcIdSelector", map[string]any{"matchLabels": map[string]any{"net": "b"}}).set("spec.initProvider.vpcId", "vpc-123"),
			"aws":   resource("aws.upbound.io/v1beta1", "ProviderConfig", "default"),
		}, nil)
	}
	cases := map[string]struct {
		reason string
		state  State
		want   want
	}{
		"NothingIsInferredWithoutInfer": {
			reason: "With infer empty, an Object naming a composed ProviderConfig makes no edge, no Usage and no label, and the summary says what it said before.",
			state:  usedProviderConfig(nil, false),
			want: want{
				edges: []string{}, usages: []map[string]any{}, labels: map[string]map[string]string{},
				summaryMessage: "2 composed resources, 0 references between them and none to external objects; nothing added",
				results:        []Result{},
			},
		},
		"AnInferredEdgeGetsAUsageWhateverProtectionSays": {
			reason: "With the default protection: Finalizers, the inferred edge of an Object to its ProviderConfig gets a ClusterUsage, no reference finalizer, and the Object the dependent's label; the summary counts the edge inferred and protected by a Usage.",
			state:  usedProviderConfig(inferAll, false),
			want: want{
				edges:          []string{"obj → pc: declared (inferred: spec.providerConfigRef)"},
				usages:         []map[string]any{pcUsage},
				finalizers:     map[string][]string{"obj": nil, "pc": nil},
				labels:         map[string]map[string]string{"obj": {DependentLabel: "u-app"}},
				condition:      "False UsagesPending: Usages are declared but not yet in force, or wait for both their ends to exist: obj → pc",
				summaryMessage: "2 composed resources, 1 reference between them (1 of them inferred, 1 by Usages) and none to external objects; 1 Usage added",
				results:        []Result{{Normal, "Summary"}},
			},
		},
		"AnObservedUsageProtectsAnInferredEdgeAndNoFinalizerDoes": {
			reason: "Once its Usage is observed the inferred edge is protected; the Object's reference finalizer on the ProviderConfig names no edge a finalizer protects, so it is stale.",
			state:  usedProviderConfig(inferAll, true),
			want: want{
				edges:      []string{"obj → pc: protected (inferred: spec.providerConfigRef)"},
				observedAs: []string{"usage"},
				stale:      []string{"pc " + f("u-obj")},
				results:    []Result{{Warning, "StaleFinalizer"}},
			},
		},
		"OnlyTheNamedRulesInfer": {
			reason: "infer: [Credentials] leaves an Object's providerConfigRef alone.",
			state:  usedProviderConfig([]string{InferCredentials, InferManagedReferences}, false),
			want:   want{edges: []string{}, usages: []map[string]any{}},
		},
		"AProviderConfigOfTheDependentsOwnGroup": {
			reason: "An Object's providerConfigRef names a kubernetes.crossplane.io ProviderConfig: one of another group of that name is none of its business.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"obj":      object("obj").set("spec.providerConfigRef", pcRef("pc")),
				"pc":       kubernetesPC("pc"),
				"other-pc": resource("aws.upbound.io/v1beta1", "ProviderConfig", "pc"),
			}, nil),
			want: want{edges: []string{"obj → pc: pending (inferred: spec.providerConfigRef)"}},
		},
		"TheProviderConfigOfTheLongestGroupTheDependentsEndsIn": {
			reason: "An ec2.aws.upbound.io Subnet uses the aws.upbound.io ProviderConfig rather than an upbound.io one of the same name, and never one of a group its own doesn't end in.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"subnet":  ec2("Subnet", "s").set("spec.providerConfigRef", pcRef("default")),
				"aws":     resource("aws.upbound.io/v1beta1", "ProviderConfig", "default"),
				"upbound": resource("upbound.io/v1", "ProviderConfig", "default"),
				"s2":      resource("s2.aws.upbound.io/v1", "ProviderConfig", "default"),
			}, nil),
			want: want{edges: []string{"subnet → aws: pending (inferred: spec.providerConfigRef)"}},
		},
		"AClusterProviderConfigOfANamespacedResourceCanHaveNoUsage": {
			reason: "A namespaced eks.aws.m.upbound.io Cluster's providerConfigRef of kind ClusterProviderConfig names the cluster-scoped aws.m.upbound.io one, not a ProviderConfig of that name; no Usage can express a namespaced resource using a cluster-scoped one: UsageImpossible.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"cluster": resource("eks.aws.m.upbound.io/v1beta1", "Cluster", "c").in("x").set("spec.providerConfigRef", map[string]any{"kind": "ClusterProviderConfig", "name": "n"}),
				"cpc":     resource("aws.m.upbound.io/v1beta1", "ClusterProviderConfig", "n"),
				"pc":      resource("aws.m.upbound.io/v1beta1", "ProviderConfig", "n").in("x"),
			}, map[string]res{
				"cluster": resource("eks.aws.m.upbound.io/v1beta1", "Cluster", "c").in("x").uid("u-cluster"),
				"cpc":     resource("aws.m.upbound.io/v1beta1", "ClusterProviderConfig", "n").uid("u-cpc"),
			}),
			want: want{
				edges:      []string{"cluster → cpc: exposed (inferred: spec.providerConfigRef)"},
				impossible: []string{"cluster → cpc"},
				results:    []Result{{Warning, "UsageImpossible"}},
			},
		},
		"AProviderConfigInAnotherNamespaceIsNotUsed": {
			reason: "A namespaced ProviderConfig is used only by resources of its namespace.",
			state: namespaced(state(Input{Infer: inferAll}, map[string]res{
				"obj":   nsObject("obj").inTeam().set("spec.providerConfigRef", pcRef("pc")),
				"pc":    nsKubernetes("pc"),
				"other": nsKubernetes("pc").in("other"),
			}, nil)),
			want: want{edges: []string{"obj → pc: pending (inferred: spec.providerConfigRef)"}},
		},
		"CredentialsFromEveryWriterOfTheSecret": {
			reason: "A ProviderConfig depends on each composed resource that writes the Secret its credentials name: the Secret itself, a resource whose connection secret it is, an Object whose manifest it is; not on a Secret of another namespace, a ConfigMap of its name, or an Object managing that ConfigMap.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"pc":        kubernetesPC("pc").set("spec.credentials.secretRef", secretRef("creds", "ns-a")),
				"secret":    secret("creds").in("ns-a"),
				"db":        resource("rds.aws.upbound.io/v1beta1", "Instance", "db").set("spec.writeConnectionSecretToRef", secretRef("creds", "ns-a")),
				"maker":     object("maker").set("spec.forProvider.manifest", manifestOf("Secret", "creds", "ns-a")),
				"elsewhere": secret("creds").in("ns-b"),
				"cm":        resource("v1", "ConfigMap", "creds").in("ns-a"),
				"cm-maker":  object("cm-maker").set("spec.forProvider.manifest", manifestOf("ConfigMap", "creds", "ns-a")),
			}, nil),
			want: want{edges: []string{
				"pc → db: pending (inferred: spec.credentials.secretRef → spec.writeConnectionSecretToRef)",
				"pc → maker: pending (inferred: spec.credentials.secretRef → spec.forProvider.manifest)",
				"pc → secret: pending (inferred: spec.credentials.secretRef → Secret)",
			}},
		},
		"AnIdentitySecretInTheProviderConfigsNamespace": {
			reason: "spec.identity.secretRef counts as the credentials do; without a namespace it names one in the ProviderConfig's, and a manifest without one names one in the Object's.",
			state: namespaced(state(Input{Infer: inferAll}, map[string]res{
				"pc": nsKubernetes("pc").set("spec.identity.secretRef", secretRef("id", "")),
				"w":  nsObject("w").set("spec.forProvider.manifest", manifestOf("Secret", "id", "")),
			}, nil)),
			want: want{edges: []string{"pc → w: pending (inferred: spec.identity.secretRef → spec.forProvider.manifest)"}},
		},
		"ASecretOfNoNamespaceIsNone": {
			reason: "A cluster-scoped ProviderConfig's secretRef without a namespace names no Secret.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"pc":     kubernetesPC("pc").set("spec.credentials.secretRef", secretRef("creds", "")),
				"secret": secret("creds").in("ns-a"),
			}, nil),
			want: want{edges: []string{}},
		},
		"ManagedReferencesByRefRefsAndSelector": {
			reason: "A …Ref's name, each name of a …Refs list nested in a list, and a …Selector's resolved value matched with its labels against external names, each by its field's path; a ProviderConfig a …Ref names and a selector whose labels the resource lacks make none.",
			state:  network([]string{InferManagedReferences}),
			want: want{edges: []string{
				"cluster → subnet: pending (inferred: spec.forProvider.vpcConfig[0].subnetIdRefs)",
				"route → vpc: pending (inferred: spec.forProvider.vpcIdSelector)",
				"subnet → vpc: pending (inferred: spec.forProvider.vpcIdRef)",
			}},
		},
		"ASelectorResolvedToAList": {
			reason: "A …Selector whose field is unset resolves through its plural: each value names a resource.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"lb": ec2("LB", "lb").set("spec.forProvider.subnetIdSelector", map[string]any{}).set("spec.forProvider.subnetIds", []any{"s-1", "s-2"}),
				"s1": ec2("Subnet", "one").external("s-1"),
				"s2": ec2("Subnet", "two").external("s-2"),
				"s3": ec2("Subnet", "three").external("s-3"),
			}, nil),
			want: want{edges: []string{"lb → s1: pending (inferred: spec.forProvider.subnetIdSelector)", "lb → s2: pending (inferred: spec.forProvider.subnetIdSelector)"}},
		},
		"AReferenceToNothingComposedNamesNothing": {
			reason: "A …Ref whose name no composed resource has, one without a name, and a …Refs entry of neither make no edge, to nothing of the namespace.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"vpc": ec2("VPC", "main"),
				"subnet": ec2("Subnet", "s").set("spec.forProvider.vpcIdRef", pcRef("elsewhere")).set("spec.forProvider.networkRef", map[string]any{}).
					set("spec.initProvider.subnetIdRefs", []any{map[string]any{"name": "elsewhere"}, map[string]any{}}),
			}, nil),
			want: want{edges: []string{}},
		},
		"EachResolvedValueIsToldApartAlone": {
			reason: "A subnetIdSelector resolved to two values: the one that only a VPC's external name has still names the VPC, though the other's Subnet is of the kind the field's name holds.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"lb":     ec2("LB", "lb").set("spec.forProvider.subnetIdSelector", map[string]any{}).set("spec.forProvider.subnetIds", []any{"ext-1", "ext-2"}),
				"vpc":    ec2("VPC", "v").external("ext-1"),
				"subnet": ec2("Subnet", "s").external("ext-2"),
			}, nil),
			want: want{edges: []string{"lb → subnet: pending (inferred: spec.forProvider.subnetIdSelector)", "lb → vpc: pending (inferred: spec.forProvider.subnetIdSelector)"}},
		},
		// The two readings below are the oracle's of what the spec leaves
		// open; the function reads both so.
		"AnEmptyResolvedValueFallsBackToThePlural": {
			reason: "values = M[base] or else M[base+\"s\"]: a singular that holds no value leaves the plural's.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"lb": ec2("LB", "lb").set("spec.forProvider.subnetIdSelector", map[string]any{}).set("spec.forProvider.subnetId", "").
					set("spec.forProvider.subnetIds", []any{"s-1"}),
				"s1": ec2("Subnet", "one").external("s-1"),
			}, nil),
			want: want{edges: []string{"lb → s1: pending (inferred: spec.forProvider.subnetIdSelector)"}},
		},
		"AManifestOrValuesHoldNoReferences": {
			reason: "An Object's manifest and a Release's values are content the provider passes on: a Deployment's secretKeyRef there names no composed resource.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"app": object("app").set("spec.forProvider.manifest", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"secretKeyRef": pcRef("main")}}).
					set("spec.forProvider.values", map[string]any{"vpcIdRef": pcRef("main")}),
				"vpc": object("main"),
			}, nil),
			want: want{edges: []string{}},
		},
		"TheWalkEntersEveryMap": {
			reason: "The walk is recursive over maps and lists: a …Ref inside another …Ref's value counts, at its own path.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"lb":  ec2("LB", "lb").set("spec.forProvider.fooRef", map[string]any{"name": "elsewhere", "vpcIdRef": pcRef("main")}),
				"vpc": ec2("VPC", "main"),
			}, nil),
			want: want{edges: []string{"lb → vpc: pending (inferred: spec.forProvider.fooRef.vpcIdRef)"}},
		},
		"TheFieldsNameTellsKindsApart": {
			reason: "Of two resources of one name, vpcIdRef means the VPC; networkRef names neither kind, so nothing singles out its target: no edge, and the summary counts it, with no result of its own.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"vpc":    ec2("VPC", "main"),
				"ns":     resource("v1", "Namespace", "main"),
				"subnet": ec2("Subnet", "s").set("spec.forProvider.vpcIdRef", pcRef("main")),
				"thing":  ec2("Thing", "t").set("spec.forProvider.networkRef", pcRef("main")),
			}, nil),
			want: want{
				edges:          []string{"subnet → vpc: pending (inferred: spec.forProvider.vpcIdRef)"},
				summaryMessage: "4 composed resources, 1 reference between them (1 of them inferred, 1 by Usages) and none to external objects; nothing added; 1 reference not inferred: nothing singles out their target",
				results:        []Result{},
			},
		},
		"SharedNamesByTheResolvedValue": {
			reason: "Everything is named after the composite: the ID the provider copied into the field beside the …Ref (observed only) singles out the target, an external name, an observed id or ARN, for the desired body's …Ref too.",
			state: state(Input{Infer: []string{InferManagedReferences}}, map[string]res{
				"route":   ec2("Route", "xr").set("spec.forProvider.gatewayIdRef", pcRef("xr")),
				"gateway": ec2("InternetGateway", "xr"),
				"nat":     ec2("NATGateway", "xr"),
				"table":   ec2("RouteTable", "xr").external("rtb-1"),
				"nodes":   resource("eks.aws.upbound.io/v1beta1", "NodeGroup", "xr").set("spec.forProvider.targetArnRef", pcRef("xr")),
			}, map[string]res{
				"route":   ec2("Route", "xr").uid("u-route").set("spec.forProvider.gatewayIdRef", pcRef("xr")).set("spec.forProvider.gatewayId", "igw-1"),
				"gateway": ec2("InternetGateway", "xr").uid("u-igw").set("status.atProvider.id", "igw-1"),
				"nat":     ec2("NATGateway", "xr").uid("u-nat").set("status.atProvider.id", "nat-1").set("status.atProvider.arn", "arn:nat"),
				"nodes":   resource("eks.aws.upbound.io/v1beta1", "NodeGroup", "xr").uid("u-nodes").set("spec.forProvider.targetArn", "arn:nat"),
			}),
			want: want{edges: []string{
				"nodes → nat: declared (inferred: spec.forProvider.targetArnRef)",
				"route → gateway: declared (inferred: spec.forProvider.gatewayIdRef)",
			}},
		},
		"SharedNamesByKindAsWholeWords": {
			reason: "Without a value that singles one out, the kind the field names as its last words does: routeTableIdRef a RouteTable and not a Route; gatewayIdRef no InternetGateway, so of one and a VPC it has no target.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"assoc":   ec2("MainRouteTableAssociation", "xr").set("spec.forProvider.routeTableIdRef", pcRef("xr")).set("spec.forProvider.vpcIdRef", pcRef("xr")),
				"route":   ec2("Route", "xr").set("spec.forProvider.gatewayIdRef", pcRef("xr")).set("spec.forProvider.routeTableId", "rtb-9"),
				"table":   ec2("RouteTable", "xr"),
				"gateway": ec2("InternetGateway", "xr"),
				"vpc":     ec2("VPC", "xr"),
			}, nil),
			want: want{
				edges: []string{
					"assoc → table: pending (inferred: spec.forProvider.routeTableIdRef)",
					"assoc → vpc: pending (inferred: spec.forProvider.vpcIdRef)",
				},
				summaryMessage: "5 composed resources, 2 references between them (2 of them inferred, 2 by Usages) and none to external objects; nothing added; 1 reference not inferred: nothing singles out their target",
			},
		},
		"ASelectorByTheSameRule": {
			reason: "A resolved selector's candidates carry its labels: of two VPCs, the value singles one out; of two that share it, nothing does, and the field is counted; one not resolved yet is nothing yet.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"subnet":  ec2("Subnet", "s").set("spec.forProvider.vpcIdSelector", map[string]any{"matchLabels": map[string]any{"net": "a"}}).set("spec.forProvider.vpcId", "vpc-2"),
				"rule":    ec2("Rule", "r").set("spec.forProvider.vpcIdSelector", map[string]any{"matchLabels": map[string]any{"net": "b"}}).set("spec.forProvider.vpcId", "vpc-3"),
				"pending": ec2("Route", "p").set("spec.forProvider.vpcIdSelector", map[string]any{"matchLabels": map[string]any{"net": "b"}}),
				"vpc-1":   ec2("VPC", "one").external("vpc-1", "net", "a"),
				"vpc-2":   ec2("VPC", "two").external("vpc-2", "net", "a"),
				"vpc-3":   ec2("VPC", "three").external("vpc-3", "net", "b"),
				"vpc-4":   ec2("VPC", "four").external("vpc-3", "net", "b"),
			}, nil),
			want: want{
				edges:          []string{"subnet → vpc-2: pending (inferred: spec.forProvider.vpcIdSelector)"},
				summaryMessage: "7 composed resources, 1 reference between them (1 of them inferred, 1 by Usages) and none to external objects; nothing added; 1 reference not inferred: nothing singles out their target",
			},
		},
		"TheObservedBodyIsReadFirst": {
			reason: "One pair found in both bodies is named by the observed body's field, though the desired body's sorts first.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"vpc":    ec2("VPC", "main"),
				"subnet": ec2("Subnet", "s").set("spec.forProvider.networkRef", pcRef("main")),
			}, map[string]res{
				"subnet": ec2("Subnet", "s").uid("u-s").set("spec.forProvider.vpcIdRef", pcRef("main")),
			}),
			want: want{edges: []string{"subnet → vpc: pending (inferred: spec.forProvider.vpcIdRef)"}},
		},
		"TheFirstRuleToFindAnEdgeNamesIt": {
			reason: "A ProviderConfig that uses another, whose connection secret holds its credentials, depends on it once, by the ProviderConfigs rule.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"a": kubernetesPC("a").set("spec.providerConfigRef", pcRef("b")).set("spec.credentials.secretRef", secretRef("s", "ns-a")),
				"b": kubernetesPC("b").set("spec.writeConnectionSecretToRef", secretRef("s", "ns-a")),
			}, nil),
			want: want{edges: []string{"a → b: pending (inferred: spec.providerConfigRef)"}},
		},
		"ReferencesAndDependenciesKeepTheirOrigin": {
			reason: "An Object that references its ProviderConfig in spec.references has one edge, the reference's, which its finalizer protects; a dependency the input declares stays explicit, and since the step writes Usages, a Usage protects it.",
			state: state(Input{Infer: inferAll, Dependencies: []Dependency{{Resource: "bucket", DependsOn: []string{"s3pc"}}}}, map[string]res{
				"app":    object("app").refs(dependsOn("pc", "apiVersion", "kubernetes.crossplane.io/v1alpha1", "kind", "ProviderConfig")).set("spec.providerConfigRef", pcRef("pc")),
				"pc":     kubernetesPC("pc"),
				"bucket": resource("s3.example.org/v1beta1", "Bucket", "b").set("spec.providerConfigRef", pcRef("s3pc")),
				"s3pc":   resource("example.org/v1", "ProviderConfig", "s3pc"),
			}, nil),
			want: want{edges: []string{"app → pc: pending", "bucket → s3pc: pending (explicit)"}},
		},
		"InferredEdgesDoNotHoldBackCreation": {
			reason: "With creation: WaitForReady a Subnet whose VPC isn't ready is created all the same: an inferred edge orders deletion only.",
			state: state(Input{Infer: inferAll, Creation: "WaitForReady"}, map[string]res{
				"vpc":    ec2("VPC", "main"),
				"subnet": ec2("Subnet", "s").set("spec.forProvider.vpcIdRef", pcRef("main")),
			}, nil),
			want: want{edges: []string{"subnet → vpc: pending (inferred: spec.forProvider.vpcIdRef)"}, heldBack: map[string]string{}},
		},
		"InferredEdgesThatCloseACycleAreLeftOut": {
			reason: "An Object that makes the Secret of the ProviderConfig it uses would close a cycle of inferred edges: both are left out with a warning, and the step, whatever onCycle says, goes on.",
			state: state(Input{Infer: inferAll}, map[string]res{
				"pc":    kubernetesPC("pc").set("spec.credentials.secretRef", secretRef("creds", "ns-a")),
				"maker": object("maker").set("spec.providerConfigRef", pcRef("pc")).set("spec.forProvider.manifest", manifestOf("Secret", "creds", "ns-a")),
			}, nil),
			want: want{
				edges:     []string{},
				leftOut:   []string{"maker → pc via spec.providerConfigRef: maker → pc → maker", "pc → maker via spec.credentials.secretRef → spec.forProvider.manifest: pc → maker → pc"},
				condition: "True Protected: every live reference between composed resources is protected",
				results:   []Result{{Warning, "InferredCycle"}},
				usages:    []map[string]any{},
				writes:    &yes,
			},
		},
		"AnInferredEdgeAgainstADeclaredOneIsLeftOut": {
			reason: "An inferred edge that closes a cycle with a declared one is left out; the declared edge stays, and no cycle is left for onCycle.",
			state: state(Input{Infer: inferAll, Dependencies: []Dependency{{Resource: "maker", DependsOn: []string{"pc"}}}}, map[string]res{
				"pc":    kubernetesPC("pc").set("spec.credentials.secretRef", secretRef("creds", "ns-a")),
				"maker": object("maker").set("spec.forProvider.manifest", manifestOf("Secret", "creds", "ns-a")),
			}, nil),
			want: want{
				edges:   []string{"maker → pc: pending (explicit)"},
				leftOut: []string{"pc → maker via spec.credentials.secretRef → spec.forProvider.manifest: pc → maker → pc"},
				results: []Result{{Normal, "Summary"}, {Warning, "InferredCycle"}},
				writes:  &yes,
			},
		},
		"ADeclaredCycleStaysOnCyclesToJudge": {
			reason: "A cycle of declared edges fails the step as without infer; an inferred edge inside it is left out all the same.",
			state: state(Input{Infer: inferAll, Dependencies: []Dependency{{Resource: "maker", DependsOn: []string{"other"}}, {Resource: "other", DependsOn: []string{"maker"}}}}, map[string]res{
				"pc":    kubernetesPC("pc").set("spec.credentials.secretRef", secretRef("creds", "ns-a")),
				"maker": object("maker").set("spec.providerConfigRef", pcRef("pc")).set("spec.forProvider.manifest", manifestOf("Secret", "creds", "ns-a")),
				"other": object("other"),
			}, nil),
			want: want{
				leftOut:   []string{"maker → pc via spec.providerConfigRef: maker → pc → maker", "pc → maker via spec.credentials.secretRef → spec.forProvider.manifest: pc → maker → pc"},
				condition: "False Cycle: references form a cycle: maker → other → maker",
				results:   []Result{{Fatal, "Cycle"}, {Normal, "Summary"}, {Warning, "InferredCycle"}},
				writes:    &no,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { tc.want.check(t, tc.reason, Expect(tc.state)) })
	}
}

func TestUnidentified(t *testing.T) {
	// A Route named after the composite whose gatewayIdRef names its
	// InternetGateway, and a Deployment the composition later composes under
	// that name too.
	route := func() res { return ec2("Route", "xr").set("spec.forProvider.gatewayIdRef", pcRef("xr-gateway")) }
	desired := func(route res) map[string]res {
		return map[string]res{
			"route":   route,
			"gateway": ec2("InternetGateway", "xr-gateway"),
			"deploy":  resource("apps/v1", "Deployment", "xr-gateway"),
			"table":   ec2("RouteTable", "xr"),
		}
	}
	cases := map[string]struct {
		reason string
		state  State
		want   map[string]bool
	}{
		"ANameOfTwoNotResolvedYet": {
			reason: "Of two candidates by name, neither singled out by value or kind, the field has no target: both are unidentified, and what it doesn't name isn't.",
			state:  state(Input{Infer: inferAll}, desired(route()), nil),
			want:   map[string]bool{"gateway": true, "deploy": true, "table": false},
		},
		"ANameOfTwoResolved": {
			reason: "The value the provider filled singles out the InternetGateway: the field has its target.",
			state: state(Input{Infer: inferAll}, desired(route().set("spec.forProvider.gatewayId", "igw-1")), map[string]res{
				"gateway": ec2("InternetGateway", "xr-gateway").uid("u-igw").set("status.atProvider.id", "igw-1"),
			}),
			want: map[string]bool{"gateway": false, "deploy": false, "table": false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Expect(tc.state)
			got := map[string]bool{}
			for target := range tc.want {
				got[target] = p.Unidentified("route", target)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nUnidentified(route, …): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
