package v1beta1

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// typed returns the input of an object with the input's apiVersion and kind
// put first, when it has neither: what every case but those of the two
// fields is about is the rest.
func typed(data string) []byte {
	if !strings.HasPrefix(data, "{") || strings.Contains(data, `"apiVersion"`) || strings.Contains(data, `"kind"`) {
		return []byte(data)
	}
	rest := strings.TrimSpace(strings.TrimPrefix(data, "{"))
	if rest != "}" {
		rest = ", " + rest
	}
	return []byte(`{"apiVersion": "` + GroupVersion + `", "kind": "Input"` + rest)
}

func TestDecodeRequiresAGivenInputToSayWhatItIs(t *testing.T) {
	cases := map[string]decodeCase{
		"NoInput": {
			reason: "A step without input has every default.",
			input:  ``,
		},
		"NoAPIVersionOrKind": {
			reason: "An input without apiVersion and kind may be another function's, in the wrong step: both are named.",
			input:  `{"mode": "Report"}`,
			want:   "[apiVersion: Required value: must be dependencies.fn.crossplane.io/v1beta1, kind: Required value: must be Input]",
		},
		"NoKind": {
			reason: "An apiVersion alone doesn't say what the object is.",
			input:  `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1"}`,
			want:   "kind: Required value: must be Input",
		},
		"AnotherFunctionsInput": {
			reason: "Another function's input is refused by its apiVersion and kind.",
			input:  `{"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources"}`,
			want:   `[apiVersion: Unsupported value: "pt.fn.crossplane.io/v1beta1": supported values: "dependencies.fn.crossplane.io/v1beta1", kind: Unsupported value: "Resources": supported values: "Input"]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if _, err := Decode([]byte(tc.input)); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDecode(%s): -want error, +got:\n%s", tc.reason, tc.input, diff)
			}
		})
	}
}

// decodeError is the message Decode fails with on the typed input; "" when
// it decodes.
func decodeError(data string) string {
	if _, err := Decode(typed(data)); err != nil {
		return err.Error()
	}
	return ""
}

// A decodeCase is an input and the exact message Decode fails with; "" when
// it decodes.
type decodeCase struct {
	reason string
	input  string
	want   string
}

// checkDecode decodes each case's input and compares the message.
func checkDecode(t *testing.T, cases map[string]decodeCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decodeError(tc.input)); diff != "" {
				t.Errorf("%s\nDecode(%s): -want error, +got:\n%s", tc.reason, tc.input, diff)
			}
		})
	}
}

func TestDecodeRejectsUnknownFields(t *testing.T) {
	checkDecode(t, map[string]decodeCase{
		"Field": {
			reason: "A misspelt field is named, rather than ignored: ignored, modus: Report would leave the mode Enforce.",
			input:  `{"modus": "Report"}`,
			want:   `unknown field "modus"`,
		},
		"FieldNamesAreCaseSensitive": {
			reason: "A field is known by its exact name only: Mode is not mode.",
			input:  `{"Mode": "Report"}`,
			want:   `unknown field "Mode"`,
		},
		"FieldOfADependency": {
			reason: "A misspelt field inside a dependency is named with its path and index.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": ["db"], "dependson": ["web"]}]}`,
			want:   `unknown field "dependencies[0].dependson"`,
		},
		"FieldOfMetadata": {
			reason: "A misspelt metadata field is named with its path.",
			input:  `{"metadata": {"nam": "order-deletion"}}`,
			want:   `unknown field "metadata.nam"`,
		},
		"Several": {
			reason: "Every unknown field is named, in the order of the input, not only the first.",
			input:  `{"modus": "Report", "onCycel": "Warning"}`,
			want:   `[unknown field "modus", unknown field "onCycel"]`,
		},
	})
}

