//go:build tools

// Package tools pins the binaries this module builds.
package tools

import _ "golang.org/x/perf/cmd/benchstat"
