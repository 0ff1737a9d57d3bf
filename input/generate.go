//go:build generate

// Remove the existing input manifests and generate new ones, with deepcopy
// functions for the input types.
//go:generate rm -rf ../package/input/
//go:generate go run -tags generate sigs.k8s.io/controller-tools/cmd/controller-gen paths=./v1beta1 object crd:crdVersions=v1 output:artifacts:config=../package/input

// Package input holds the function's input API and the generator of its CRD.
package input

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen" //nolint:revive // Pins the generator's version in go.mod.
)