func TestDecodeRejectsInputMeantForAnotherFunction(t *testing.T) {
	checkDecode(t, map[string]decodeCase{
		"APIVersionAndKind": {
			reason: "An apiVersion and kind that are not this function's are each named with the one supported, as an unsupported value is.",
			input:  `{"apiVersion": "example.org/v1", "kind": "Inptu", "mode": "Report"}`,
			want: `[apiVersion: Unsupported value: "example.org/v1": supported values: "dependencies.fn.crossplane.io/v1beta1", ` +
				`kind: Unsupported value: "Inptu": supported values: "Input"]`,
		},
		"APIVersion": {
			reason: "Another apiVersion is named even when the kind is Input.",
			input:  `{"apiVersion": "example.org/v1", "kind": "Input"}`,
			want:   `apiVersion: Unsupported value: "example.org/v1": supported values: "dependencies.fn.crossplane.io/v1beta1"`,
		},
		"ThisFunctions": {
			reason: "This function's apiVersion and kind decode.",
			input:  `{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input"}`,
		},
	})
}

func TestDecodeRejectsValuesOutsideTheEnum(t *testing.T) {
	checkDecode(t, map[string]decodeCase{
		"ValuesAreCaseSensitive": {
			reason: "Values are case-sensitive; the message names the field and lists the supported values.",
			input:  `{"mode": "enforce"}`,
			want:   `mode: Unsupported value: "enforce": supported values: "Enforce", "Report"`,
		},
		"Infer": {
			reason: "An unsupported kind of inferred edge is named by its place in the list, with the supported values.",
			input:  `{"infer": ["ProviderConfigs", "Secrets"]}`,
			want:   `infer[1]: Unsupported value: "Secrets": supported values: "ProviderConfigs", "Credentials", "ManagedReferences"`,
		},
		"InferNotAList": {
			reason: "infer is a list; a single value is named with what it must be.",
			input:  `{"infer": "Credentials"}`,
			want:   `infer: Invalid value: "string": must be a list of kinds of edge (ProviderConfigs, Credentials, ManagedReferences)`,
		},
		"OnCycle": {
			reason: "An unsupported onCycle is named with the supported values.",
			input:  `{"onCycle": "Ignore"}`,
			want:   `onCycle: Unsupported value: "Ignore": supported values: "Fatal", "Warning"`,
		},
		"References": {
			reason: "An unsupported references policy is named with the supported values.",
			input:  `{"references": "infer"}`,
			want:   `references: Unsupported value: "infer": supported values: "Infer", "Ignore"`,
		},
		"RemovedUsages": {
			reason: "The removed usages field is named with what decides Usages now, whatever its value.",
			input:  `{"usages": "All"}`,
			want:   `unknown field "usages": removed: protection decides whether the step writes Usages (Usages or Both protect with a Usage every edge no reference finalizer protects, references outside the composite included)`,
		},
		"UsageAPI": {
			reason: "An unsupported Usage API version is named with the supported ones.",
			input:  `{"usageAPI": "protection.crossplane.io/v1"}`,
			want:   `usageAPI: Unsupported value: "protection.crossplane.io/v1": supported values: "protection.crossplane.io/v1beta1", "apiextensions.crossplane.io/v1beta1"`,
		},
		"Creation": {
			reason: "An unsupported creation policy is named with the supported values.",
			input:  `{"creation": "Later"}`,
			want:   `creation: Unsupported value: "Later": supported values: "Immediate", "WaitForReady"`,
		},
		"Several": {
			reason: "Every unsupported value is named, not only the first.",
			input:  `{"mode": "Fix", "onCycle": "Ignore"}`,
			want: `[mode: Unsupported value: "Fix": supported values: "Enforce", "Report", ` +
				`onCycle: Unsupported value: "Ignore": supported values: "Fatal", "Warning"]`,
		},
	})
}

