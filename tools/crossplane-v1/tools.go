//go:build tools

// Package tools pins the binaries this module builds.
package tools

import (
	_ "github.com/crossplane/crossplane/cmd/crank"
	_ "github.com/crossplane/crossplane/cmd/crossplane"
)
