package loop

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// What the generator adds for the inference rules of issue 26: the shapes
// each rule reads (ProviderConfigs that Objects and managed resources name,
// the writers of a ProviderConfig's credentials Secret, managed resources
// whose …Ref, …Refs and …Selector fields name others), and the input's
// infer. All of it is drawn from an RNG of its own, after everything else,
// so that a seed makes the same compositions as before the rules existed
// wherever it draws none.

// loopAWSGroup is the API group of an Upbound AWS provider's service (""
// for the provider's own, of its ProviderConfigs): namespaced managed
// resources are in the .m. groups.
func loopAWSGroup(service string, namespaced bool) string {
	g := "aws.upbound.io"
	if namespaced {
		g = "aws.m.upbound.io"
	}
	if service != "" {
		g = service + "." + g
	}
	return g
}

// loopInference adds the shapes the inference rules read to a composition,
// and draws its infer; then, from the same RNG after all that, the shapes
// of loopSharedNames, so that a seed that draws none of them makes the
// composition it made before they existed.
func loopInference(c *loopComposition, rng *rand.Rand, off map[string]bool) {
	if loopInferenceShapes(c, rng, off) {
		loopSharedNames(c, rng)
	}
}

// loopInferenceShapes adds the shapes of issue 26: false when it leaves
// the composition as it was.
func loopInferenceShapes(c *loopComposition, rng *rand.Rand, off map[string]bool) bool {
	chance := func(percent int) bool { return rng.IntN(100) < percent }
	if chance(35) {
		return false // As the composition was.
	}
	if c.input != nil {
		rules := []string{oracle.InferProviderConfigs, oracle.InferCredentials, oracle.InferManagedReferences}
		var infer []any
		switch {
		case chance(10):
			// The shapes with inference off: nothing may change.
			if chance(50) {
				c.input["infer"] = []any{}
			}
			c.features["inference shapes without infer"] = true
		case chance(55):
			infer = []any{rules[0], rules[1], rules[2]}
		default:
			rng.Shuffle(len(rules), func(i, j int) { rules[i], rules[j] = rules[j], rules[i] })
			for _, r := range rules[:1+rng.IntN(3)] {
				infer = append(infer, r)
			}
		}
		if infer != nil {
			c.input["infer"] = infer
			if c.switched != nil {
				c.switched["infer"] = infer
			}
		}
	}

	original := c.phases[0]
	var added []*loopResource
	// newResource adds a resource of the kind, named, in the composite's
	// namespace when namespaced (written out or left to Crossplane), else
	// in ns-a.
	newResource := func(name, apiVersion, kind string, namespaced bool) *loopResource {
		r := &loopResource{name: name, kind: &loopKind{[]string{apiVersion}, kind, namespaced}, apiVersion: apiVersion, objName: c.xrName + "-" + name}
		if namespaced && (!c.namespaced || chance(50)) {
			r.namespace = cmp.Or(c.xrNamespace(), "ns-a")
		}
		c.delays[name] = 1 + rng.IntN(2)
		added = append(added, r)
		return r
	}
	// A pattern such as .* makes every resource depend on the composition's
	// first: one of its Objects that used a ProviderConfig added here would
	// close a cycle.
	touchOriginal := !c.features["wide patterns"]
	// inferring are the pairs [dependent, target] the shapes make an
	// inference rule read, for cycles of declared and inferred edges.
	var inferring [][2]*loopResource
	infers := func(dependent, target *loopResource) {
		inferring = append(inferring, [2]*loopResource{dependent, target})
	}

	// ProviderConfigs: provider-kubernetes' of the composite's scope, used
	// by its Objects; a cluster-scoped composite's namespaced Objects use a
	// ClusterProviderConfig, which no Usage can protect them from deleting
	// first.
	var pcs []*loopResource
	if chance(75) {
		group := oracle.ClusterObjectGroup
		if c.namespaced {
			group = oracle.NamespacedObjectGroup
		}
		pc := newResource("pc", group+"/v1alpha1", "ProviderConfig", c.namespaced)
		pcs = append(pcs, pc)
		var cluster *loopResource
		for _, r := range original {
			if !touchOriginal || !r.kind.object() || !chance(60) {
				continue
			}
			switch {
			case r.kind.namespaced == pc.kind.namespaced:
				r.set("spec.providerConfigRef", map[string]any{"name": pc.objName})
				infers(r, pc)
			case !c.namespaced:
				if cluster == nil {
					cluster = newResource("pc-cluster", oracle.NamespacedObjectGroup+"/v1alpha1", "ClusterProviderConfig", false)
				}
				r.set("spec.providerConfigRef", map[string]any{"kind": "ClusterProviderConfig", "name": cluster.objName})
				infers(r, cluster)
			}
		}
	}
	// An AWS provider's ProviderConfig, and its managed resources, which
	// name it or one nobody composes.
	var aws *loopResource
	if chance(60) {
		aws = newResource("aws-pc", loopAWSGroup("", c.namespaced)+"/v1beta1", "ProviderConfig", c.namespaced)
		pcs = append(pcs, aws)
	}
	managed := func(name, service, kind string) *loopResource {
		r := newResource(name, loopAWSGroup(service, c.namespaced)+"/v1beta1", kind, c.namespaced)
		switch {
		case aws != nil && chance(85):
			r.set("spec.providerConfigRef", map[string]any{"name": aws.objName})
			infers(r, aws)
		case chance(50):
			r.set("spec.providerConfigRef", map[string]any{"name": "default"})
		}
		r.set("spec.forProvider.region", "eu-west-1")
		return r
	}

	// Managed references: a VPC, a Subnet in it by name or by a selector
	// resolved to its external name, a Cluster on a list of Subnets, a
	// Route by a selector with labels.
	if chance(65) {
		vpc := managed("net-vpc", "ec2", "VPC")
		external := "vpc-" + c.xrName
		vpc.set("metadata.annotations", map[string]any{oracle.ExternalNameAnnotation: external})
		vpc.set("metadata.labels", map[string]any{"network": c.xrName})
		subnet := managed("net-subnet", "ec2", "Subnet")
		if chance(70) {
			subnet.set("spec.forProvider.vpcIdRef", map[string]any{"name": vpc.objName})
		} else {
			subnet.set("spec.forProvider.vpcIdSelector", map[string]any{"matchControllerRef": true})
			subnet.set("spec.forProvider.vpcId", external)
		}
		infers(subnet, vpc)
		if chance(60) {
			cl := managed("net-cluster", "eks", "Cluster")
			cl.set("spec.forProvider.vpcConfig", []any{map[string]any{"subnetIdRefs": []any{map[string]any{"name": subnet.objName}}}})
			infers(cl, subnet)
			if chance(50) {
				cl.objName = "" // Crossplane names it: nothing names it back.
			}
		}
		if chance(50) {
			route := managed("net-route", "ec2", "Route")
			route.set("spec.initProvider.vpcIdSelector", map[string]any{"matchLabels": map[string]any{"network": c.xrName}})
			route.set("spec.initProvider.vpcId", external)
			infers(route, vpc)
		}
	}

	// Credentials: a ProviderConfig reads them from a Secret a composed
	// resource writes: the Secret itself, a database's connection secret,
	// or an Object that manages it. The writer may use a ProviderConfig of
	// its own, or the one it writes the credentials of, which closes a
	// cycle of inferred edges.
	if len(pcs) > 0 && chance(60) {
		pc := pcs[rng.IntN(len(pcs))]
		field := "spec.credentials.secretRef"
		if chance(25) {
			field = "spec.identity.secretRef"
		}
		secretName := c.xrName + "-credentials"
		ref := map[string]any{"name": secretName}
		ns := "ns-a"
		if c.namespaced {
			ns = c.xrNamespace()
		}
		if !pc.kind.namespaced || chance(50) {
			ref["namespace"] = ns // A namespaced ProviderConfig's own is the default.
		}
		pc.set(field, ref)
		secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": secretName, "namespace": ns}}
		// The Object more often, which may close a cycle.
		writer := rng.IntN(3)
		if chance(30) {
			writer = 2
		}
		switch writer {
		case 0:
			w := newResource("credentials", "v1", "Secret", true)
			w.objName, w.namespace = secretName, ns
			infers(pc, w)
		case 1:
			w := managed("database", "rds", "Instance")
			to := map[string]any{"name": secretName}
			if !c.namespaced {
				to["namespace"] = ns
			}
			w.set("spec.writeConnectionSecretToRef", to)
			infers(pc, w)
		default:
			group := oracle.ClusterObjectGroup
			if c.namespaced {
				group = oracle.NamespacedObjectGroup
			}
			w := newResource("credentials-maker", group+"/v1alpha1", oracle.ObjectKind, c.namespaced)
			w.set("spec.forProvider.manifest", secret)
			infers(pc, w)
			switch {
			case !off["cycles"] && pc.kind.kind == "ProviderConfig" && xpGroup(pc.apiVersion) == group && chance(60):
				// Inferred edges never make a cycle the step fails on:
				// they are left out.
				w.set("spec.providerConfigRef", map[string]any{"name": pc.objName})
				c.features["an inferred cycle"] = true
			case chance(50):
				admin := newResource("pc-admin", group+"/v1alpha1", "ProviderConfig", c.namespaced)
				w.set("spec.providerConfigRef", map[string]any{"name": admin.objName})
			}
		}
	}
	// A declared dependency against inferred ones: a target of an inferred
	// edge depends, by the input's word, on its dependent, or on a
	// dependent of that (cluster → subnet → vpc, and vpc on the cluster).
	// The inferred edges are left out, so infer adds no cycle to judge.
	if !off["cycles"] && !off["explicit"] && c.input != nil && !c.features["one Object under two names"] && len(inferring) > 0 && chance(30) {
		pair := inferring[rng.IntN(len(inferring))]
		dependency := pair[0]
		for _, p := range inferring {
			if p[1] == dependency && p[0] != pair[1] && chance(50) {
				dependency = p[0]
				break
			}
		}
		for _, in := range []map[string]any{c.input, c.switched} {
			if in != nil {
				deps, _ := in["dependencies"].([]any)
				in["dependencies"] = append(slices.Clone(deps), map[string]any{"resource": pair[1].name, "dependsOn": []any{dependency.name}})
			}
		}
		c.features["a declared dependency against inferred ones"] = true
	}
	if len(added) == 0 {
		return true
	}
	c.phases[0] = append(original, added...)
	// The composition changes: the inference resources go into its second
	// phase too, but for one it removes, a dependent or what one depends on.
	changed := !off["changes"] && chance(25)
	if len(c.phases) == 2 || changed {
		next := c.phases[0]
		if len(c.phases) == 2 {
			next = append(slices.Clone(c.phases[1]), added...)
		}
		if changed {
			gone := added[rng.IntN(len(added))]
			next = slices.DeleteFunc(slices.Clone(next), func(r *loopResource) bool { return r == gone })
			c.features["an inference resource removed"] = true
			if c.changeAt == 0 {
				c.changeAt = 2 + rng.IntN(6)
			}
		}
		c.phases = [][]*loopResource{c.phases[0], next}
	}
	// Someone deletes a ProviderConfig in use while the composite lives:
	// the Usage refuses it; or, right after its creation, before any Usage
	// holds it, the deletion goes through, and an earlier step's finalizer
	// keeps it deleting.
	if !off["user-deletes"] && len(pcs) > 0 && chance(12) {
		d := loopUserDelete{after: 2 + rng.IntN(4), name: pcs[0].name}
		if chance(50) {
			d.after = 1
			pcs[0].finalizers = []string{xpOtherFinalizer}
		}
		c.userDeletes = append(c.userDeletes, d)
		c.features["a user deleting a ProviderConfig"] = true
	}
	for _, r := range added {
		c.features["inference shapes: "+strings.ToLower(r.kind.kind)] = true
	}
	return true
}