func TestDecodeRequiresResourceAndDependsOn(t *testing.T) {
	checkDecode(t, map[string]decodeCase{
		"WithoutDependsOn": {
			reason: "A dependency that depends on nothing is named.",
			input:  `{"dependencies": [{"resource": "app"}]}`,
			want:   `dependencies[0].dependsOn: Required value: names at least one resource`,
		},
		"EmptyDependsOn": {
			reason: "An empty dependsOn depends on nothing, as an absent one does.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": []}]}`,
			want:   `dependencies[0].dependsOn: Required value: names at least one resource`,
		},
		"WithoutResource": {
			reason: "A dependency without its dependent is named.",
			input:  `{"dependencies": [{"dependsOn": ["db"]}]}`,
			want:   `dependencies[0].resource: Required value: a composition resource name or an RE2 pattern`,
		},
		"EmptyResource": {
			reason: "An empty resource is no dependent, as an absent one is.",
			input:  `{"dependencies": [{"resource": "", "dependsOn": ["db"]}]}`,
			want:   `dependencies[0].resource: Required value: a composition resource name or an RE2 pattern`,
		},
		"EmptyDependsOnEntry": {
			reason: "An empty entry of dependsOn is named with both indexes.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": ["db"]}, {"resource": "web", "dependsOn": ["db", ""]}]}`,
			want:   `dependencies[1].dependsOn[1]: Required value: a composition resource name or an RE2 pattern`,
		},
		"Neither": {
			reason: "A dependency with neither is named for both.",
			input:  `{"dependencies": [{}]}`,
			want: `[dependencies[0].resource: Required value: a composition resource name or an RE2 pattern, ` +
				`dependencies[0].dependsOn: Required value: names at least one resource]`,
		},
	})
}

func TestDecodeRejectsPatternsThatAreNotRE2(t *testing.T) {
	checkDecode(t, map[string]decodeCase{
		"Resource": {
			reason: "A dependent pattern that isn't RE2 is named with the parser's reason.",
			input:  `{"dependencies": [{"resource": "dep-(", "dependsOn": ["db"]}]}`,
			want:   "dependencies[0].resource: Invalid value: \"dep-(\": error parsing regexp: missing closing ): `dep-(`",
		},
		"DependsOnEntry": {
			reason: "A dependency pattern that isn't RE2 is named with its index and the parser's reason.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": ["db", "*"]}]}`,
			want:   "dependencies[0].dependsOn[1]: Invalid value: \"*\": error parsing regexp: missing argument to repetition operator: `*`",
		},
	})
}

func TestDecodeRejectsPatternsThatCannotMatchWholeNames(t *testing.T) {
	checkDecode(t, map[string]decodeCase{
		"UnterminatedQuoteInResource": {
			reason: `\Qshared compiles alone, but anchored the quote swallows the closing ")$": it could never match, so it is an error naming the field, not an "unmatched dependency" warning.`,
			input:  `{"dependencies": [{"resource": "\\Qshared", "dependsOn": ["db"]}]}`,
			want:   "dependencies[0].resource: Invalid value: \"\\\\Qshared\": cannot be anchored to match whole names: error parsing regexp: missing closing ): `^(?:\\Qshared)$`",
		},
		"UnterminatedQuoteInDependsOn": {
			reason: "A dependsOn entry that cannot be anchored is named with its index.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": ["db", "\\Qshared"]}]}`,
			want:   "dependencies[0].dependsOn[1]: Invalid value: \"\\\\Qshared\": cannot be anchored to match whole names: error parsing regexp: missing closing ): `^(?:\\Qshared)$`",
		},
		"TerminatedQuote": {
			reason: `A quote closed with \E is a whole pattern, and valid.`,
			input:  `{"dependencies": [{"resource": "\\Qapp.db\\E", "dependsOn": ["\\Qdb\\E.*"]}]}`,
		},
		"UnbalancedGroupsThatWouldCompileAnchored": {
			reason: `a)|(b is no pattern, although anchored as ^(?:a)|(b)$ it would compile, and match names that only start with a.`,
			input:  `{"dependencies": [{"resource": "a)|(b", "dependsOn": ["db"]}]}`,
			want:   "dependencies[0].resource: Invalid value: \"a)|(b\": error parsing regexp: unexpected ): `a)|(b`",
		},
		"TrailingBackslash": {
			reason: `The parser's reason is the entry's own, not the anchored form's: a\ ends in a backslash, although anchored it would lack a ")".`,
			input:  `{"dependencies": [{"resource": "app", "dependsOn": ["a\\"]}]}`,
			want:   "dependencies[0].dependsOn[0]: Invalid value: \"a\\\\\": error parsing regexp: trailing backslash at end of expression: ``",
		},
	})
}

