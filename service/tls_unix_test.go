//go:build unix

package service

import (
	"crypto/tls"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestServeTLSReload renews the certificate files and sends SIGHUP: new
// handshakes get the new certificate without a restart. A reload of a bad
// file keeps the certificate in use.
func TestServeTLSReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testCert(t, dir, 1)
	addr, _ := tlsRun(t, Config{TLSCert: certFile, TLSKey: keyFile})
	_, _, renewed := testCert(t, dir, 2) // the same paths
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	c := trusting(renewed)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := get(c, "https://"+addr+"/healthz", "")
		if err == nil && resp.TLS.PeerCertificates[0].SerialNumber.Int64() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate is not served 10 s after SIGHUP: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cf, err := loadCert(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cf.reload(); err == nil {
		t.Fatal("a bad key reloaded")
	}
	if got, _ := cf.tlsConfig().GetCertificate(&tls.ClientHelloInfo{}); got == nil || got.Leaf.SerialNumber.Int64() != 2 {
		t.Errorf("after a failed reload: %+v, want the certificate in use", got)
	}
}
