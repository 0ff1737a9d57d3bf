package v1beta1

// What the input may say: each field declared once, its default and the
// values it may have, and the checks derived from that.

import (
	"cmp"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// An inputField declares one field of the Input, once: the steps that read
// it, its default, the values it may have and the JSON its value must be.
// Default, Validate, the refusal of a field the step doesn't read and the
// names of values of the wrong type all derive from it; the kubebuilder
// markers in input.go, which controller-gen reads, can't, so a test holds the
// generated CRD and the struct's json tags to it.
type inputField struct {
	// name is the field's JSON name.
	name string
	// readBy are the steps that read it: another step refuses it when set.
	readBy []Step
	// def is the value an empty field gets; "" for none.
	def string
	// values are the values it, or each item of a list, may have; nil for
	// any. A field without a default is checked only when set.
	values []string
	// shape is the JSON its value must be.
	shape shape
	// check checks what values can't say of the field's value, when set.
	check func(in *Input, path *field.Path) field.ErrorList
	// index is where the field is in the Input, for reflect's
	// FieldByIndex: indexed finds it from the json tags.
	index []int
}

// The steps a field is read by.
var (
	everyStep       = []Step{StepComposition, StepOperation}
	compositionStep = []Step{StepComposition}
	operationStep   = []Step{StepOperation}
)

var (
	aString     = shape{jsonType: "string", must: "a string"}
	anEntry     = shape{jsonType: "string", must: "a composition resource name or pattern"}
	inferences  = enum(InferProviderConfigs, InferCredentials, InferManagedReferences)
	inputFields = indexed(reflect.TypeFor[Input](), []inputField{
		// In the order Validate names what is wrong with them.
		{name: "apiVersion", readBy: everyStep, values: []string{GroupVersion}, shape: aString},
		{name: "kind", readBy: everyStep, values: []string{"Input"}, shape: aString},
		{name: "metadata", readBy: everyStep, shape: shape{jsonType: "object", must: "an object"}},
		{name: "mode", readBy: everyStep, def: string(ModeEnforce), values: enum(ModeEnforce, ModeReport), shape: aString},
		{name: "onCycle", readBy: compositionStep, def: string(CycleFatal), values: enum(CycleFatal, CycleWarning), shape: aString},
		{name: "references", readBy: compositionStep, def: string(ReferencesInfer), values: enum(ReferencesInfer, ReferencesIgnore), shape: aString},
		{name: "protection", readBy: compositionStep, def: string(ProtectionFinalizers), values: enum(ProtectionFinalizers, ProtectionUsages, ProtectionBoth), shape: aString},
		{name: "usageAPI", readBy: compositionStep, def: string(UsageAPIProtection), values: enum(UsageAPIProtection, UsageAPIApiextensions), shape: aString},
		{name: "creation", readBy: compositionStep, def: string(CreationImmediate), values: enum(CreationImmediate, CreationWaitForReady), shape: aString},
		{name: "graph", readBy: compositionStep, def: string(GraphNone), values: enum(GraphNone, GraphContext), shape: aString},
		{name: "infer", readBy: compositionStep, values: inferences, shape: shape{
			jsonType: "array", must: "a list of kinds of edge (" + strings.Join(inferences, ", ") + ")", items: &aString,
		}},
		{name: "objectSelector", readBy: operationStep, check: validSelector, shape: shape{
			jsonType: "object", must: "an object with matchLabels", fields: map[string]shape{
				"matchLabels": {jsonType: "object", must: "a map of label keys to values"},
			},
		}},
		{name: "dependencies", readBy: compositionStep, check: validDependencies, shape: shape{
			jsonType: "array", must: "a list of dependencies, each with resource and dependsOn", items: &shape{
				jsonType: "object", must: "an object with resource and dependsOn", fields: map[string]shape{
					"resource":  anEntry,
					"dependsOn": {jsonType: "array", must: "a list of composition resource names or patterns", items: &anEntry},
				},
			},
		}},
	})
	// inputShape is the shape of every field of the Input.
	inputShape = shape{jsonType: "object", must: "an object", fields: fieldShapes(inputFields)}
)

// enum is the values of an enumeration, as strings.
func enum[T ~string](values ...T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// indexed returns the fields, each with its index in the struct type: a
// field declared that the struct doesn't have is a mistake in this file.
func indexed(typ reflect.Type, fields []inputField) []inputField {
	index := jsonFields(typ)
	for i, f := range fields {
		if _, ok := index[f.name]; !ok {
			panic(fmt.Sprintf("%s declares the field %q, which it doesn't have", typ, f.name))
		}
		fields[i].index = index[f.name]
	}
	return fields
}

// jsonFields maps the JSON name of each field of a struct type to its index.
// An embedded struct without a JSON name is inlined, as encoding/json does.
func jsonFields(typ reflect.Type) map[string][]int {
	fields := map[string][]int{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			for inner, index := range jsonFields(f.Type) {
				fields[inner] = append([]int{i}, index...)
			}
			continue
		}
		fields[name] = []int{i}
	}
	return fields
}

func fieldShapes(fields []inputField) map[string]shape {
	shapes := make(map[string]shape, len(fields))
	for _, f := range fields {
		shapes[f.name] = f.shape
	}
	return shapes
}

// of is the field's value in the input.
func (f inputField) of(in *Input) reflect.Value {
	return reflect.ValueOf(in).Elem().FieldByIndex(f.index)
}

// Default fills in the defaults of every field the input leaves empty.
func (in *Input) Default() {
	// What an input that was not given is: this function's.
	in.APIVersion = cmp.Or(in.APIVersion, GroupVersion)
	in.Kind = cmp.Or(in.Kind, "Input")
	for _, f := range inputFields {
		if f.def == "" {
			continue
		}
		if v := f.of(in); v.String() == "" {
			v.SetString(f.def)
		}
	}
}

// Validate returns the fields whose values are not supported. An input of
// another apiVersion or kind is meant for another function.
func (in *Input) Validate() field.ErrorList {
	var errs field.ErrorList
	for _, f := range inputFields {
		errs = append(errs, f.validate(in)...)
	}
	return errs
}

// validate returns what is wrong with the field's value in the input. A
// path is made only for an error, or for a check of a value that is set: a
// valid input, the usual, costs none.
func (f inputField) validate(in *Input) field.ErrorList {
	v := f.of(in)
	var errs field.ErrorList
	switch {
	case f.values == nil:
	case v.Kind() == reflect.Slice:
		for i := range v.Len() {
			if item := v.Index(i); !slices.Contains(f.values, item.String()) {
				errs = append(errs, notSupported(field.NewPath(f.name).Index(i), item, f.values))
			}
		}
	case v.String() == "" && f.def == "":
	case !slices.Contains(f.values, v.String()):
		errs = append(errs, notSupported(field.NewPath(f.name), v, f.values))
	}
	if f.check != nil && !v.IsZero() {
		errs = append(errs, f.check(in, field.NewPath(f.name))...)
	}
	return errs
}

// notSupported is the error of a value that is none of those supported. It
// carries the value with its Go type, as the field has it.
func notSupported(path *field.Path, value reflect.Value, supported []string) *field.Error {
	return field.NotSupported(path, value.Interface(), supported)
}

func validSelector(in *Input, path *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(in.ObjectSelector.MatchLabels, path.Child("matchLabels"))
}

func validDependencies(in *Input, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, d := range in.Dependencies {
		path := path.Index(i)
		errs = append(errs, validPattern(path.Child("resource"), d.Resource)...)
		if len(d.DependsOn) == 0 {
			errs = append(errs, field.Required(path.Child("dependsOn"), "names at least one resource"))
		}
		for j, p := range d.DependsOn {
			errs = append(errs, validPattern(path.Child("dependsOn").Index(j), p)...)
		}
	}
	return errs
}

func validPattern(path *field.Path, pattern string) field.ErrorList {
	if pattern == "" {
		return field.ErrorList{field.Required(path, "a composition resource name or an RE2 pattern")}
	}
	if _, err := Pattern(pattern); err != nil {
		return field.ErrorList{field.Invalid(path, pattern, err.Error())}
	}
	return nil
}

// Pattern compiles an entry of dependencies, a resource or a dependsOn, into
// the regexp of the composition resource names it matches as a pattern: an
// RE2 pattern anchored to match whole names. The entry must be a pattern by
// itself, so that the anchor holds all of it: a)|(b is none, although
// anchored it would compile; and it must still compile anchored: \Qa, which
// quotes to the end, doesn't. Validate and the matching of entries to names
// both use it, so that an entry that validates is the pattern that matches.
func Pattern(entry string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(entry); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(`^(?:` + entry + `)$`)
	if err != nil {
		return nil, fmt.Errorf("cannot be anchored to match whole names: %w", err)
	}
	return re, nil
}
