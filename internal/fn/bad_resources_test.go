package fn

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/request/requesttest"
	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// withBadReferences gives the bad Object these spec.references, as JSON.
func withBadReferences(references string) func(*fnv1.RunFunctionRequest) {
	return func(r *fnv1.RunFunctionRequest) {
		r.Desired.Resources["bad"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-bad", References: references}.Resource()
	}
}

func inputJSON(fields string) string {
	return `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", ` + fields + `}`
}

// inputError is the result of an input the function can't read.
func inputError(message string) *fnv1.Result {
	return &fnv1.Result{Severity: fnv1.Severity_SEVERITY_FATAL, Message: "invalid function input: " + message, Target: fnv1.Target_TARGET_COMPOSITE.Enum()}
}

func invalidReference(problem string) *fnv1.Result {
	return requesttest.Warning("InvalidReference", "cannot read references: bad: "+problem)
}

// The finalizers shared ends with: all three dependents', or without bad's
// when its reference can't be read.
var (
	sharedAll        = []string{"example.org/earlier-step", requesttest.RefPrefix + "uid-bad", requesttest.RefPrefix + "uid-dep-00", requesttest.RefPrefix + "uid-dep-01"}
	sharedWithoutBad = []string{"example.org/earlier-step", requesttest.RefPrefix + "uid-dep-00", requesttest.RefPrefix + "uid-dep-01"}
)

// A badInput case breaks one thing of badInputRequest.
type badInput struct {
	reason string
	input  string
	change func(*fnv1.RunFunctionRequest)
	// want is the result that names the resource and the field, exactly.
	want *fnv1.Result
	// shared is the shared Object's desired metadata.finalizers afterwards;
	// nil when the function must leave it as the request has it.
	shared []string
}

// TestInvalidInputIsFatalAndLeavesDesiredStateUnchanged checks what
// RunFunction does with a step's input that v1beta1.Decode rejects: its only
// result is Fatal, "invalid function input: " and Decode's message, and
// desired state is left as the request has it. Which inputs Decode rejects,
// and with which message, is tested with Decode in input/v1beta1.
func TestInvalidInputIsFatalAndLeavesDesiredStateUnchanged(t *testing.T) {
	input := inputJSON(`"modus": "Report"`)
	_, err := v1beta1.Decode([]byte(input))
	if err == nil {
		t.Fatalf("v1beta1.Decode(%s) decodes; the case needs an input it rejects", input)
	}
	checkBadInput(t, New(logging.NewNopLogger()), badInput{
		reason: "A misspelt field fails the step with Decode's message and changes nothing: read with every default, the input would declare the three dependents' finalizers on shared.",
		input:  input,
		want:   inputError(err.Error()),
	})
}

// TestBadResourcesAreNamedByFieldAndLoseNothingElse is the catalogue of bad
// composed resources: Objects' references, metadata and resource bodies, and
// dependencies of the input that match none of them. Each case must produce
// exactly the result that names the resource and the field, and lose nothing
// else: every other desired resource is left as the request has it, and the
// shared Object gets the finalizers of every dependent that can still be
// read. A null where a list or an object goes is as good as none.
func TestBadResourcesAreNamedByFieldAndLoseNothingElse(t *testing.T) {
	cases := map[string]badInput{
		"FinalizersNull": {
			reason: "metadata.finalizers: null means no finalizers: the function declares them, as for an absent list.",
			change: requesttest.WithSharedMetadata("finalizers", structpb.NewNullValue()),
			want:   requesttest.Summary("4 composed resources, 3 references between them and none to external objects; 2 reference finalizers added"),
			shared: []string{requesttest.RefPrefix + "uid-bad", requesttest.RefPrefix + "uid-dep-00", requesttest.RefPrefix + "uid-dep-01"},
		},
		"MetadataNull": {
			reason: "metadata: null means no metadata: the function declares the finalizers, as for absent metadata.",
			change: func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["shared"].Resource.Fields["metadata"] = structpb.NewNullValue()
			},
			want:   requesttest.Summary("4 composed resources, 3 references between them and none to external objects; 2 reference finalizers added"),
			shared: []string{requesttest.RefPrefix + "uid-bad", requesttest.RefPrefix + "uid-dep-00", requesttest.RefPrefix + "uid-dep-01"},
		},
		"InvalidAPIVersionMatchesNothing": {
			reason: "A composed resource with an invalid apiVersion matches no reference, as state.go says: the reference is external, and counted as one.",
			change: func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["cm"] = requesttest.Obj{APIVersion: "v1/x/y", Kind: "ConfigMap", Name: "cm"}.Resource()
				r.Desired.Resources["bad"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-bad", References: `[{"dependsOn": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}}]`}.Resource()
			},
			// An external reference is no problem by itself: the summary counts it.
			want:   requesttest.Summary("5 composed resources, 2 references between them and 1 to an external object, 1 of them unprotected; 1 reference finalizer added"),
			shared: sharedWithoutBad,
		},
		"FatalCycleSummary": {
			reason: "With a fatal cycle nothing is declared, and the summary says so.",
			change: func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["shared"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-shared", Finalizers: []string{"example.org/earlier-step"}, References: requesttest.DependsOn("app-bad")}.Resource()
			},
			want: requesttest.Summary("4 composed resources, 4 references between them and none to external objects; 3 reference finalizers to add (the cycle failed the step: desired state left unchanged)"),
		},
		// Dependencies of the input that match no composed resource.
		"InputDependencyMatchesNothing": {
			reason: "A dependency pattern that matches no composed resource is a warning naming the entry; the rest works.",
			input:  inputJSON(`"dependencies": [{"resource": "nothing-matches", "dependsOn": ["shared"]}]`),
			want:   requesttest.Warning("UnmatchedDependency", `dependencies in the input match no composed resource: dependencies[0].resource "nothing-matches"`),
			shared: sharedAll,
		},

		// References of an Object.
		"ReferencesNotAList": {
			reason: "spec.references that is an object is named with its JSON type, not its value.",
			change: withBadReferences(`{"dependsOn": {"name": "app-shared"}}`),
			want:   invalidReference(`spec.references: Invalid value: "object": must be a list of references`),
			shared: sharedWithoutBad,
		},
		"ReferenceNotAnObject": {
			reason: "A reference that is a string is named with its index.",
			change: withBadReferences(`["app-shared"]`),
			want:   invalidReference(`spec.references[0]: Invalid value: "string": must be an object with dependsOn or patchesFrom`),
			shared: sharedWithoutBad,
		},
		"ReferenceWithoutTarget": {
			reason: "A reference with neither dependsOn nor patchesFrom is named.",
			change: withBadReferences(`[{"toFieldPath": "data.uid"}]`),
			want:   invalidReference(`spec.references[0]: Required value: must set dependsOn or patchesFrom`),
			shared: sharedWithoutBad,
		},
		"ReferenceDependsOnNull": {
			reason: "A null dependsOn is as good as none.",
			change: withBadReferences(`[{"dependsOn": null}]`),
			want:   invalidReference(`spec.references[0]: Required value: must set dependsOn or patchesFrom`),
			shared: sharedWithoutBad,
		},
		"DependsOnNotAnObject": {
			reason: "A dependsOn that is a string is named.",
			change: withBadReferences(`[{"dependsOn": "app-shared"}]`),
			want:   invalidReference(`spec.references[0].dependsOn: Invalid value: "string": must be an object`),
			shared: sharedWithoutBad,
		},
		"DependsOnWithoutName": {
			reason: "A dependsOn without name is named down to the field.",
			change: withBadReferences(`[{"dependsOn": {"kind": "Object"}}]`),
			want:   invalidReference(`spec.references[0].dependsOn.name: Required value: names the referenced object`),
			shared: sharedWithoutBad,
		},
		"DependsOnEmptyName": {
			reason: "An empty name is no name.",
			change: withBadReferences(`[{"dependsOn": {"name": ""}}]`),
			want:   invalidReference(`spec.references[0].dependsOn.name: Required value: names the referenced object`),
			shared: sharedWithoutBad,
		},
		"DependsOnNameNotAString": {
			reason: "A name of the wrong type is named with its JSON type.",
			change: withBadReferences(`[{"dependsOn": {"name": 7}}]`),
			want:   invalidReference(`spec.references[0].dependsOn.name: Invalid value: "number": must be a string`),
			shared: sharedWithoutBad,
		},
		"DependsOnAPIVersionInvalid": {
			reason: "An apiVersion with two slashes is named with the value and the parser's reason.",
			change: withBadReferences(`[{"dependsOn": {"apiVersion": "kubernetes.crossplane.io/v1alpha2/x", "name": "app-shared"}}]`),
			want:   invalidReference(`spec.references[0].dependsOn.apiVersion: Invalid value: "kubernetes.crossplane.io/v1alpha2/x": unexpected GroupVersion string: kubernetes.crossplane.io/v1alpha2/x`),
			shared: sharedWithoutBad,
		},
		"DependsOnAPIVersionNotAString": {
			reason: "An apiVersion of the wrong type is named.",
			change: withBadReferences(`[{"dependsOn": {"apiVersion": 1, "name": "app-shared"}}]`),
			want:   invalidReference(`spec.references[0].dependsOn.apiVersion: Invalid value: "number": must be a string`),
			shared: sharedWithoutBad,
		},
		"DependsOnKindNotAString": {
			reason: "A kind of the wrong type is named.",
			change: withBadReferences(`[{"dependsOn": {"kind": ["Object"], "name": "app-shared"}}]`),
			want:   invalidReference(`spec.references[0].dependsOn.kind: Invalid value: "list": must be a string`),
			shared: sharedWithoutBad,
		},
		"DependsOnNamespaceNotAString": {
			reason: "A namespace of the wrong type is named.",
			change: withBadReferences(`[{"dependsOn": {"namespace": false, "name": "app-shared"}}]`),
			want:   invalidReference(`spec.references[0].dependsOn.namespace: Invalid value: "boolean": must be a string`),
			shared: sharedWithoutBad,
		},
		"PatchesFromWithoutName": {
			reason: "patchesFrom is checked like dependsOn, and named as patchesFrom.",
			change: withBadReferences(`[{"patchesFrom": {"fieldPath": "metadata.uid"}, "toFieldPath": "data.uid"}]`),
			want:   invalidReference(`spec.references[0].patchesFrom.name: Required value: names the referenced object`),
			shared: sharedWithoutBad,
		},
		"BothDependsOnAndPatchesFrom": {
			reason: "A reference setting both is reported, and followed through patchesFrom as the provider does: shared still gets bad's finalizer.",
			change: withBadReferences(`[{"dependsOn": {"name": "app-dep-00"}, "patchesFrom": {"name": "app-shared", "fieldPath": "metadata.uid"}, "toFieldPath": "data.uid"}]`),
			want:   invalidReference(`spec.references[0]: Invalid value: "dependsOn and patchesFrom": sets both; provider-kubernetes uses patchesFrom and ignores dependsOn`),
			shared: sharedAll,
		},
		"SecondReferenceInvalid": {
			reason: "An invalid reference after a valid one is named by its index; the valid one still protects shared.",
			change: withBadReferences(`[{"dependsOn": {"name": "app-shared"}}, {"dependsOn": {"name": ""}}]`),
			want:   invalidReference(`spec.references[1].dependsOn.name: Required value: names the referenced object`),
			shared: sharedAll,
		},
		"ReferenceOfARemovedObject": {
			reason: "An Object the composition removes is read from observed state, and its bad references are reported the same way.",
			change: func(r *fnv1.RunFunctionRequest) {
				delete(r.Desired.Resources, "bad")
				r.Observed.Resources["bad"] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: "app-bad", UID: "uid-bad", References: `[{"dependsOn": {}}]`}.Resource()
			},
			want:   invalidReference(`spec.references[0].dependsOn.name: Required value: names the referenced object`),
			shared: sharedWithoutBad,
		},
		"ManyInvalidReferences": {
			reason: "Twelve invalid references are named ten at a time, then counted, so the message stays short.",
			change: withBadReferences(`[{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}]`),
			want: invalidReference(strings.Join(func() []string {
				var items []string
				for i := range 10 {
					items = append(items, fmt.Sprintf("spec.references[%d]: Required value: must set dependsOn or patchesFrom", i))
				}
				return items
			}(), ", bad: ") + " and 2 more"),
			shared: sharedWithoutBad,
		},
		"CoreGroupWithoutKind": {
			reason: "apiVersion v1 without kind is the core group's kind Object, which nothing is: an external reference, counted as one.",
			change: withBadReferences(`[{"dependsOn": {"apiVersion": "v1", "name": "app-shared"}}]`),
			want:   requesttest.Summary("4 composed resources, 2 references between them and 1 to an external object, 1 of them unprotected; 1 reference finalizer added"),
			shared: sharedWithoutBad,
		},

		// Metadata and bodies of desired resources.
		"FinalizersNotAList": {
			reason: "A desired resource whose metadata.finalizers is a string is left as it is, named with the field.",
			change: requesttest.WithSharedMetadata("finalizers", structpb.NewStringValue("oops")),
			want:   requesttest.Warning("InvalidResource", `cannot declare reference finalizers on composed resource "shared": metadata.finalizers is not a list`),
		},
		"MetadataNotAnObject": {
			reason: "A desired resource whose metadata is a string is left as it is, named with the field.",
			change: func(r *fnv1.RunFunctionRequest) {
				r.Desired.Resources["shared"].Resource.Fields["metadata"] = structpb.NewStringValue("oops")
			},
			want: requesttest.Warning("InvalidResource", `cannot declare reference finalizers on composed resource "shared": metadata is not an object`),
		},
	}
	f := New(logging.NewNopLogger())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkBadInput(t, f, tc)
		})
	}

	// Two cases check what a single result can't: a finalizer declared
	// once for two Objects with one UID, and a message in the same order on
	// every call.
	t.Run("DuplicateUID", func(t *testing.T) {
		req := requesttest.BadInputRequest("", func(r *fnv1.RunFunctionRequest) {
			r.Observed.Resources["dep-01"].Resource.Fields["metadata"].GetStructValue().Fields["uid"] = structpb.NewStringValue("uid-dep-00")
		})
		rsp, err := runCopy(f, req)
		if err != nil {
			t.Fatal(err)
		}
		got := harness.Strings(rsp.GetDesired().GetResources()["shared"].GetResource().AsMap(), "metadata", "finalizers")
		if !slices.Equal(got, slices.Compact(slices.Clone(got))) || len(got) != 3 {
			t.Errorf("shared declares %q, want each finalizer once: earlier-step, bad's and dep-00's", got)
		}
	})

	t.Run("InvalidReferencesInNameOrder", func(t *testing.T) {
		req := requesttest.BadInputRequest("", func(r *fnv1.RunFunctionRequest) {
			for _, name := range []string{"a", "b", "c", "d"} {
				r.Desired.Resources[name] = requesttest.Obj{APIVersion: requesttest.ClusterObject, Name: name, References: `[{}]`}.Resource()
			}
		})
		want := requesttest.Warning("InvalidReference", "cannot read references: a: spec.references[0]: Required value: must set dependsOn or patchesFrom, "+
			"b: spec.references[0]: Required value: must set dependsOn or patchesFrom, c: spec.references[0]: Required value: must set dependsOn or patchesFrom, "+
			"d: spec.references[0]: Required value: must set dependsOn or patchesFrom")
		for range 20 {
			rsp, err := runCopy(f, req)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(rsp.GetResults(), func(r *fnv1.Result) bool { return r.GetReason() == "InvalidReference" })
			if i < 0 || !proto.Equal(rsp.GetResults()[i], want) {
				t.Fatalf("InvalidReference result: -want +got:\n%s", cmp.Diff(want, rsp.GetResults(), protocmp.Transform()))
			}
		}
	})
}

