package main

import (
	"github.com/crossplane/function-sdk-go/logging"

	"github.com/crossplane-contrib/function-dependencies/internal/fn"
)

// Function is the function main serves: internal/fn's, which its
// whole-call tests and the loop tier call in process, so that every tier
// runs the same dispatch.
type Function = fn.Function

// newFunction returns the function, logging to log.
func newFunction(log logging.Logger) *Function { return fn.New(log) }
