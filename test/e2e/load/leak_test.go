//go:build e2e

package load

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// TestNothingSensitiveLeaks calls the binary, with --debug, with a request
// that carries secrets everywhere Crossplane puts them (connection details of
// the composite and the composed resources, observed and desired, and
// credentials) and marked manifest bodies. The connection details come back
// untouched; neither a secret nor a body reaches the answer's results and
// conditions or the logs, which name resources all the same.
func TestNothingSensitiveLeaks(t *testing.T) {
	secrets := map[string]string{
		"observed composite":      "s3cr3t-observed-composite-7f3a",
		"desired composite":       "s3cr3t-desired-composite-91bc",
		"observed composed":       "s3cr3t-observed-composed-2d44",
		"desired composed":        "s3cr3t-desired-composed-5e10",
		"credentials":             "s3cr3t-credentials-c0ff",
		"manifest body":           "manifest-body-marker-a9e2",
		"Secret manifest in body": "c2VjcmV0LWluLW1hbmlmZXN0", // A Secret's data, base64 as Kubernetes writes it.
		"composite spec":          "composite-spec-marker-66d1",
	}
	bytesOf := func(k string) []byte { return []byte(secrets[k]) }

	req, _ := composition(t, 30, 3, 0, "leaks")
	req.Observed.Composite.ConnectionDetails = map[string][]byte{"password": bytesOf("observed composite")}
	req.Observed.Composite.Resource.Fields["spec"] = mustStruct(t, map[string]any{"databaseURL": secrets["composite spec"]}).GetFields()["databaseURL"]
	req.Desired.Composite = &fnv1.Resource{ConnectionDetails: map[string][]byte{"url": bytesOf("desired composite")}}
	for name, r := range req.Observed.Resources {
		r.ConnectionDetails = map[string][]byte{"token": bytesOf("observed composed"), "name": []byte(name)}
	}
	for name, r := range req.Desired.Resources {
		r.ConnectionDetails = map[string][]byte{"token": bytesOf("desired composed"), "name": []byte(name)}
		manifest := r.GetResource().GetFields()["spec"].GetStructValue().GetFields()["forProvider"].GetStructValue().GetFields()["manifest"].GetStructValue()
		manifest.Fields["data"] = mustStruct(t, map[string]any{"x": map[string]any{"marker": secrets["manifest body"]}}).GetFields()["x"]
	}
	secretObject := object(t, "secret", "", nil)
	secretObject.GetResource().GetFields()["spec"].GetStructValue().GetFields()["forProvider"].GetStructValue().Fields["manifest"] =
		mustStruct(t, map[string]any{"x": map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"password": secrets["Secret manifest in body"]}}}).GetFields()["x"]
	req.Desired.Resources["secret"] = secretObject
	req.Credentials = map[string]*fnv1.Credentials{"db": {Source: &fnv1.Credentials_CredentialData{CredentialData: &fnv1.CredentialData{
		Data: map[string][]byte{"password": bytesOf("credentials")},
	}}}}

	p, address := harness.ServeFunction(t, nil, "--insecure", "--debug")
	rsp, err := call(dial(t, address), req)
	if err != nil {
		t.Fatalf("RunFunction: %v", err)
	}

	// Passed through untouched.
	if !proto.Equal(rsp.GetDesired().GetComposite(), req.GetDesired().GetComposite()) {
		t.Errorf("the desired composite changed: %v", rsp.GetDesired().GetComposite())
	}
	for name, r := range req.GetDesired().GetResources() {
		got := rsp.GetDesired().GetResources()[name].GetConnectionDetails()
		if len(got) != len(r.GetConnectionDetails()) {
			t.Errorf("%s: connection details %v, want %v", name, got, r.GetConnectionDetails())
		}
		for k, v := range r.GetConnectionDetails() {
			if string(got[k]) != string(v) {
				t.Errorf("%s: connection detail %q is %q, want %q", name, k, got[k], v)
			}
		}
	}

	// Nowhere else: not in the results, the conditions, the context, the
	// logs.
	answer := func() string {
		var b strings.Builder
		for _, r := range rsp.GetResults() {
			b.WriteString(r.GetMessage() + "\n")
		}
		for _, c := range rsp.GetConditions() {
			b.WriteString(c.GetMessage() + "\n")
		}
		ctx, err := protojson.Marshal(rsp.GetContext())
		if err != nil {
			t.Fatal(err)
		}
		b.Write(ctx)
		return b.String()
	}()
	// The logs are written as the call ends; wait for the last line.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Output(), "Declared reference finalizers") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	logs := p.Output()
	for _, want := range []string{"DEBUG", "Planned dependencies", "Declared reference finalizers", `"composed-resource-name": "obj-00000"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the debug logs don't say %q: the test can't show what they leave out\n%s", want, logs)
		}
	}
	for what, secret := range secrets {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(logs, form) {
				t.Errorf("the logs contain the %s %q", what, form)
			}
			if strings.Contains(answer, form) {
				t.Errorf("the results, conditions or context contain the %s %q", what, form)
			}
		}
	}
	for _, body := range []string{`"forProvider"`, `"manifest"`, "ConfigMap", "padding"} {
		if strings.Contains(logs, body) {
			t.Errorf("the logs contain %s: a resource body", body)
		}
	}
	t.Logf("%d bytes of debug logs for one call, none with a secret or a body:\n%s", len(logs), logs)
}
