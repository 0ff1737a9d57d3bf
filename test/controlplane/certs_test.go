//go:build controlplane

package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the harness's certificate authority and the files it issued.
type pki struct {
	caCert *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
	// caKeyPEM is the CA's key in the form Crossplane's package manager
	// reads from its crossplane-root-ca Secret: PKCS #1 RSA.
	caKeyPEM []byte

	dir string
	// CAFile is the CA's certificate.
	CAFile string
	// ServingCert and ServingKey are the kube-apiserver's serving certificate.
	ServingCert, ServingKey string
	// AdminCert and AdminKey are a client certificate in system:masters.
	AdminCert, AdminKey string
	// ServiceAccountKey and ServiceAccountPub sign and verify service account tokens.
	ServiceAccountKey, ServiceAccountPub string
	// TLSDir holds tls.crt, tls.key and ca.crt: a certificate for 127.0.0.1
	// and localhost that is good for serving and as a client. Functions and
	// provider-kubernetes's webhook serve with it; Crossplane dials functions
	// with it.
	TLSDir string
}

// newPKI makes a CA and every certificate the control plane needs, in dir.
func newPKI(dir string) (*pki, error) {
	p := &pki{dir: dir, TLSDir: filepath.Join(dir, "tls")}
	if err := os.MkdirAll(p.TLSDir, 0o700); err != nil {
		return nil, err
	}
	// RSA, so that the same CA can be Crossplane's root CA, which signs the
	// TLS certificates of the functions it installs (see installStack).
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "function-dependencies control-plane test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.caKey = key
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	p.caKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	p.CAFile = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(p.CAFile, p.caPEM, 0o600); err != nil {
		return nil, err
	}

	p.ServingCert, p.ServingKey = filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	if err := p.issue(p.ServingCert, p.ServingKey, pkix.Name{CommonName: "kube-apiserver"}, true, false); err != nil {
		return nil, err
	}
	p.AdminCert, p.AdminKey = filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	if err := p.issue(p.AdminCert, p.AdminKey, pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, false, true); err != nil {
		return nil, err
	}
	if err := p.issue(filepath.Join(p.TLSDir, "tls.crt"), filepath.Join(p.TLSDir, "tls.key"), pkix.Name{CommonName: "localhost"}, true, true); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(p.TLSDir, "ca.crt"), p.caPEM, 0o600); err != nil {
		return nil, err
	}

	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return nil, err
	}
	p.ServiceAccountKey, p.ServiceAccountPub = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(p.ServiceAccountKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.ServiceAccountPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// issue writes a certificate signed by the CA, for 127.0.0.1 and localhost
// when it is for serving.
func (p *pki) issue(certFile, keyFile string, subject pkix.Name, server, client bool) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}
	}
	if client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// kubeconfig returns a kubeconfig for the API server at server, with the
// admin credentials embedded, so that it works wherever it is copied.
func (p *pki) kubeconfig(server string) ([]byte, error) {
	cert, err := os.ReadFile(p.AdminCert)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(p.AdminKey)
	if err != nil {
		return nil, err
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: local
  context:
    cluster: local
    user: admin
current-context: local
`, server, b64(p.caPEM), b64(cert), b64(key)), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}
