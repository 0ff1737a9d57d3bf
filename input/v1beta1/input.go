// Package v1beta1 contains the input type for function-dependencies.
// +kubebuilder:object:generate=true
// +groupName=dependencies.fn.crossplane.io
// +versionName=v1beta1
package v1beta1

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// This isn't a custom resource, in the sense that its CRD is never installed.
// It is a KRM-like object, so a CRD is generated to describe its schema.

// GroupVersion is the apiVersion of the input.
const GroupVersion = "dependencies.fn.crossplane.io/v1beta1"

// Mode says whether the function changes desired state.
// +kubebuilder:validation:Enum=Enforce;Report
type Mode string

const (
	// ModeEnforce declares the missing reference finalizers in desired state.
	ModeEnforce Mode = "Enforce"
	// ModeReport computes and reports the same, but leaves desired state
	// exactly as the earlier steps left it. Use it to see what Enforce would do.
	ModeReport Mode = "Report"
)

// CyclePolicy says what happens when references form a cycle.
// +kubebuilder:validation:Enum=Fatal;Warning
type CyclePolicy string

const (
	// CycleFatal fails the pipeline with the cycle's path: nothing is applied
	// until the composition is fixed.
	CycleFatal CyclePolicy = "Fatal"
	// CycleWarning warns with the cycle's path and declares no finalizer on
	// any edge inside a cycle, so that teardown can't deadlock: each object in
	// a cycle would otherwise wait for the other to go first.
	CycleWarning CyclePolicy = "Warning"
)

// ReferencePolicy says whether Objects' spec.references make edges.
// +kubebuilder:validation:Enum=Infer;Ignore
type ReferencePolicy string

const (
	// ReferencesInfer makes an edge of every reference of every composed
	// provider-kubernetes Object.
	ReferencesInfer ReferencePolicy = "Infer"
	// ReferencesIgnore doesn't read spec.references: only the dependencies
	// listed in the input make edges.
	ReferencesIgnore ReferencePolicy = "Ignore"
)

// UsagePolicy says which edges are protected by Crossplane Usages.
// +kubebuilder:validation:Enum=Disabled;External;All
type UsagePolicy string

const (
	// UsagesDisabled emits no Usage.
	UsagesDisabled UsagePolicy = "Disabled"
	// UsagesExternal emits a Usage for every edge that no reference
	// finalizer protects: those to objects this composite doesn't compose,
	// and those between composed resources whose dependent is not an Object.
	UsagesExternal UsagePolicy = "External"
	// UsagesAll is UsagesExternal under another name: every edge between
	// composed resources that no finalizer protects is one the input
	// declares or one inferred, and those get a Usage with External too.
	UsagesAll UsagePolicy = "All"
)

// Protection says what protects the edges a reference finalizer can protect:
// those of a provider-kubernetes Object to another composed resource.
// +kubebuilder:validation:Enum=Finalizers;Usages;Both
type Protection string

const (
	// ProtectionFinalizers declares the dependent Object's reference
	// finalizer on the resource it references: what provider-kubernetes
	// itself does, and what #371 loses.
	ProtectionFinalizers Protection = "Finalizers"
	// ProtectionUsages protects each such edge with a Usage (replayDeletion:
	// true) instead, and declares no reference finalizer: dependents then
	// skip the conflicting finalizer removals that make teardown slow. An
	// edge no Usage of the usageAPI can express keeps its finalizer, and so
	// does an edge whose Usage is not in force yet while its target carries
	// the finalizer, so that switching a live composite leaves no edge
	// unprotected.
	ProtectionUsages Protection = "Usages"
	// ProtectionBoth declares the finalizer and a Usage. provider-kubernetes
	// before v1.0 deletes an Object's remote object at once, whatever
	// reference finalizers keep the Object itself: there only a Usage orders
	// the deletion.
	ProtectionBoth Protection = "Both"
)

// UsageAPI is the API group and version of the Usages to emit.
// +kubebuilder:validation:Enum=protection.crossplane.io/v1beta1;apiextensions.crossplane.io/v1beta1
type UsageAPI string

const (
	// UsageAPIProtection is Crossplane v2's API: a namespaced Usage, or a
	// ClusterUsage between cluster-scoped resources.
	UsageAPIProtection UsageAPI = "protection.crossplane.io/v1beta1"
	// UsageAPIApiextensions is Crossplane v1's cluster-scoped Usage, between
	// cluster-scoped resources only.
	UsageAPIApiextensions UsageAPI = "apiextensions.crossplane.io/v1beta1"
)

// CreationPolicy says when a composed resource may be created.
// +kubebuilder:validation:Enum=Immediate;WaitForReady
type CreationPolicy string

const (
	// CreationImmediate creates every composed resource at once.
	CreationImmediate CreationPolicy = "Immediate"
	// CreationWaitForReady holds a resource that doesn't exist yet back from
	// desired state until every resource it depends on exists and is ready.
	// Every resource whose dependencies are ready is released in the same
	// pass, so a fan-out takes one pass, not one per resource.
	CreationWaitForReady CreationPolicy = "WaitForReady"
)

// GraphOutput says where the function writes the dependency graph.
// +kubebuilder:validation:Enum=None;Context
type GraphOutput string

const (
	// GraphNone writes the graph nowhere: the graph subcommand draws it from
	// a render's resources.
	GraphNone GraphOutput = "None"
	// GraphContext writes the graph as JSON into the pipeline context, under
	// dependencies.fn.crossplane.io/graph, for later steps and for
	// crossplane render --include-context.
	GraphContext GraphOutput = "Context"
)

