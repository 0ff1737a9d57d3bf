package loop

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/util/yaml"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report/message"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// The fuzz targets run their seeds with every go test; hack/test.sh fuzzes
// each for a few seconds, and longer runs are one command each:
//
//	go test -run '^$' -fuzz '^FuzzRunFunction$' -fuzztime 10m -fuzzminimizetime 0 ./test/loop
//	go test -run '^$' -fuzz '^FuzzRandomGraph$' -fuzztime 10m -fuzzminimizetime 0 ./test/loop
//
// -fuzzminimizetime 0: the function sorts what it ranges over in map order,
// so the coverage of one input varies a little from run to run, nearly every
// input looks new, and minimizing each would take all the time.
//
// The fuzz targets run the function in this process (inProcess), mode by
// mode as fn.go chooses them: the fuzzer's coverage reaches only code in its
// own process, and the binary the other tiers call would leave it blind.
// TestSeedRequests runs the examples through the binary over gRPC.

// FuzzRunFunction runs the function on requests decoded from arbitrary
// protobuf bytes, seeded with the examples and the unit tests' requests, and
// checks what must hold for any request: no panic and no error; the same
// answer twice; no desired resource dropped or added and nothing changed but
// metadata.finalizers, by appending reference finalizers that aren't the
// Object's own, aren't there yet and aren't new on a deleting resource; with
// the features that do so by design, only the function's own Usages added,
// only resources that don't exist yet held back, and an Object's
// spec.references only appended to; with the default features, no change on
// its own output; Report mode, a fatal result and an input the function can't
// read leave desired state as it was.
func FuzzRunFunction(f *testing.F) {
	for _, req := range seedRequests(f) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	fn := inProcess()
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &fnv1.RunFunctionRequest{}
		if err := proto.Unmarshal(data, req); err != nil {
			t.Skip()
		}
		defer hangs(10 * time.Second).Stop()
		if problems := checkAnyRequest(fn, req); len(problems) > 0 {
			t.Fatalf("%s\nrequest:\n%s", strings.Join(problems, "\n"), requestJSON(req))
		}
	})
}

// FuzzRandomGraph drives the property test's generator with the fuzzer's
// bytes instead of a PRNG, so that coverage guides which graphs it makes, and
// checks every answer against the rules of docs/rules.md as TestEveryAnswerFollowsTheRules does.
func FuzzRandomGraph(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		seed := make([]byte, 64+rng.IntN(512))
		for i := range seed {
			seed[i] = byte(rng.IntN(256))
		}
		f.Add(seed)
	}
	fn := inProcess()
	f.Fuzz(func(t *testing.T, data []byte) {
		defer hangs(10 * time.Second).Stop()
		req := genRequest(&byteChooser{data: data})
		if problems := checkRequest(fn, req, nil); len(problems) > 0 {
			t.Fatalf("%s\nrequest:\n%s", strings.Join(problems, "\n"), requestJSON(req))
		}
	})
}

// hangs crashes the test binary when the input takes longer than d: the Go
// fuzzer doesn't notice a hang, but records the input of a crash.
func hangs(d time.Duration) *time.Timer {
	return time.AfterFunc(d, func() { panic(fmt.Sprintf("the function took over %s on this input", d)) })
}

