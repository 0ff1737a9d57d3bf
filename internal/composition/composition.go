// Package composition is the function's Composition step: it reads the
// composed resources, builds the graph of their dependencies, decides by the
// rules what protects each edge, writes that into desired state, and
// reports.
package composition

import (
	"context"
	"slices"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/infer"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/suspect"
)

// Run answers a Composition step's request into rsp. It returns the
// context's error, having stopped where it found it, when the call is
// cancelled: Crossplane no longer waits for the answer, and the work would
// take memory and time from the calls it does wait for.
// It refuses, with a Fatal, to write more than Crossplane reads (lim).
func Run(ctx context.Context, in *v1beta1.Input, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, lim protocol.Limits, log logging.Logger) error {
	c := request.ReadComposition(req)
	xr := c.Composite
	log = log.WithValues("xr-apiversion", xr.APIVersion(), "xr-kind", xr.Kind(), "xr-name", xr.Name())
	rd, err := readComposed(ctx, c, in)
	if err != nil {
		return err
	}
	p, err := decide(ctx, in, ownerOf(xr), rd)
	if err := ctx.Err(); err != nil {
		return err
	}
	rd.lookout.outside(p.outside)
	rsp.Requirements = rd.lookout.requirements(xr)
	if err != nil {
		response.Fatal(rsp, err)
		return nil
	}
	log.Debug("Planned dependencies", "summary", p.Report.Summary, "held-back", len(p.HeldBack), "usages", len(p.Protection.Usages))
	return p.writeTo(ctx, rsp, lim, log)
}

// A Plan is everything the step decided about one request.
type Plan struct {
	input      *v1beta1.Input
	xr         composite
	Graph      *composed.Graph
	Protection protection.Plan
	References explicit.References
	HeldBack   map[string]string
	Report     report.Report
	// Invalid are the references that could not be read.
	Invalid []report.InvalidReference
	// outside are the ProviderConfigs the composed resources use that the
	// composite doesn't compose: the step asks Crossplane for each.
	outside []object.Ref
}

// Decide decides about a request's composed resources as the step does,
// without writing anything: what the graph command shows. It fails where the
// step fails before it writes: on input whose patterns declare too many
// dependencies.
func Decide(in *v1beta1.Input, req *fnv1.RunFunctionRequest) (Plan, error) {
	ctx := context.Background()
	c := request.ReadComposition(req)
	rd, err := readComposed(ctx, c, in)
	if err != nil {
		return Plan{}, err
	}
	return decide(ctx, in, ownerOf(c.Composite), rd)
}

// decide decides, from the composed resources alone, in this order: the graph
// of their dependencies, what protects each of its edges (finalizers and
// Usages), which resources are not created yet, and what to report. No step
// changes what an earlier one decided. Between steps, it stops when the call
// is cancelled.
func decide(ctx context.Context, in *v1beta1.Input, xr composite, rd read) (Plan, error) {
	resources, unmatched, err := dependOn(rd.resources, in.Dependencies)
	if err != nil {
		return Plan{}, err
	}
	if err := ctx.Err(); err != nil {
		return Plan{}, err
	}
	resources, outside, notInferred, err := inferred(ctx, resources, rd, in, xr.UID)
	if err != nil {
		return Plan{}, err
	}
	g := composed.New(resources, composed.Options{
		// The references are read all the same, so that a dependency the
		// input declares is not written twice.
		IgnoreReferences: in.References == v1beta1.ReferencesIgnore,
		BreakCycles:      in.OnCycle == v1beta1.CycleWarning,
	})
	if err := ctx.Err(); err != nil {
		return Plan{}, err
	}
	pro := protection.Decide(g, protection.Options{
		Mode: modes[in.Protection], Policy: usagePolicy(in), API: protection.API(in.UsageAPI), Owner: xr.Ref,
		Observed: rd.usages, Composed: rd.composedUsages, Labels: rd.labels,
	})
	if err := ctx.Err(); err != nil {
		return Plan{}, err
	}
	refs := explicit.Referencing(g)
	held, waiting := heldBack(g, refs.Unnamed, in.Creation == v1beta1.CreationWaitForReady, rd.now)
	rep := report.Of(report.Facts{
		Graph: g, Protection: pro, References: refs, HeldBack: held, Waiting: waiting, Suspect: suspect.Of(g),
		Invalid: rd.invalid, Unmatched: unmatched, NotInferred: notInferred,
		Enforce: in.Mode == v1beta1.ModeEnforce, CyclesFatal: in.OnCycle == v1beta1.CycleFatal,
	})
	return Plan{input: in, xr: xr, Graph: g, Protection: pro, References: refs, HeldBack: held, Report: rep, Invalid: rd.invalid, outside: outside}, nil
}

// modes are the input's protections as the protection rules' modes.
var modes = map[v1beta1.Protection]protection.Mode{
	v1beta1.ProtectionFinalizers: protection.Finalizers,
	v1beta1.ProtectionUsages:     protection.Usages,
	v1beta1.ProtectionBoth:       protection.Both,
}

