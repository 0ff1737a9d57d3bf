package fn

import (
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/report/message"
)

// bounded returns the response with every message cut to message.MaxBytes:
// Crossplane turns each result into an event and the condition into the
// composite's status, on every reconcile.
func bounded(rsp *fnv1.RunFunctionResponse) *fnv1.RunFunctionResponse {
	for _, r := range rsp.GetResults() {
		r.Message = message.Cut(r.GetMessage(), message.MaxBytes)
	}
	for _, c := range rsp.GetConditions() {
		if c.Message != nil {
			*c.Message = message.Cut(c.GetMessage(), message.MaxBytes)
		}
	}
	return rsp
}
