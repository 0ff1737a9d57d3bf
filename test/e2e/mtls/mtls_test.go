//go:build e2e

// Package mtls serves the function's real binary with mutual TLS, as
// Crossplane runs it: TLS_SERVER_CERTS_DIR holds the server's certificate and
// key and the CA that signs the clients' certificates. The tests make a CA
// and certificates in Go and call the function over gRPC as Crossplane does.
package mtls

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// A ca signs certificates.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Crossplane"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key in PEM for the usages, valid for
// localhost and 127.0.0.1.
func (c *ca) issue(t *testing.T, name string, usages ...x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{"localhost", name},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: k})
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// certsDir writes the files the function reads from TLS_SERVER_CERTS_DIR.
func certsDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// client calls the function at the address with the transport credentials.
func client(t *testing.T, address string, creds credentials.TransportCredentials) fnv1.FunctionRunnerServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return fnv1.NewFunctionRunnerServiceClient(conn)
}

// tlsClient is a client as Crossplane's: it trusts the CA for the server and
// presents the certificate, if any.
func tlsClient(t *testing.T, address string, trusted *ca, certPEM, keyPEM []byte) fnv1.FunctionRunnerServiceClient {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(trusted.cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return client(t, address, credentials.NewTLS(cfg))
}

// request is a small #371 composition: two Objects reference a shared one,
// which carries neither's finalizer yet.
func request(t *testing.T) *fnv1.RunFunctionRequest {
	t.Helper()
	resource := func(m map[string]any) *fnv1.Resource {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return &fnv1.Resource{Resource: s}
	}
	object := func(name, uid string, refs ...any) map[string]any {
		metadata := map[string]any{"name": name}
		if uid != "" {
			// Observed, and managed by provider-kubernetes.
			metadata["uid"] = uid
			metadata["finalizers"] = []any{"finalizer.managedresource.crossplane.io"}
		}
		spec := map[string]any{"forProvider": map[string]any{"manifest": map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}}
		if len(refs) > 0 {
			spec["references"] = refs
		}
		return map[string]any{"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object", "metadata": metadata, "spec": spec}
	}
	ref := map[string]any{"dependsOn": map[string]any{"name": "shared"}}
	return &fnv1.RunFunctionRequest{
		Meta: &fnv1.RequestMeta{Tag: "mtls"},
		Observed: &fnv1.State{
			Composite: resource(map[string]any{"apiVersion": "example.org/v1", "kind": "XApp", "metadata": map[string]any{"name": "app"}}),
			Resources: map[string]*fnv1.Resource{
				"shared": resource(object("shared", "uid-shared")),
				"a":      resource(object("a", "uid-a", ref)),
				"b":      resource(object("b", "uid-b", ref)),
			},
		},
		Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{
			"shared": resource(object("shared", "")),
			"a":      resource(object("a", "", ref)),
			"b":      resource(object("b", "", ref)),
		}},
	}
}

// checkAnswer checks that the answer is the function's: shared declares
// both dependents' finalizers, and the composite gets DeletionOrdered.
func checkAnswer(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	var got []string
	md := rsp.GetDesired().GetResources()["shared"].GetResource().GetFields()["metadata"].GetStructValue()
	for _, v := range md.GetFields()["finalizers"].GetListValue().GetValues() {
		got = append(got, v.GetStringValue())
	}
	want := []string{"kubernetes.crossplane.io/referred-by-object-uid-a", "kubernetes.crossplane.io/referred-by-object-uid-b"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("shared declares %q, want %q", got, want)
	}
	if len(rsp.GetConditions()) != 1 || rsp.GetConditions()[0].GetType() != "DeletionOrdered" {
		t.Errorf("conditions %v, want DeletionOrdered", rsp.GetConditions())
	}
	if rsp.GetMeta().GetTag() != "mtls" {
		t.Errorf("tag %q, want the request's", rsp.GetMeta().GetTag())
	}
}

func call(t *testing.T, c fnv1.FunctionRunnerServiceClient, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.RunFunction(ctx, req)
}

// refused checks that a call failed on the connection, before the function
// saw the request.
func refused(t *testing.T, rsp *fnv1.RunFunctionResponse, err error, why string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: the call succeeded (%d results); want it refused", why, len(rsp.GetResults()))
	}
	if code := status.Code(err); code != codes.Unavailable {
		t.Errorf("%s: %v; want the code Unavailable of a refused connection", why, err)
	}
	t.Logf("%s: refused: %v", why, err)
}

