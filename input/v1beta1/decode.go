package v1beta1

// Reading an input: strictly, for the step that runs it, with errors that
// name the field and say what its value should be.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// Decode reads an input from JSON strictly, applies the defaults and
// validates it. Every error names the field: an unknown field, a value of the
// wrong type, a value that isn't supported. Empty data is an input with every
// default.
func Decode(data []byte) (*Input, error) {
	return DecodeFor(data, StepComposition)
}

// A Step is how Crossplane runs the function: as a step of a Composition's
// pipeline, or as an Operation.
type Step string

// The steps.
const (
	StepComposition Step = "Composition"
	StepOperation   Step = "Operation"
)

// DecodeFor reads an input as Decode does, for the step, and refuses a field
// the step doesn't read: a field that silently does nothing misleads, and the
// error names it so that it can be removed. Only an Operation selects
// Objects; an Operation protects no composite's edges, so reads none of the
// fields that say how, and breaks every cycle with a warning.
func DecodeFor(data []byte, step Step) (*Input, error) {
	in := &Input{}
	if len(data) > 0 {
		strict, err := kjson.UnmarshalStrict(data, in)
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, wrongTypes(data, typeErr)
		}
		if err != nil {
			return nil, err
		}
		if len(strict) > 0 {
			return nil, utilerrors.NewAggregate(explainRemoved(strict))
		}
	}
	var errs field.ErrorList
	if len(data) > 0 {
		errs = in.typed()
	}
	errs = append(errs, in.unread(step)...)
	in.Default()
	if errs = append(errs, in.Validate()...); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return in, nil
}

// removedFields are fields an earlier input had, with what took their
// place: a composition written from an older page gets the way forward, not
// only "unknown field".
var removedFields = map[string]string{
	"usages": "removed: protection decides whether the step writes Usages (Usages or Both protect with a Usage every edge no reference finalizer protects, references outside the composite included)",
}

// explainRemoved adds to the error of each removed field what took its place.
func explainRemoved(errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		out[i] = err
		for name, instead := range removedFields {
			if err.Error() == fmt.Sprintf("unknown field %q", name) {
				out[i] = fmt.Errorf("%w: %s", err, instead)
			}
		}
	}
	return out
}

// typed requires an input that is given to say what it is: without its
// apiVersion and kind, it may be another function's input in the wrong
// step, read here as defaults.
func (in *Input) typed() field.ErrorList {
	var errs field.ErrorList
	if in.APIVersion == "" {
		errs = append(errs, field.Required(field.NewPath("apiVersion"), "must be "+GroupVersion))
	}
	if in.Kind == "" {
		errs = append(errs, field.Required(field.NewPath("kind"), "must be Input"))
	}
	return errs
}

// unread are the fields set that the step doesn't read, by name.
func (in *Input) unread(step Step) field.ErrorList {
	var set []string
	for _, f := range inputFields {
		if !slices.Contains(f.readBy, step) && !f.of(in).IsZero() {
			set = append(set, f.name)
		}
	}
	slices.Sort(set)
	errs := make(field.ErrorList, len(set))
	for i, name := range set {
		errs[i] = field.Forbidden(field.NewPath(name), unreadBy[step])
	}
	return errs
}

var unreadBy = map[Step]string{
	StepComposition: "only an Operation reads it; a Composition step handles the composite's own resources",
	StepOperation:   "only a Composition step reads it; an Operation protects no composite's edges, and breaks every cycle with a warning",
}

// A shape is the JSON type a field's value must have, and what it must be,
// in the words of the error when it has another type.
type shape struct {
	jsonType string
	must     string
	// items is an array's.
	items *shape
	// fields are an object's; those it doesn't have are left to the
	// decoder.
	fields map[string]shape
}

// check returns an error for the value, and for each value inside it, whose
// JSON type is not the shape's. null is as good as a field left out.
func (s shape) check(path *field.Path, v any) field.ErrorList {
	if v == nil {
		return nil
	}
	if t := jsonType(v); t != s.jsonType {
		return field.ErrorList{field.TypeInvalid(path, t, "must be "+s.must)}
	}
	var errs field.ErrorList
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			errs = append(errs, s.items.check(path.Index(i), item)...)
		}
	case map[string]any:
		for _, name := range slices.Sorted(maps.Keys(s.fields)) {
			errs = append(errs, s.fields[name].check(path.Child(name), v[name])...)
		}
	}
	return errs
}

// wrongTypes names every value of the input whose type is wrong, by its path
// and JSON type. The decoder names only the first, by a path without indexes
// and in Go's words; its error is the answer only for what inputShape leaves
// to it, the fields inside metadata.
func wrongTypes(data []byte, typeErr *json.UnmarshalTypeError) error {
	var v any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the input must be an object, not %s", withArticle(jsonType(v)))
	}
	if errs := inputShape.check(nil, v); len(errs) > 0 {
		return errs.ToAggregate()
	}
	path := strings.Split(typeErr.Field, ".")
	got, _, _ := strings.Cut(typeErr.Value, " ")
	if got == "bool" {
		got = "boolean"
	}
	return field.TypeInvalid(field.NewPath(path[0], path[1:]...), got, "must be "+goJSONType(typeErr.Type))
}

// jsonType names the JSON type of a decoded value, in JSON's words.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "number"
	}
}

// goJSONType says what JSON a Go type decodes from.
func goJSONType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	default:
		return "an object"
	}
}

func withArticle(jsonType string) string {
	if strings.IndexByte("aeiou", jsonType[0]) >= 0 {
		return "an " + jsonType
	}
	return "a " + jsonType
}