func TestPatternMatchesWholeNames(t *testing.T) {
	names := []string{"app", "app-db", "db", "xapp", "app.db", "appXdb"}
	cases := map[string]struct {
		reason string
		entry  string
		want   []string
	}{
		"Name": {
			reason: "A name matches itself only, not the names that contain it.",
			entry:  "app",
			want:   []string{"app"},
		},
		"Alternation": {
			reason: "The anchor holds the whole alternation: app|db doesn't match names that start with app or end with db.",
			entry:  "app|db",
			want:   []string{"app", "db"},
		},
		"Quote": {
			reason: `\Q…\E quotes: the dot is a dot.`,
			entry:  `\Qapp.db\E`,
			want:   []string{"app.db"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			re, err := Pattern(tc.entry)
			if err != nil {
				t.Fatalf("%s\nPattern(%q): %v", tc.reason, tc.entry, err)
			}
			var got []string
			for _, n := range names {
				if re.MatchString(n) {
					got = append(got, n)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPattern(%q) matches: -want, +got:\n%s", tc.reason, tc.entry, diff)
			}
		})
	}
}

func TestDecodeNamesValuesOfTheWrongType(t *testing.T) {
	checkDecode(t, map[string]decodeCase{
		"APIVersion": {
			reason: "A number where a string goes is named by its path and JSON type.",
			input:  `{"apiVersion": 1}`,
			want:   `apiVersion: Invalid value: "number": must be a string`,
		},
		"Kind": {
			reason: "A list where a string goes is an array, in JSON's words.",
			input:  `{"kind": ["Input"]}`,
			want:   `kind: Invalid value: "array": must be a string`,
		},
		"Metadata": {
			reason: "Metadata that is a string is named.",
			input:  `{"metadata": "order"}`,
			want:   `metadata: Invalid value: "string": must be an object`,
		},
		"MetadataName": {
			reason: "A field inside metadata is named with its path.",
			input:  `{"metadata": {"name": 7}}`,
			want:   `metadata.name: Invalid value: "number": must be a string`,
		},
		"MetadataLabels": {
			reason: "Labels that are a list are named.",
			input:  `{"metadata": {"labels": ["a"]}}`,
			want:   `metadata.labels: Invalid value: "array": must be an object`,
		},
		"MetadataGeneration": {
			reason: "A fraction where an integer goes is named, with its JSON type.",
			input:  `{"metadata": {"generation": 1.5}}`,
			want:   `metadata.generation: Invalid value: "number": must be an integer`,
		},
		"Mode": {
			reason: "A number where a mode goes is named.",
			input:  `{"mode": 1}`,
			want:   `mode: Invalid value: "number": must be a string`,
		},
		"OnCycle": {
			reason: "A boolean is a boolean, in JSON's words, not Go's bool.",
			input:  `{"onCycle": true}`,
			want:   `onCycle: Invalid value: "boolean": must be a string`,
		},
		"References": {
			reason: "An object where a string goes is named.",
			input:  `{"references": {"Infer": true}}`,
			want:   `references: Invalid value: "object": must be a string`,
		},
		"UsageAPI": {
			reason: "A number where a string goes is named.",
			input:  `{"usageAPI": 1}`,
			want:   `usageAPI: Invalid value: "number": must be a string`,
		},
		"Creation": {
			reason: "A list where a string goes is named.",
			input:  `{"creation": []}`,
			want:   `creation: Invalid value: "array": must be a string`,
		},
		"Dependencies": {
			reason: "Dependencies that are one object rather than a list are named.",
			input:  `{"dependencies": {"resource": "app", "dependsOn": ["db"]}}`,
			want:   `dependencies: Invalid value: "object": must be a list of dependencies, each with resource and dependsOn`,
		},
		"Dependency": {
			reason: "A dependency that is a string is named with its index.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": ["db"]}, "app"]}`,
			want:   `dependencies[1]: Invalid value: "string": must be an object with resource and dependsOn`,
		},
		"Resource": {
			reason: "A resource that is a list is named with its dependency's index.",
			input:  `{"dependencies": [{"resource": ["app"], "dependsOn": ["db"]}]}`,
			want:   `dependencies[0].resource: Invalid value: "array": must be a composition resource name or pattern`,
		},
		"DependsOn": {
			reason: "A dependsOn that is a string rather than a list is named with what it must be.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": "db"}]}`,
			want:   `dependencies[0].dependsOn: Invalid value: "string": must be a list of composition resource names or patterns`,
		},
		"DependsOnEntry": {
			reason: "An entry of dependsOn that is a number is named with both indexes.",
			input:  `{"dependencies": [{"resource": "app", "dependsOn": ["db"]}, {"resource": "web", "dependsOn": ["db", 7]}]}`,
			want:   `dependencies[1].dependsOn[1]: Invalid value: "number": must be a composition resource name or pattern`,
		},
		"Several": {
			reason: "Every value of the wrong type is named, not only the first the decoder meets.",
			input:  `{"mode": 1, "onCycle": true, "dependencies": [{"resource": 1, "dependsOn": "db"}]}`,
			want: `[dependencies[0].dependsOn: Invalid value: "string": must be a list of composition resource names or patterns, ` +
				`dependencies[0].resource: Invalid value: "number": must be a composition resource name or pattern, ` +
				`mode: Invalid value: "number": must be a string, onCycle: Invalid value: "boolean": must be a string]`,
		},
		"Null": {
			reason: "null is no value of the wrong type: it is as good as leaving the field out.",
			input:  `{"mode": null, "metadata": null, "dependencies": null}`,
		},
		"NotAnObject": {
			reason: "An input that is not an object says what it must be.",
			input:  `["mode", "Report"]`,
			want:   `the input must be an object, not an array`,
		},
	})
}