// An Inference is a kind of edge the function infers from what the composed
// resources say of each other, beyond an Object's spec.references.
// +kubebuilder:validation:Enum=ProviderConfigs;Credentials;ManagedReferences
type Inference string

const (
	// InferProviderConfigs makes a composed resource depend on the composed
	// ProviderConfig of its provider that its spec.providerConfigRef names.
	InferProviderConfigs Inference = "ProviderConfigs"
	// InferCredentials makes a composed ProviderConfig depend on the composed
	// resource that writes the Secret its credentials are read from.
	InferCredentials Inference = "Credentials"
	// InferManagedReferences makes a managed resource depend on the composed
	// resources its spec.forProvider and spec.initProvider reference, by a
	// …Ref, …Refs or a resolved …Selector.
	InferManagedReferences Inference = "ManagedReferences"
)

// A Dependency says that composed resources depend on others, by
// composition resource name.
type Dependency struct {
	// Resource is the dependent: a composition resource name, or an RE2
	// pattern that must match a whole name (it is anchored).
	Resource string `json:"resource"`

	// DependsOn are the resources it depends on: composition resource names
	// or anchored RE2 patterns.
	// +kubebuilder:validation:MinItems=1
	DependsOn []string `json:"dependsOn"`
}

// Input configures function-dependencies. Every field is optional; a pipeline
// step without input gets every default.
//
// Example:
//
//	apiVersion: dependencies.fn.crossplane.io/v1beta1
//	kind: Input
//	mode: Enforce
//	onCycle: Fatal
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=crossplane
type Input struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Mode is Enforce (the default) to declare every live dependent's
	// reference finalizer on every referenced composed resource, or Report to
	// compute and report the same while leaving desired state unchanged.
	// +kubebuilder:default=Enforce
	// +optional
	Mode Mode `json:"mode,omitempty"`

	// OnCycle is Fatal (the default) to fail the pipeline when references
	// form a cycle, or Warning to warn and leave the edges inside the cycle
	// without finalizers.
	// +kubebuilder:default=Fatal
	// +optional
	OnCycle CyclePolicy `json:"onCycle,omitempty"`

	// Dependencies are edges declared here rather than in spec.references.
	// An edge whose dependent is a provider-kubernetes Object is written into
	// its spec.references as a dependsOn, so that the provider waits for the
	// dependency and the dependency declares the Object's finalizer.
	// +optional
	Dependencies []Dependency `json:"dependencies,omitempty"`

	// References is Infer (the default) to make an edge of every reference
	// of every composed Object, or Ignore to use only Dependencies.
	// +kubebuilder:default=Infer
	// +optional
	References ReferencePolicy `json:"references,omitempty"`

	// Usages is Disabled (the default), or External to protect with
	// Crossplane Usages every edge that no reference finalizer protects: to
	// objects outside this composite, and from composed resources that are
	// not Objects. All is the same as External.
	// +kubebuilder:default=Disabled
	// +optional
	Usages UsagePolicy `json:"usages,omitempty"`

	// Protection is Finalizers (the default), Usages or Both: what protects
	// each edge of a provider-kubernetes Object to another composed
	// resource. Usages tears down as fast as without the function; see the
	// README's teardown table for which to choose on which stack.
	// +kubebuilder:default=Finalizers
	// +optional
	Protection Protection `json:"protection,omitempty"`

	// UsageAPI is the API of the Usages: protection.crossplane.io/v1beta1
	// (the default, Crossplane v2) or apiextensions.crossplane.io/v1beta1
	// (Crossplane v1).
	// +kubebuilder:default="protection.crossplane.io/v1beta1"
	// +optional
	UsageAPI UsageAPI `json:"usageAPI,omitempty"`

	// Creation is Immediate (the default), or WaitForReady to hold every
	// resource back until its dependencies are ready.
	// +kubebuilder:default=Immediate
	// +optional
	Creation CreationPolicy `json:"creation,omitempty"`

	// Graph is None (the default), or Context to write the dependency graph
	// into the pipeline context on every call. It is opt-in because every
	// response then carries it, and it grows with the edges.
	// +kubebuilder:default=None
	// +optional
	Graph GraphOutput `json:"graph,omitempty"`

	// Infer lists the kinds of edge to infer from what the composed
	// resources say: ProviderConfigs, Credentials and ManagedReferences. An
	// inferred edge orders deletion only, and a Usage protects it. None by
	// default: with none, nothing changes.
	// +listType=set
	// +optional
	Infer []Inference `json:"infer,omitempty"`

	// ObjectSelector limits an Operation's sweep to the Objects with these
	// labels, so that several CronOperations can share a cluster whose
	// Objects are too many for one. A WatchOperation filters with its own
	// spec.watch.matchLabels, and a Composition step refuses it.
	// +optional
	ObjectSelector *ObjectSelector `json:"objectSelector,omitempty"`
}

// An ObjectSelector selects provider-kubernetes Objects by their labels.
type ObjectSelector struct {
	// MatchLabels are the labels an Object must carry, every one.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// An inputField declares one field of the Input, once: the steps that read
// it, its default, the values it may have and the JSON its value must be.
// Default, Validate, the refusal of a field the step doesn't read and the
// names of values of the wrong type all derive from it; the kubebuilder
// markers above, which controller-gen reads, can't, so a test holds the
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
		{name: "usages", readBy: compositionStep, def: string(UsagesDisabled), values: enum(UsagesDisabled, UsagesExternal, UsagesAll), shape: aString},
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

// Infers tells whether the input asks for edges of the kind to be inferred.
func (in *Input) Infers(kind Inference) bool {
	return slices.Contains(in.Infer, kind)
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
			return nil, utilerrors.NewAggregate(strict)
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