// checkAnyRequest returns what the answer to an arbitrary request breaks of
// the rules that hold for every request.
func checkAnyRequest(fn *Function, req *fnv1.RunFunctionRequest) []string {
	rsp, err := fn.run(req)
	if err != nil {
		return []string{fmt.Sprintf("RunFunction returned an error: %v", err)}
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if again, err := fn.run(req); err != nil || !proto.Equal(rsp, again) {
		problem("the same request gave another answer (error %v)", err)
	}
	for _, r := range rsp.GetResults() {
		if len(r.GetMessage()) > message.MaxBytes {
			problem("a %s result's message of %d bytes, more than %d", r.GetReason(), len(r.GetMessage()), message.MaxBytes)
		}
	}
	for _, c := range rsp.GetConditions() {
		if len(c.GetMessage()) > message.MaxBytes {
			problem("a %s condition's message of %d bytes, more than %d", c.GetType(), len(c.GetMessage()), message.MaxBytes)
		}
	}

	in := req.GetInput().AsMap()
	fatal := slices.ContainsFunc(rsp.GetResults(), func(r *fnv1.Result) bool { return r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL })
	if fatal || harness.String(in, "mode") == "Report" {
		if !proto.Equal(req.GetDesired(), rsp.GetDesired()) {
			problem("desired state changed in Report mode or with a fatal result")
		}
	}
	if !fatal {
		if n := len(rsp.GetConditions()); n != 1 || rsp.GetConditions()[0].GetType() != "DeletionOrdered" {
			problem("%d conditions, want DeletionOrdered alone", n)
		}
	}
	// The features that add, hold back or rewrite desired resources by design
	// may do only that: add the function's own Usages, hold back resources
	// that don't exist yet, and append to an Object's spec.references.
	byDesign := false
	for k, v := range in {
		switch k {
		case "dependencies", "protection", "creation", "references", "infer":
			byDesign = byDesign || v != nil
		}
	}
	if !proto.Equal(rsp.GetDesired().GetComposite(), req.GetDesired().GetComposite()) {
		problem("the desired composite changed")
	}
	observed := req.GetObserved().GetResources()
	for name := range req.GetDesired().GetResources() {
		if _, kept := rsp.GetDesired().GetResources()[name]; !kept && (!byDesign || observed[name] != nil) {
			problem("desired %q was dropped: only a resource that doesn't exist yet may be held back, and only by the input's features", name)
		}
	}
	for name, r := range rsp.GetDesired().GetResources() {
		if _, ok := req.GetDesired().GetResources()[name]; !ok && (!byDesign || harness.String(r.GetResource().AsMap(), "metadata", "labels", protocol.UsageLabel) != "true") {
			problem("desired %q was added, and is not the function's own Usage", name)
		}
	}
	for name, before := range req.GetDesired().GetResources() {
		after := rsp.GetDesired().GetResources()[name]
		if after == nil || proto.Equal(before, after) {
			continue
		}
		// Each dependent Object is labelled with the composite's UID.
		if xrUID := harness.String(req.GetObserved().GetComposite().GetResource().AsMap(), "metadata", "uid"); xrUID != "" &&
			harness.String(after.GetResource().AsMap(), "metadata", "labels", oracle.DependentLabel) == xrUID {
			after = withoutLabel(after, oracle.DependentLabel)
			if harness.String(before.GetResource().AsMap(), "metadata", "labels", oracle.DependentLabel) == xrUID {
				before = withoutLabel(before, oracle.DependentLabel)
			}
		}
		// And what Objects of another group than the composite's depend on
		// with theirs.
		if g := harness.String(after.GetResource().AsMap(), "metadata", "labels", oracle.DependentGroupLabel); g == object.NamespacedGroup || g == object.ClusterGroup {
			after = withoutLabel(after, oracle.DependentGroupLabel)
			if harness.String(before.GetResource().AsMap(), "metadata", "labels", oracle.DependentGroupLabel) == g {
				before = withoutLabel(before, oracle.DependentGroupLabel)
			}
		}
		// And, with protection: Usages, what the Usages protect.
		if harness.String(after.GetResource().AsMap(), "metadata", "labels", oracle.ProtectionLabel) == "Usages" && in["protection"] == "Usages" {
			after = withoutLabel(after, oracle.ProtectionLabel)
			if harness.String(before.GetResource().AsMap(), "metadata", "labels", oracle.ProtectionLabel) == "Usages" {
				before = withoutLabel(before, oracle.ProtectionLabel)
			}
		}
		if byDesign {
			had := listOf(before.GetResource(), "spec", "references")
			now := listOf(after.GetResource(), "spec", "references")
			if len(now) < len(had) || !slices.EqualFunc(had, now[:len(had)], func(a, b *structpb.Value) bool { return proto.Equal(a, b) }) {
				problem("desired %q: the request's spec.references aren't kept in order", name)
			}
			before, after = withoutReferences(before), withoutReferences(after)
		}
		if !proto.Equal(withoutFinalizers(before), withoutFinalizers(after)) {
			problem("desired %q changed beyond metadata.finalizers, spec.references and its labels %s, %s and %s", name, oracle.DependentLabel, oracle.DependentGroupLabel, oracle.ProtectionLabel)
		}
		// Metadata or finalizers that are neither absent nor of their type
		// are left as they are: replacing them would lose what they hold.
		md, ok := before.GetResource().GetFields()["metadata"]
		if ok && md.GetStructValue() == nil {
			problem("desired %q: metadata, not an object, changed", name)
		}
		if fin, ok := md.GetStructValue().GetFields()["finalizers"]; ok && fin.GetListValue() == nil &&
			!proto.Equal(fin, after.GetResource().GetFields()["metadata"].GetStructValue().GetFields()["finalizers"]) {
			problem("desired %q: metadata.finalizers, not a list, changed", name)
		}
		had := listOf(before.GetResource(), "metadata", "finalizers")
		now := listOf(after.GetResource(), "metadata", "finalizers")
		if len(now) < len(had) || !slices.EqualFunc(had, now[:len(had)], func(a, b *structpb.Value) bool { return proto.Equal(a, b) }) {
			problem("desired %q: the request's finalizers aren't kept in order", name)
			continue
		}
		seen := map[string]bool{}
		for _, v := range had {
			seen[v.GetStringValue()] = true
		}
		carried := map[string]bool{}
		o := req.GetObserved().GetResources()[name].GetResource()
		for _, v := range listOf(o, "metadata", "finalizers") {
			carried[v.GetStringValue()] = true
		}
		deleting := o.GetFields()["metadata"].GetStructValue().GetFields()["deletionTimestamp"].GetStringValue() != ""
		for _, v := range now[len(had):] {
			a := v.GetStringValue()
			switch {
			case a == objectFinalizerName || !strings.HasPrefix(a, refFinalizerPrefix):
				problem("desired %q declares %q", name, a)
			case seen[a]:
				problem("desired %q declares %q twice", name, a)
			case deleting && !carried[a]:
				problem("desired %q is being deleted and lacks %q, which is declared anyway", name, a)
			}
			seen[a] = true
		}
	}
	if byDesign {
		// Its own output holds its Usages under their names, and lacks what
		// it held back: a run on it is not the next reconcile.
		return problems
	}
	own := proto.Clone(req).(*fnv1.RunFunctionRequest)
	own.Desired = proto.Clone(rsp.GetDesired()).(*fnv1.State)
	if second, err := fn.run(own); err != nil || !proto.Equal(rsp.GetDesired(), second.GetDesired()) {
		problem("RunFunction on its own output changed desired state (error %v)", err)
	}
	return problems
}

// withoutReferences is a copy of the resource without spec.references, and
// without the spec the function had to create to hold them.
func withoutReferences(r *fnv1.Resource) *fnv1.Resource {
	return without(r, "spec", "references")
}

// exampleDir is the repository's example folder: go test runs a package's
// tests in the package's folder.
var exampleDir = filepath.Join("..", "..", "..", "example")

// seedRequests are the examples' requests, the unit tests' and a few random
// ones.
func seedRequests(tb testing.TB) []*fnv1.RunFunctionRequest {
	tb.Helper()
	reqs := []*fnv1.RunFunctionRequest{
		requesttest.Issue371Request(10, []int{0, 2, 3, 5, 7, 9}, "", nil),
		requesttest.BadInputRequest("", requesttest.WithSharedMetadata("finalizers", structpb.NewStringValue("oops"))),
		requesttest.Issue371Request(3, []int{1}, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "mode": "Report"}`, nil),
		requesttest.CycleRequest(""),
		requesttest.CycleRequest(`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "onCycle": "Warning"}`),
		generatedRequest(371, 30),
		// At the bounds: patterns pairing more than explicit.MaxPairs, and
		// messages past a few KB. (A response past what Crossplane reads
		// takes 90,000 pairs: too slow a seed under -race, where the seeds
		// run as tests; internal/fn's tests prove that refusal.)
		requesttest.Chain(400, false, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "dependencies": [{"resource": ".*", "dependsOn": [".*"]}]}`),
		requesttest.Chain(200, true, `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "dependencies": [{"resource": "`+strings.Repeat("x", 10_000)+`", "dependsOn": ["object-0001"]}]}`),
	}
	for i := range 10 {
		reqs = append(reqs, genRequest(rngChooser{rand.New(rand.NewPCG(99, uint64(i)))}))
	}
	examples, err := filepath.Glob(filepath.Join(exampleDir, "*", "observed.yaml"))
	if err != nil || len(examples) == 0 {
		tb.Fatalf("no example/*/observed.yaml to seed from: %v", err)
	}
	for _, path := range examples {
		reqs = append(reqs, exampleRequest(tb, filepath.Dir(path)))
	}
	return reqs
}

