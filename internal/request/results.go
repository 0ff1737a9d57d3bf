package request

import (
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/report"
)

var severities = map[report.Severity]fnv1.Severity{
	report.Normal:  fnv1.Severity_SEVERITY_NORMAL,
	report.Warning: fnv1.Severity_SEVERITY_WARNING,
	report.Fatal:   fnv1.Severity_SEVERITY_FATAL,
}

// AddResults appends the results to the response, in order: on the
// composite when target is set (a Composition step), else on the Operation.
func AddResults(rsp *fnv1.RunFunctionResponse, results []report.Result, target *fnv1.Target) {
	for _, r := range results {
		rsp.Results = append(rsp.Results, &fnv1.Result{Severity: severities[r.Severity], Reason: &r.Reason, Message: r.Message, Target: target})
	}
}
