package service

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCert writes a self-signed ECDSA P-256 certificate for 127.0.0.1 and
// localhost, and its key, into dir as cert.pem and key.pem; it returns
// their paths and the certificate (a client's trust anchor).
func testCert(t *testing.T, dir string, serial int64) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "dpal serve test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile, cert
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsRun is Run serving HTTPS with c's files on a fresh store until the
// test ends: its address and the store's admin token.
func tlsRun(t *testing.T, c Config) (addr, admin string) {
	t.Helper()
	c.Store, c.Listen = filepath.Join(t.TempDir(), "serve.db"), "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Run(ctx, c, &out, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a string) { addrc <- a })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	lines := strings.Fields(out.String())
	return addr, lines[len(lines)-1]
}

// syncBuffer is a bytes.Buffer safe for Run's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// trusting is an HTTPS client whose only trust anchor is cert.
func trusting(cert *x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	if cert != nil {
		pool.AddCert(cert)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// get sends GET url with a bearer token ("" for none).
func get(c *http.Client, url, token string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// TestServeTLS serves HTTPS with a self-signed certificate: a client that
// trusts it reaches /healthz and an authenticated endpoint over TLS 1.2
// or later; a client that does not, one limited to TLS 1.1, and plain
// HTTP on the same port get nothing.
func TestServeTLS(t *testing.T) {
	certFile, keyFile, cert := testCert(t, t.TempDir(), 1)
	addr, admin := tlsRun(t, Config{TLSCert: certFile, TLSKey: keyFile})
	c := trusting(cert)
	for _, u := range []string{"https://" + addr, "https://localhost:" + addr[strings.LastIndex(addr, ":")+1:]} {
		for _, tc := range []struct {
			path, token string
			want        int
		}{{"/healthz", "", 200}, {"/v1/learners", admin, 200}, {"/v1/learners", "", 401}} {
			resp, err := get(c, u+tc.path, tc.token)
			if err != nil {
				t.Fatalf("GET %s%s: %v", u, tc.path, err)
			}
			if resp.StatusCode != tc.want || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
				t.Errorf("GET %s%s: status %d (want %d), TLS %+v", u, tc.path, resp.StatusCode, tc.want, resp.TLS)
			}
		}
	}
	var unknown x509.UnknownAuthorityError
	if _, err := get(trusting(nil), "https://"+addr+"/healthz", ""); !errors.As(err, &unknown) {
		t.Errorf("a client without the certificate: %v, want an unknown authority", err)
	}
	old := trusting(cert)
	old.Transport.(*http.Transport).TLSClientConfig.MaxVersion = tls.VersionTLS11
	if _, err := get(old, "https://"+addr+"/healthz", ""); err == nil {
		t.Error("a TLS 1.1 client was served")
	}
	// Go's server answers a plain HTTP request on a TLS port with a bare 400.
	if resp, err := get(&http.Client{Timeout: 10 * time.Second}, "http://"+addr+"/healthz", ""); err == nil && resp.StatusCode != 400 {
		t.Errorf("plain HTTP to the HTTPS port: status %d", resp.StatusCode)
	}
}

// TestServeTLSFiles checks that bad TLS files fail the start with an error
// naming the file (or the missing flag), before any store is created.
func TestServeTLSFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testCert(t, dir, 1)
	other := t.TempDir()
	_, otherKey, _ := testCert(t, other, 2)
	missing := filepath.Join(dir, "absent.pem")
	for _, tc := range []struct {
		name, cert, key string
		want            []string
	}{
		{"no key", certFile, "", []string{"--tls-key"}},
		{"no cert", "", keyFile, []string{"--tls-cert"}},
		{"unreadable cert", missing, keyFile, []string{"tls_cert", missing}},
		{"unreadable key", certFile, missing, []string{"tls_key", missing}},
		{"key as cert", keyFile, keyFile, []string{"tls_cert", keyFile, "CERTIFICATE"}},
		{"cert as key", certFile, certFile, []string{"tls_key", certFile, "PRIVATE KEY"}},
		{"mismatched", certFile, otherKey, []string{certFile, otherKey, "does not match"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "serve.db")
			err := Run(context.Background(), Config{Store: store, Listen: "127.0.0.1:0", TLSCert: tc.cert, TLSKey: tc.key},
				io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
			if err == nil {
				t.Fatal("started")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, serr := os.Stat(store); serr == nil {
				t.Errorf("the store was created before the TLS files were checked")
			}
		})
	}
}

// TestServeTLSConnLimit: over HTTPS a connection past the limit is closed
// without an answer (a 503 would need a handshake first), and served once
// a place is free.
func TestServeTLSConnLimit(t *testing.T) {
	certFile, keyFile, cert := testCert(t, t.TempDir(), 1)
	addr, _ := tlsRun(t, Config{TLSCert: certFile, TLSKey: keyFile, MaxConns: 1})
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// held is accepted first (the listen backlog is FIFO), so it holds the place.
	c := trusting(cert)
	if resp, err := get(c, "https://"+addr+"/healthz", ""); err == nil {
		t.Errorf("past the limit: status %d, want the connection closed", resp.StatusCode)
	}
	held.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := get(c, "https://"+addr+"/healthz", "")
		if err == nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the held connection closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
