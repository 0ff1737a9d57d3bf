//go:build tools

// Package tools pins the binaries this module builds.
package tools

import _ "github.com/crossplane-contrib/provider-kubernetes/cmd/provider"