// TestDecodeNamesEveryFieldOfTheWrongType gives each field of the Input and
// of its dependencies, found from the Go types rather than listed, a value of
// the wrong type, and checks that the error names that field's path: a field
// added later is named too, or this fails.
func TestDecodeNamesEveryFieldOfTheWrongType(t *testing.T) {
	// wrong is a JSON value of another type than typ decodes from.
	wrong := func(typ reflect.Type) string {
		if typ.Kind() == reflect.String {
			return "true"
		}
		return `"wrong"`
	}
	inlined := func(f reflect.StructField) bool {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return f.Anonymous && name == ""
	}
	// fields returns each JSON field of a struct, with its Go type; the
	// fields of embedded structs are the struct's own, as in JSON.
	fields := func(typ reflect.Type) []reflect.StructField {
		var out []reflect.StructField
		for _, f := range reflect.VisibleFields(typ) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case inlined(f):
				continue
			case len(f.Index) > 1 && !inlined(typ.Field(f.Index[0])):
				continue
			}
			f.Name = name
			out = append(out, f)
		}
		return out
	}
	// cases maps a field's path to an input that gives it, and only it, a
	// value of the wrong type.
	cases := map[string]string{}
	for _, f := range fields(reflect.TypeFor[Input]()) {
		cases[f.Name] = `{"` + f.Name + `": ` + wrong(f.Type) + `}`
	}
	for _, f := range fields(reflect.TypeFor[Dependency]()) {
		cases["dependencies[0]."+f.Name] = `{"dependencies": [{"` + f.Name + `": ` + wrong(f.Type) + `}]}`
		if f.Type.Kind() == reflect.Slice {
			cases["dependencies[0]."+f.Name+"[0]"] = `{"dependencies": [{"` + f.Name + `": [` + wrong(f.Type.Elem()) + `]}]}`
		}
	}
	cases["dependencies[0]"] = `{"dependencies": [` + wrong(reflect.TypeFor[Dependency]()) + `]}`
	for path, input := range cases {
		t.Run(path, func(t *testing.T) {
			got := decodeError(input)
			if !strings.HasPrefix(got, path+": Invalid value: ") {
				t.Errorf("Decode(%s): %q, want an error naming %s", input, got, path)
			}
		})
	}
}

