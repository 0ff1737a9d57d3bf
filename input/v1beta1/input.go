// Package v1beta1 contains the input type for function-dependencies.
// +kubebuilder:object:generate=true
// +groupName=dependencies.fn.crossplane.io
// +versionName=v1beta1
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// This isn't a custom resource, in the sense that we never install its CRD.
// It is a KRM-like object, so we generate a CRD to describe its schema.

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
}

// Default fills in the defaults of every field the input leaves empty.
func (in *Input) Default() {
	if in.Mode == "" {
		in.Mode = ModeEnforce
	}
	if in.OnCycle == "" {
		in.OnCycle = CycleFatal
	}
}

// Validate returns the fields whose values are not supported.
func (in *Input) Validate() field.ErrorList {
	var errs field.ErrorList
	switch in.Mode {
	case ModeEnforce, ModeReport:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("mode"), in.Mode, []Mode{ModeEnforce, ModeReport}))
	}
	switch in.OnCycle {
	case CycleFatal, CycleWarning:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("onCycle"), in.OnCycle, []CyclePolicy{CycleFatal, CycleWarning}))
	}
	return errs
}

// Decode reads an input from JSON strictly, applies the defaults and
// validates it. Every error names the field: an unknown field, a value of the
// wrong type, a value that isn't supported. Empty data is an input with every
// default.
func Decode(data []byte) (*Input, error) {
	in := &Input{}
	if len(data) > 0 {
		strict, err := kjson.UnmarshalStrict(data, in)
		if err != nil {
			return nil, err
		}
		if len(strict) > 0 {
			return nil, utilerrors.NewAggregate(strict)
		}
	}
	in.Default()
	if errs := in.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return in, nil
}