// loopSharedNames adds managed resources all named after the composite, as
// many published compositions name them, whose reference fields only the
// rule that identifies a target tells apart (issue 31): a Route whose
// gatewayIdRef means an InternetGateway, which the field's name doesn't
// name, and whose routeTableIdRef means the RouteTable, not the Route of
// its name; a MainRouteTableAssociation of both; a NodeGroup whose
// clusterNameRef means the Cluster though a ClusterAuth has its name and
// external name too, and whose nodeRoleArnRef means a Role. A reference is
// resolved (the provider filled the field beside it, and the target's
// external name, or the id or ARN its provider observes once it exists,
// holds that value) or not yet; an unresolved gatewayIdRef has no target
// nothing singles out, and is counted.
func loopSharedNames(c *loopComposition, rng *rand.Rand) {
	chance := func(percent int) bool { return rng.IntN(100) < percent }
	if !chance(45) {
		return
	}
	var added []*loopResource
	shared := func(name, service, kind string) *loopResource {
		apiVersion := loopAWSGroup(service, c.namespaced) + "/v1beta1"
		r := &loopResource{name: name, kind: &loopKind{[]string{apiVersion}, kind, c.namespaced}, apiVersion: apiVersion, objName: c.xrName}
		if c.namespaced && chance(50) {
			r.namespace = c.xrNamespace()
		}
		c.delays[name] = 1 + rng.IntN(2)
		r.set("spec.forProvider.region", "eu-west-1")
		added = append(added, r)
		return r
	}
	ref := func(name string) map[string]any { return map[string]any{"name": name} }
	// identified gives the target the identifier a resolved reference
	// holds: its external name, or what its provider observes.
	identified := func(r *loopResource, field, value string) {
		if chance(40) {
			r.set("metadata.annotations", map[string]any{oracle.ExternalNameAnnotation: value})
			return
		}
		if c.atProvider == nil {
			c.atProvider = map[string]map[string]any{}
		}
		c.atProvider[r.name] = map[string]any{field: value}
	}
	resolved := func(dependent *loopResource, field, value string) bool {
		if !chance(55) {
			c.features["shared names: a reference not resolved yet"] = true
			return false
		}
		dependent.set("spec.forProvider."+field, value)
		c.features["shared names: a reference resolved"] = true
		return true
	}
	if chance(70) {
		vpc := shared("shared-vpc", "ec2", "VPC")
		igw := shared("shared-igw", "ec2", "InternetGateway")
		shared("shared-table", "ec2", "RouteTable")
		route := shared("shared-route", "ec2", "Route")
		route.set("spec.forProvider.routeTableIdRef", ref(c.xrName))
		if chance(25) {
			// The only one of its name: the field needn't name its kind.
			igw.objName = c.xrName + "-gateway"
			c.features["shared names: a field that doesn't name its target's kind, the only one of its name"] = true
		}
		route.set("spec.forProvider.gatewayIdRef", ref(igw.objName))
		if id := "igw-" + c.xrName; resolved(route, "gatewayId", id) {
			identified(igw, "id", id)
		}
		if chance(50) {
			assoc := shared("shared-association", "ec2", "MainRouteTableAssociation")
			assoc.set("spec.forProvider.routeTableIdRef", ref(c.xrName))
			assoc.set("spec.forProvider.vpcIdRef", ref(c.xrName))
			if id := "vpc-" + c.xrName; resolved(assoc, "vpcId", id) {
				identified(vpc, "id", id)
			}
		}
		c.features["shared names: a Route and a RouteTable of one name"] = true
	}
	if chance(60) {
		cluster := shared("shared-cluster", "eks", "Cluster")
		auth := shared("shared-auth", "eks", "ClusterAuth")
		nodes := shared("shared-nodes", "eks", "NodeGroup")
		role := shared("shared-role", "iam", "Role")
		nodes.set("spec.forProvider.clusterNameRef", ref(c.xrName))
		nodes.set("spec.forProvider.nodeRoleArnRef", ref(c.xrName))
		if resolved(nodes, "clusterName", c.xrName) {
			// The cluster's external name is the composite's name, and so
			// are its auth's and its node group's.
			for _, r := range []*loopResource{cluster, auth, nodes} {
				r.set("metadata.annotations", map[string]any{oracle.ExternalNameAnnotation: c.xrName})
			}
		}
		if arn := "arn:aws:iam::123456789012:role/" + c.xrName; resolved(nodes, "nodeRoleArn", arn) {
			identified(role, "arn", arn)
		}
	}
	if len(added) == 0 {
		return
	}
	c.features["shared names"] = true
	for i := range c.phases {
		c.phases[i] = slices.Concat(c.phases[i], added)
	}
}
