//go:build tools

// Package tools pins the binaries this module builds.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