func checkBadInput(t *testing.T, f *Function, tc badInput) {
	t.Helper()
	req := requesttest.BadInputRequest(tc.input, tc.change)
	rsp, err := runCopy(f, req)
	if err != nil {
		t.Fatalf("%s\nRunFunction(...): %v", tc.reason, err)
	}
	var matching []*fnv1.Result
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == tc.want.GetSeverity() && r.GetReason() == tc.want.GetReason() {
			matching = append(matching, r)
		}
	}
	if len(matching) != 1 || !proto.Equal(matching[0], tc.want) {
		t.Errorf("%s\nresults with severity %s and reason %q: -want +got:\n%s", tc.reason, tc.want.GetSeverity(), tc.want.GetReason(),
			cmp.Diff([]*fnv1.Result{tc.want}, matching, protocmp.Transform()))
	}
	want := proto.Clone(req.GetDesired()).(*fnv1.State)
	if tc.want.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
		if len(rsp.GetResults()) != 1 {
			t.Errorf("%s\nan input error is the only result; got %v", tc.reason, rsp.GetResults())
		}
	} else if tc.shared != nil {
		fields := want.GetResources()["shared"].GetResource().GetFields()
		if fields["metadata"].GetStructValue() == nil {
			fields["metadata"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{}})
		}
		shared := fields["metadata"].GetStructValue()
		shared.Fields["finalizers"] = structpb.NewListValue(&structpb.ListValue{})
		for _, fin := range tc.shared {
			shared.Fields["finalizers"].GetListValue().Values = append(shared.Fields["finalizers"].GetListValue().Values, structpb.NewStringValue(fin))
		}
	}
	if diff := cmp.Diff(want, rsp.GetDesired(), protocmp.Transform()); diff != "" {
		t.Errorf("%s\ndesired state: -want +got:\n%s", tc.reason, diff)
	}
}