// TestMTLS serves the binary with certificates from a CA, as Crossplane does,
// and calls it with a certificate from that CA, without one, with another
// CA's, with a server certificate, and in plaintext: only the first gets an
// answer.
func TestMTLS(t *testing.T) {
	root := newCA(t, "crossplane-root-ca")
	serverCert, serverKey := root.issue(t, "function-dependencies", x509.ExtKeyUsageServerAuth)
	dir := certsDir(t, map[string][]byte{"tls.crt": serverCert, "tls.key": serverKey, "ca.crt": root.pem})
	_, address := harness.ServeFunction(t, []string{"TLS_SERVER_CERTS_DIR=" + dir})
	req := request(t)

	// accepted calls with a client certificate from the CA, as Crossplane does.
	accepted := func(t *testing.T, when string) {
		t.Helper()
		cert, key := root.issue(t, "crossplane", x509.ExtKeyUsageClientAuth)
		rsp, err := call(t, tlsClient(t, address, root, cert, key), req)
		if err != nil {
			t.Fatalf("RunFunction %s: %v", when, err)
		}
		checkAnswer(t, rsp)
	}
	t.Run("ClientCertificateFromTheCA", func(t *testing.T) { accepted(t, "with a client certificate from the CA") })
	t.Run("NoClientCertificate", func(t *testing.T) {
		rsp, err := call(t, tlsClient(t, address, root, nil, nil), req)
		refused(t, rsp, err, "a client without a certificate")
	})
	t.Run("ClientCertificateFromAnotherCA", func(t *testing.T) {
		cert, key := newCA(t, "another-ca").issue(t, "crossplane", x509.ExtKeyUsageClientAuth)
		rsp, err := call(t, tlsClient(t, address, root, cert, key), req)
		refused(t, rsp, err, "a client certificate from another CA")
	})
	t.Run("SelfSignedClientCertificateWithTheCAName", func(t *testing.T) {
		impostor := newCA(t, "crossplane-root-ca") // Same name, another key.
		cert, key := impostor.issue(t, "crossplane", x509.ExtKeyUsageClientAuth)
		rsp, err := call(t, tlsClient(t, address, root, cert, key), req)
		refused(t, rsp, err, "a client certificate from a CA with the same name and another key")
	})
	t.Run("ServerCertificateAsClient", func(t *testing.T) {
		cert, key := root.issue(t, "crossplane", x509.ExtKeyUsageServerAuth)
		rsp, err := call(t, tlsClient(t, address, root, cert, key), req)
		refused(t, rsp, err, "a certificate from the CA for servers only")
	})
	t.Run("Plaintext", func(t *testing.T) {
		rsp, err := call(t, client(t, address, insecure.NewCredentials()), req)
		refused(t, rsp, err, "a plaintext client")
	})
	t.Run("ServerNotTrustedByClient", func(t *testing.T) {
		other := newCA(t, "another-ca")
		cert, key := root.issue(t, "crossplane", x509.ExtKeyUsageClientAuth)
		rsp, err := call(t, tlsClient(t, address, other, cert, key), req)
		refused(t, rsp, err, "a client that doesn't trust the server's CA")
	})
	t.Run("StillServes", func(t *testing.T) { accepted(t, "after the refused clients") })
}

// TestRefusesToStartWithoutCertificates starts the binary without usable
// certificates: it must exit with an error that says what is missing, not
// serve in plaintext. With --insecure it serves without them.
func TestRefusesToStartWithoutCertificates(t *testing.T) {
	root := newCA(t, "crossplane-root-ca")
	cert, key := root.issue(t, "function-dependencies", x509.ExtKeyUsageServerAuth)
	cases := map[string]struct {
		files map[string][]byte // nil: no TLS_SERVER_CERTS_DIR at all
		want  string
	}{
		"NoCertificatesDir":        {want: "no credentials provided"},
		"EmptyCertificatesDir":     {files: map[string][]byte{}, want: "cannot load X509 keypair"},
		"NoCA":                     {files: map[string][]byte{"tls.crt": cert, "tls.key": key}, want: "cannot read CA certificate"},
		"CAIsNotACertificate":      {files: map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": []byte("not a certificate")}, want: "invalid CA certificate"},
		"KeyDoesNotMatch":          {files: map[string][]byte{"tls.crt": cert, "tls.key": func() []byte { _, k := root.issue(t, "x"); return k }(), "ca.crt": root.pem}, want: "cannot load X509 keypair"},
		"CertificateIsNotPEM":      {files: map[string][]byte{"tls.crt": []byte("garbage"), "tls.key": key, "ca.crt": root.pem}, want: "cannot load X509 keypair"},
		"CertificatesDirIsMissing": {files: map[string][]byte{"missing": nil}, want: "cannot load X509 keypair"},
	}
	binary := harness.Function(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := []string{"TLS_SERVER_CERTS_DIR="}
			if tc.files != nil {
				dir := certsDir(t, tc.files)
				if _, missing := tc.files["missing"]; missing {
					dir = filepath.Join(dir, "does-not-exist")
				}
				env = []string{"TLS_SERVER_CERTS_DIR=" + dir}
			}
			address := harness.FreeAddress(t)
			p := harness.StartProcess(t, binary, env, "--address="+address, "--metrics-address=")
			select {
			case <-p.Exited():
			case <-time.After(20 * time.Second):
				t.Fatalf("the function still runs 20s after starting without usable certificates; it must refuse to start\n%s", p.Output())
			}
			var exit *exec.ExitError
			if !errors.As(p.Err(), &exit) || exit.ExitCode() == 0 {
				t.Errorf("the function exited with %v, want a non-zero exit code", p.Err())
			}
			if !strings.Contains(p.Output(), tc.want) {
				t.Errorf("the function's output doesn't say %q:\n%s", tc.want, p.Output())
			}
			if c, err := net.DialTimeout("tcp", address, time.Second); err == nil {
				_ = c.Close()
				t.Errorf("something listens on %s", address)
			}
		})
	}
	t.Run("Insecure", func(t *testing.T) {
		_, address := harness.ServeFunction(t, []string{"TLS_SERVER_CERTS_DIR="}, "--insecure")
		rsp, err := call(t, client(t, address, insecure.NewCredentials()), request(t))
		if err != nil {
			t.Fatalf("RunFunction with --insecure: %v", err)
		}
		checkAnswer(t, rsp)
	})
	t.Run("InsecureIgnoresCertificates", func(t *testing.T) {
		dir := certsDir(t, map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": root.pem})
		_, address := harness.ServeFunction(t, []string{"TLS_SERVER_CERTS_DIR=" + dir}, "--insecure")
		rsp, err := call(t, client(t, address, insecure.NewCredentials()), request(t))
		if err != nil {
			t.Fatalf("RunFunction in plaintext with --insecure and certificates: %v", err)
		}
		checkAnswer(t, rsp)
	})
}
