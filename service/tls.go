package service

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
)

// certFiles holds the certificate of an HTTPS listener, read from its two
// PEM files; reload reads them again (on SIGHUP, so that a renewed
// certificate takes effect without a restart), and handshakes see the
// last pair that loaded.
type certFiles struct {
	cert, key string
	pair      atomic.Pointer[tls.Certificate]
}

// loadCert reads the certificate chain of certFile and the private key of
// keyFile; an error names the file at fault (both when they do not match).
func loadCert(certFile, keyFile string) (*certFiles, error) {
	cf := &certFiles{cert: certFile, key: keyFile}
	if err := cf.reload(); err != nil {
		return nil, err
	}
	return cf, nil
}

// reload reads both files again; on error the pair in use stays.
func (cf *certFiles) reload() error {
	certPEM, err := readPEM(cf.cert, "tls_cert", "CERTIFICATE")
	if err != nil {
		return err
	}
	keyPEM, err := readPEM(cf.key, "tls_key", "PRIVATE KEY")
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("tls_cert %s with tls_key %s: %w", cf.cert, cf.key, err)
	}
	cf.pair.Store(&pair)
	return nil
}

// readPEM reads a PEM file that must hold a block whose type ends in want
// ("PRIVATE KEY" also admits "EC PRIVATE KEY" and "RSA PRIVATE KEY").
func readPEM(path, field, want string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			return nil, fmt.Errorf("%s %s: no PEM block of type %s", field, path, want)
		}
		if strings.HasSuffix(blk.Type, want) {
			return b, nil
		}
	}
}

// tlsConfig is the server's TLS configuration: TLS 1.2 at least, Go's
// default cipher suites, HTTP/2 and HTTP/1.1, the current certificate.
func (cf *certFiles) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return cf.pair.Load(), nil
		},
	}
}

// reloadOnHangup reloads the files on every SIGHUP until stop is called;
// a failed reload is logged and the certificate in use stays.
func (cf *certFiles) reloadOnHangup(log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				if err := cf.reload(); err != nil {
					log.Error("tls: reloading the certificate failed; the old one stays in use", "err", err)
				} else {
					log.Info("tls: certificate reloaded", "cert", cf.cert)
				}
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}

// tlsFiles checks that c names both TLS files or neither.
func (c Config) tlsFiles() (bool, error) {
	switch {
	case c.TLSCert == "" && c.TLSKey == "":
		return false, nil
	case c.TLSKey == "":
		return false, errors.New("tls: the key file (--tls-key, tls_key) is missing: a certificate and its key go together")
	case c.TLSCert == "":
		return false, errors.New("tls: the certificate file (--tls-cert, tls_cert) is missing: a certificate and its key go together")
	}
	return true, nil
}