// exampleRequest is the request this function gets in an example's pipeline,
// roughly: the example's observed composite and resources, desired as the
// rendering step writes them (metadata.name, the spec), and the step's input
// from the composition.
func exampleRequest(tb testing.TB, dir string) *fnv1.RunFunctionRequest {
	tb.Helper()
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	toStruct := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			tb.Fatalf("%s: %v", dir, err)
		}
		return s
	}
	if xr := yamlDocuments(tb, filepath.Join(dir, "xr.yaml")); len(xr) > 0 {
		req.Observed.Composite = &fnv1.Resource{Resource: toStruct(xr[0])}
	}
	for _, d := range yamlDocuments(tb, filepath.Join(dir, "observed.yaml")) {
		md, _ := d["metadata"].(map[string]any)
		annotations, _ := md["annotations"].(map[string]any)
		name, _ := annotations["crossplane.io/composition-resource-name"].(string)
		if name == "" {
			if req.Observed.Composite == nil {
				req.Observed.Composite = &fnv1.Resource{Resource: toStruct(d)}
			}
			continue
		}
		req.Observed.Resources[name] = &fnv1.Resource{Resource: toStruct(d)}
		desiredMD := map[string]any{"name": md["name"]}
		desired := map[string]any{"apiVersion": d["apiVersion"], "kind": d["kind"], "metadata": desiredMD}
		if spec, ok := d["spec"]; ok {
			desired["spec"] = spec
		}
		req.Desired.Resources[name] = &fnv1.Resource{Resource: toStruct(desired)}
	}
	for _, c := range yamlDocuments(tb, filepath.Join(dir, "composition.yaml")) {
		pipeline, _ := harness.Lookup(c, "spec", "pipeline").([]any)
		for _, s := range pipeline {
			step := asObject(s)
			if harness.String(step, "functionRef", "name") == "function-dependencies" && step["input"] != nil {
				req.Input = toStruct(asObject(step["input"]))
			}
		}
	}
	return req
}

