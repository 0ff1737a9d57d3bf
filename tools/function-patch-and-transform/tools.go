//go:build tools

// Package tools pins the binaries this module builds.
package tools

import _ "github.com/crossplane-contrib/function-patch-and-transform"
