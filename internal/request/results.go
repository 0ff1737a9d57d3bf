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
// composite for a Composition step, else on the Operation, which has none.
func AddResults(rsp *fnv1.RunFunctionResponse, results []report.Result, onComposite bool) {
	for _, r := range results {
		out := &fnv1.Result{Severity: severities[r.Severity], Reason: &r.Reason, Message: r.Message}
		if onComposite {
			out.Target = fnv1.Target_TARGET_COMPOSITE.Enum()
		}
		rsp.Results = append(rsp.Results, out)
	}
}