// yamlDocuments reads the documents of a YAML file as JSON objects; a
// missing file has none.
func yamlDocuments(tb testing.TB, path string) []map[string]any {
	tb.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var docs []map[string]any
	d := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var doc map[string]any
		err := d.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		if len(doc) > 0 {
			docs = append(docs, doc)
		}
	}
}

// TestSeedRequests makes sure the examples make requests that exercise the
// function: a seed corpus of empty requests would fuzz nothing.
func TestSeedRequests(t *testing.T) {
	fn := function(t)
	for _, dir := range []string{filepath.Join(exampleDir, "cluster"), filepath.Join(exampleDir, "namespaced")} {
		req := exampleRequest(t, dir)
		if len(req.GetObserved().GetResources()) < 3 || req.GetObserved().GetComposite() == nil {
			t.Fatalf("%s: the request has %d observed resources and composite %v", dir, len(req.GetObserved().GetResources()), req.GetObserved().GetComposite() != nil)
		}
		rsp, err := fn.run(req)
		if err != nil {
			t.Fatal(err)
		}
		if proto.Equal(req.GetDesired(), rsp.GetDesired()) {
			t.Errorf("%s: the function changes nothing in the example's request: it seeds nothing interesting", dir)
		}
		if problems := checkAnyRequest(fn, req); len(problems) > 0 {
			t.Errorf("%s: %s", dir, strings.Join(problems, "\n"))
		}
	}
}
