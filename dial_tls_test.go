package redlock_test

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
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
)

// testCA makes a CA and a server certificate for 127.0.0.1 in dir and
// returns the CA pool and the file paths redis-server needs.
func testCA(t *testing.T, dir string) (pool *x509.CertPool, caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redlock test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serverTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, serverTemplate, caCert, &serverKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(serverKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	pool = x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", serverDER),
		write("server.key", "EC PRIVATE KEY", keyDER)
}

func freePort(t *testing.T) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port
}

// Dial with rediss://user:password@host against real redis-server
// processes that speak TLS and admit only an ACL user.
func TestDial_TLSAndACL(t *testing.T) {
	binary := redlocktest.RequireRedis(t)
	dir := t.TempDir()
	pool, caFile, certFile, keyFile := testCA(t, dir)
	var urls []string
	for i := range 3 {
		tlsPort := freePort(t)
		server, err := redisproc.Start(redisproc.Config{
			Dir: filepath.Join(dir, fmt.Sprint(i)), Binary: binary,
			Args: []string{
				"--tls-port", fmt.Sprint(tlsPort), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
				"--tls-ca-cert-file", caFile, "--tls-auth-clients", "no",
				"--user", "default", "off",
				"--user", "locker", "on", ">s3cret", "~redlock:*", "&redlock:*", "+@all",
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = server.Kill() })
		urls = append(urls, fmt.Sprintf("rediss://locker:s3cret@127.0.0.1:%d", tlsPort))
	}
	ctx := testContext(t)
	tlsConfig := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	for _, url := range urls { // new nodes: mark them as never having held a lock
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		opts.TLSConfig = tlsConfig
		admin := redis.NewClient(opts)
		err = node.Declare(ctx, admin, "redlock:")
		_ = admin.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := redlock.Dial(urls, redlock.WithTLS(tlsConfig))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lease := mustLock(t, ctx, c.Mutex("secure"))
	waiter := make(chan error, 1)
	go func() { // waits through Pub/Sub over TLS
		got, err := c.Mutex("secure").Lock(ctx)
		if err == nil {
			err = got.Unlock(context.Background())
		}
		waiter <- err
	}()
	time.Sleep(100 * time.Millisecond)
	mustUnlock(t, lease)
	if err := <-waiter; err != nil {
		t.Fatalf("waiter over TLS: %v", err)
	}

	wrong := make([]string, len(urls))
	for i, url := range urls {
		wrong[i] = url[:len("rediss://locker:")] + "wrong" + url[len("rediss://locker:s3cret"):]
	}
	bad, err := redlock.Dial(wrong, redlock.WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Mutex("secure").TryLock(ctx); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("wrong password: %v, want ErrNoQuorum", err)
	}
	untrusted, err := redlock.Dial(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	if _, err := untrusted.Mutex("secure").TryLock(ctx); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("untrusted server certificate: %v, want ErrNoQuorum", err)
	}
}