// TestEachStepRefusesTheFieldsItDoesntRead proves that a field the step
// ignores is an error naming it, rather than a setting that silently does
// nothing, and that a field the step reads is accepted.
func TestEachStepRefusesTheFieldsItDoesntRead(t *testing.T) {
	cases := map[string]struct {
		reason string
		step   Step
		input  string
		want   string
	}{
		"CompositionObjectSelector": {
			reason: "Only an Operation selects Objects.",
			step:   StepComposition,
			input:  `{"objectSelector": {"matchLabels": {"team": "a"}}}`,
			want:   "objectSelector: Forbidden: only an Operation reads it; a Composition step handles the composite's own resources",
		},
		"CompositionEverythingElse": {
			reason: "A Composition step reads every other field.",
			step:   StepComposition,
			input:  `{"mode": "Report", "onCycle": "Warning", "references": "Ignore", "protection": "Both", "usageAPI": "apiextensions.crossplane.io/v1beta1", "creation": "WaitForReady", "graph": "Context", "infer": ["ProviderConfigs", "Credentials", "ManagedReferences"], "dependencies": [{"resource": "a", "dependsOn": ["b"]}]}`,
		},
		"OperationCompositionFields": {
			reason: "An Operation protects no composite's edges: each field that says how is named, in order.",
			step:   StepOperation,
			input:  `{"onCycle": "Warning", "protection": "Usages", "infer": ["Credentials"], "dependencies": [{"resource": "a", "dependsOn": ["b"]}]}`,
			want:   "[dependencies: Forbidden: only a Composition step reads it; an Operation protects no composite's edges, and breaks every cycle with a warning, infer: Forbidden: only a Composition step reads it; an Operation protects no composite's edges, and breaks every cycle with a warning, onCycle: Forbidden: only a Composition step reads it; an Operation protects no composite's edges, and breaks every cycle with a warning, protection: Forbidden: only a Composition step reads it; an Operation protects no composite's edges, and breaks every cycle with a warning]",
		},
		"OperationModeAndSelector": {
			reason: "An Operation reads mode and objectSelector.",
			step:   StepOperation,
			input:  `{"mode": "Report", "objectSelector": {"matchLabels": {"team": "a"}}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if _, err := DecodeFor(typed(tc.input), tc.step); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDecodeFor(%s, %s): -want error, +got:\n%s", tc.reason, tc.input, tc.step, diff)
			}
		})
	}
}

// TestUsagesAreOneDecision proves the one rule of whether a step writes
// Usages: protection Usages or Both, or infer, whose edges only a Usage can
// protect. The defaults write none.
func TestUsagesAreOneDecision(t *testing.T) {
	cases := map[string]struct {
		in   Input
		want bool
	}{
		"Defaults":             {in: Input{}, want: false},
		"ProtectionFinalizers": {in: Input{Protection: ProtectionFinalizers}, want: false},
		"ProtectionUsages":     {in: Input{Protection: ProtectionUsages}, want: true},
		"ProtectionBoth":       {in: Input{Protection: ProtectionBoth}, want: true},
		"Infer":                {in: Input{Infer: []Inference{InferProviderConfigs}}, want: true},
		"InferAndFinalizers":   {in: Input{Protection: ProtectionFinalizers, Infer: []Inference{InferCredentials}}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.Default()
			if got := tc.in.WritesUsages(); got != tc.want {
				t.Errorf("WritesUsages() of %+v = %t, want %t", tc.in, got, tc.want)
			}
		})
	}
}
