// Package operation is the function run as a Crossplane Operation, outside
// any composite: the request has no observed state, and the function reads
// the cluster through required resources instead. A WatchOperation injects
// the Object whose change made the Operation; otherwise the function sweeps
// every Object of both API groups. Either way it then asks for the objects
// they reference (see targetSelector), and once it has them all declares,
// as partial objects, the reference finalizers that live targets lack, and
// the teardown nudges (teardown.go) of what is being deleted.
//
// Crossplane applies each partial object with server-side apply under a
// field owner of its own for every Operation, and deletes nothing: so the
// function declares only what is missing, which keeps each target's
// managedFields from growing with every Operation, and can remove nothing.
package operation

import (
	"context"
	"slices"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// Run answers an Operation's request into rsp. It returns the context's
// error, having stopped between steps, when the call is cancelled.
// It refuses, with a Fatal, to answer more than Crossplane reads (lim).
func Run(ctx context.Context, in *v1beta1.Input, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, lim protocol.Limits, log logging.Logger) error {
	s := readSweep(req.GetRequiredResources(), in.ObjectSelector)
	rsp.Requirements = &fnv1.Requirements{Resources: s.requirements}
	if !s.complete {
		// Crossplane calls again with what was asked for; only the last
		// answer counts.
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g := composed.New(s.resources, composed.Options{BreakCycles: true})
	if err := ctx.Err(); err != nil {
		return err
	}
	// The Composition step protects the edges of an Object it labelled
	// with Usages instead: their finalizers are not the sweep's to restore.
	byUsages := map[string]bool{}
	for name, o := range s.read {
		if o.Label(protocol.ProtectionLabel) == protocol.ProtectedByUsages {
			byUsages[name] = true
		}
	}
	fin := protection.Decide(g, protection.Options{LeftToUsages: byUsages})
	if s.watched || in.ObjectSelector != nil {
		// A finalizer on a target may name an Object this Operation didn't
		// read: staleness needs every Object.
		fin.Stale = nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	out := tally(g, fin)
	enforce := in.Mode == v1beta1.ModeEnforce
	nudged := nudges(s)
	var woken []string // Report mode applies no nudge either.
	if enforce {
		rsp.Desired = &fnv1.State{Resources: desired(g, s, out, nudged)}
		for _, n := range nudged {
			if !slices.Contains(woken, n.Object) {
				woken = append(woken, n.Object)
			}
		}
		slices.Sort(woken)
	}
	if err := response.SetOutput(rsp, outputOf(out, enforce, len(g.Cycles), woken)); err != nil {
		response.Fatal(rsp, err)
		return nil
	}
	request.AddResults(rsp, warningsOf(s, out, g.Cycles), false)
	size, err := request.ResponseSize(ctx, rsp)
	if err != nil {
		return err
	}
	if enforce && size > lim.ResponseBytes {
		// The partial objects are the function's alone: it declares
		// none rather than an answer Crossplane refuses.
		rsp.Desired = req.GetDesired()
		response.Fatal(rsp, errors.Errorf("the response would be %d bytes, more than the %d Crossplane reads: sweep fewer Objects in each Operation, with an objectSelector", size, lim.ResponseBytes))
		return nil
	}
	log.Debug("Swept Objects", "watched", s.watched, "dependents", out.Dependents, "references", out.References,
		"protected", out.Protected, "repaired", len(out.Repaired), "skipped", len(out.Skipped), "stale", len(out.Stale))
	return nil
}