// usagePolicy is which edges no finalizer protects the input has Usages
// protect: every one, where the step writes Usages at all.
func usagePolicy(in *v1beta1.Input) protection.Policy {
	if in.WritesUsages() {
		return protection.Every
	}
	return protection.None
}

// dependOn returns the resources with the dependencies the input declares,
// leaving those it is given as they are, and the entries that match no
// resource; or the error of input that declares too many.
func dependOn(resources []composed.Resource, dependencies []v1beta1.Dependency) ([]composed.Resource, []explicit.Unmatched, error) {
	if len(dependencies) == 0 {
		return resources, nil, nil
	}
	rules := make([]explicit.Rule, len(dependencies))
	for i, d := range dependencies {
		rules[i] = explicit.Rule{Resource: d.Resource, DependsOn: d.DependsOn}
	}
	names := make([]string, len(resources))
	for i, r := range resources {
		names[i] = r.Name
	}
	dependsOn, unmatched, err := explicit.Resolve(rules, names)
	if err != nil {
		return nil, nil, errors.Wrap(err, "invalid function input")
	}
	resources = slices.Clone(resources)
	for i := range resources {
		resources[i].DependsOn = dependsOn[resources[i].Name]
	}
	return resources, unmatched, nil
}

// inferred returns the resources with the dependencies inference finds, of
// the kinds the input asks for, leaving those it is given as they are; the
// ProviderConfigs they use that the composite doesn't compose; and how many
// reference fields it found no single target for; or the context's error.
//
// A resource whose ProviderConfig another composite composes depends on that
// composite (compositeOf), once Crossplane has fetched the ProviderConfig
// for the step: the composite of a cluster and of the ProviderConfig that
// reaches it, deleted first, leaves what runs on the cluster unable to be
// deleted.
func inferred(ctx context.Context, resources []composed.Resource, rd read, in *v1beta1.Input, xrUID string) ([]composed.Resource, []object.Ref, int, error) {
	found, err := infer.Edges(ctx, rd.inferFrom, infer.Kinds{
		ProviderConfigs:   in.Infers(v1beta1.InferProviderConfigs),
		Credentials:       in.Infers(v1beta1.InferCredentials),
		ManagedReferences: in.Infers(v1beta1.InferManagedReferences),
	})
	if err != nil {
		return nil, nil, 0, err
	}
	if len(found.Edges) == 0 && len(found.Outside) == 0 {
		return resources, nil, len(found.Unidentified), nil
	}
	byName := make(map[string]int, len(resources))
	resources = slices.Clone(resources)
	for i, r := range resources {
		byName[r.Name] = i
	}
	for _, e := range found.Edges {
		r := &resources[byName[e.Dependent]]
		r.Inferred = append(r.Inferred, composed.Inferred{Target: e.Target, Via: e.Via})
	}
	var outside []object.Ref
	var fetched map[object.Ref]request.Object
	if len(found.Outside) > 0 {
		fetched = make(map[object.Ref]request.Object, len(rd.required))
		for _, o := range rd.required {
			fetched[o.Identity()] = o
		}
	}
	for _, o := range found.Outside {
		r := &resources[byName[o.Dependent]]
		// A resource Crossplane is deleting, read from what it fetched,
		// asks too: its Usage of the other composite stays until it is
		// gone. Crossplane then calls once more, with what it asks.
		if !slices.Contains(outside, o.Config) {
			outside = append(outside, o.Config)
		}
		if c, ok := compositeOf(fetched[o.Config.ID()], xrUID); ok {
			r.Outside = append(r.Outside, composed.Outside{Target: c, Via: "spec.providerConfigRef → " + o.Config.String()})
		}
	}
	return resources, outside, len(found.Unidentified), nil
}

// compositeOf is the composite that composes a ProviderConfig, and false
// where there is none: one not fetched, installed by hand, or composed by
// this composite (xrUID). Crossplane labels what it composes with its
// composite's name and makes the composite its controller. A namespaced
// composite composes in its own namespace only: a namespaced
// ProviderConfig's composite is in its namespace.
func compositeOf(pc request.Object, xrUID string) (object.Ref, bool) {
	c, uid, ok := pc.Controller()
	if !ok || uid == xrUID || c.Name == "" || pc.Label(protocol.CompositeLabel) != c.Name {
		return object.Ref{}, false
	}
	c.Namespace = pc.Namespace()
	return c, true
}

// A composite names the composite: as the owner of its Usages, and by UID
// in the labels of its dependents.
type composite struct {
	object.Ref
	UID string
}

// ownerOf names the composite.
func ownerOf(xr request.Object) composite {
	return composite{Ref: object.Ref{APIVersion: xr.APIVersion(), Kind: xr.Kind(), Namespace: xr.Namespace(), Name: xr.Name()}, UID: xr.UID()}
}
