package dlock_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/redistest"
)

// TestMinimalACLOverTLS runs every feature as the user of the documented
// ACL over TLS: a redis-server with a TLS port and a certificate made for
// the test, signed by a CA made for the test, which the client trusts.
func TestMinimalACLOverTLS(t *testing.T) {
	dir := t.TempDir()
	pool := writeTestCertificates(t, dir)
	port := freeLoopbackPort(t)
	srv, stop, err := redistest.Start(redistest.WithArgs(
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "server.crt"),
		"--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"),
		"--tls-auth-clients", "no",
	))
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "tls") {
			t.Skipf("this redis-server has no TLS: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(stop)
	aclLogEmpty(t, srv)
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	plain := srv.Client(func(o *redis.Options) {
		o.Addr, o.MaxRetries, o.DialTimeout, o.ReadTimeout = tlsAddr, -1, time.Second, time.Second
	})
	if err := plain.Ping(t.Context()).Err(); err == nil {
		t.Fatal("a client without TLS talks to the TLS port")
	}
	exercise(t, minimalUser(t, srv, func(o *redis.Options) {
		o.Addr = tlsAddr
		o.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}))
}

// writeTestCertificates writes to dir a CA (ca.crt) and a certificate of
// the server at 127.0.0.1 that it signed (server.crt, server.key), and
// returns a pool that trusts the CA.
func writeTestCertificates(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dlock test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	server := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, server, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"ca.crt":     {Type: "CERTIFICATE", Bytes: caDER},
		"server.crt": {Type: "CERTIFICATE", Bytes: serverDER},
		"server.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool
}

// freeLoopbackPort returns a loopback port that was free a moment ago.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
