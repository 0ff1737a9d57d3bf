// Package graphcmd is the function's graph command: it reads resources from
// YAML, decides about them as the Composition step does with the same input,
// draws their dependency graph, and lists what the graph lacks.
package graphcmd

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/crossplane/function-sdk-go/errors"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composition"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/report/message"
	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// errMissing is returned when a referenced object lacks a live dependent's
// finalizer, so that the command exits non-zero.
var errMissing = errors.New("referenced objects lack their dependents' finalizers")

// errCycle is returned when references form a cycle that fails the
// function's step.
var errCycle = errors.New("references form a cycle")

// Command draws the dependency graph of resources read from YAML.
type Command struct {
	Format string   `default:"mermaid" enum:"mermaid,dot" help:"Output format: mermaid or dot."`
	Input  string   `help:"The function's input, so that the verdict is the function's: a YAML file holding the Input, or the Composition whose pipeline step runs the function. Without it, the defaults." type:"existingfile"`
	Files  []string `arg:"" default:"-" help:"YAML files to read: a crossplane render output, or kubectl get ... -o yaml of a live cluster. - reads standard input." optional:""`

	out, diagnostics io.Writer
}

// Run reads the resources, decides about them as the function does with the
// same input, draws their graph on standard output and lists on standard
// error every referenced object that lacks a live dependent's finalizer or
// Usage, every stale finalizer and every cycle. It fails when one is missing,
// and on a cycle that fails the function's step. What the resources can't
// show, it says so once and doesn't judge.
func (c *Command) Run() error {
	if c.out == nil {
		c.out, c.diagnostics = os.Stdout, os.Stderr
	}
	in, err := readGraphInput(c.Input)
	if err != nil {
		return err
	}
	var docs []document
	for _, f := range c.Files {
		d, err := readDocuments(f)
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	req, err := liveState(docs)
	if err != nil {
		return err
	}
	p, err := composition.Decide(in, req)
	if err != nil {
		return err
	}
	edges, external := report.EdgesOf(p.Graph, p.Protection)
	blind := unjudgedOf(p.Graph, edges, p.Protection.Stale)
	g := blind.mark(view.Of(p.Graph, edges, external, nil, false))
	draw := map[string]func(view.Graph) string{"mermaid": view.Mermaid, "dot": view.DOT}[c.Format]
	if _, err := io.WriteString(c.out, draw(g)); err != nil {
		return errors.Wrap(err, "cannot write the graph")
	}
	if note := blind.note(); note != "" {
		fmt.Fprintln(c.diagnostics, note)
	}
	for _, r := range p.Invalid {
		fmt.Fprintf(c.diagnostics, "invalid reference: %s: %s\n", r.Resource, r.Problem)
	}
	for _, cycle := range p.Graph.Cycles {
		fmt.Fprintf(c.diagnostics, "cycle: %s\n", composed.Path(cycle))
	}
	for _, l := range p.Graph.LeftOut {
		fmt.Fprintf(c.diagnostics, "inferred edge left out: %s → %s via %s closes %s\n", l.Edge.Dependent, l.Edge.Target, l.Edge.Via, composed.Path(p.Graph.Closes(l)))
	}
	if len(p.Graph.Cycles) > 0 && in.OnCycle == v1beta1.CycleFatal {
		// The function declares nothing then: no finalizer is missing.
		return errors.Wrap(errCycle, "the function fails its step on it (onCycle: Fatal)")
	}
	missing := c.listMissing(edges)
	for _, s := range p.Protection.Stale {
		if !blind.targets[s.Resource] {
			fmt.Fprintf(c.diagnostics, "stale: %s carries %s, which names no Object that references it\n", s.Resource, s.Finalizer)
		}
	}
	if missing > 0 {
		return errors.Wrapf(errMissing, "%d of the finalizers and Usages the graph needs are lacking", missing)
	}
	return nil
}

// listMissing lists, on each target, the live dependents whose finalizer or
// Usage it lacks, and returns how many lack one.
func (c *Command) listMissing(edges []report.Edge) int {
	missing := 0
	for _, target := range targets(edges) {
		var live []string
		lacking := map[report.Protection][]string{}
		for _, e := range edges {
			if e.Target != target || !e.State.Live() {
				continue
			}
			live = append(live, e.Dependent)
			if e.State.Lacking() {
				lacking[e.Protection] = append(lacking[e.Protection], e.Dependent)
			}
		}
		for _, l := range []struct {
			by   report.Protection
			what string
		}{{report.ByFinalizer, "reference finalizers"}, {report.ByUsage, "Usages"}} {
			if dependents := lacking[l.by]; len(dependents) > 0 {
				missing += len(dependents)
				fmt.Fprintf(c.diagnostics, "missing: %s lacks the %s of %d of its %d live dependents: %s\n",
					target, l.what, len(dependents), len(live), strings.Join(dependents, ", "))
			}
		}
	}
	return missing
}

// unjudged is what the resources can't show. A reference finalizer names its
// Object by metadata.uid, which crossplane render's output doesn't carry: of
// an Object without one, the command can't tell whether its targets carry its
// finalizer, nor whether a finalizer they carry is its or stale. An Object
// with one is judged, as is a cycle: it is one whatever the UIDs.
type unjudged struct {
	// objects counts the Objects without a UID that depend on a resource.
	objects int
	// edges are the finalizers' edges from them, pending only because their
	// dependent has no UID, by dependent and target.
	edges map[[2]string]bool
	// targets are the resources they depend on, and stale counts the
	// finalizers on those that the function finds stale.
	targets map[string]bool
	stale   int
}

func unjudgedOf(g *composed.Graph, edges []report.Edge, stale []protection.Stale) unjudged {
	u := unjudged{edges: map[[2]string]bool{}, targets: map[string]bool{}}
	without := func(e composed.Edge) bool {
		d := &g.Resources[e.DependentAt]
		return d.IsObject && d.UID() == ""
	}
	dependents := map[string]bool{}
	for _, e := range g.Edges {
		if without(e) {
			dependents[e.Dependent], u.targets[e.Target] = true, true
		}
	}
	u.objects = len(dependents)
	for _, e := range edges {
		if e.Protection == report.ByFinalizer && e.State == protection.Pending && without(e.Edge) {
			u.edges[[2]string{e.Dependent, e.Target}] = true
		}
	}
	for _, s := range stale {
		if u.targets[s.Resource] {
			u.stale++
		}
	}
	return u
}

// mark draws the edges it can't judge as such, not as pending.
func (u unjudged) mark(g view.Graph) view.Graph {
	for i, e := range g.Edges {
		// An external edge is never a finalizer's: one named like a composed
		// resource is not taken for it.
		if e.Protection == "finalizer" && u.edges[[2]string{e.Dependent, e.Target}] {
			g.Edges[i].State = view.Unjudged
		}
	}
	return g
}

// note says what is not judged and why, or "" when everything is.
func (u unjudged) note() string {
	var what []string
	if n := len(u.edges); n > 0 {
		what = append(what, "in place ("+message.Count(n, "reference")+", drawn "+view.Unjudged+")")
	}
	if u.stale > 0 {
		what = append(what, "stale ("+message.Count(u.stale, "finalizer")+" on resources they reference)")
	}
	if len(what) == 0 {
		return ""
	}
	return "not judged: whether reference finalizers are " + strings.Join(what, " or ") +
		": a reference finalizer names its Object by UID, and metadata.uid is missing on " + message.Count(u.objects, "Object") +
		", as in crossplane render's output; run graph on kubectl get -o yaml of a live cluster to judge them"
}

// targets returns the targets of the edges, sorted, once each.
func targets(edges []report.Edge) []string {
	var out []string
	for _, e := range edges {
		out = append(out, e.Target)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
