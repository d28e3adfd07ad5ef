package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeTLSFlags: --tls-cert and --tls-key go together (from flags or
// the config file, flags overriding it), the Kafka connection flags go
// with --kafka-brokers, and a bad file or setting fails the start, named,
// before the store is created.
func TestServeTLSFlags(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s.db")
	notPEM := writeTemp(t, dir, "cert.pem", "not a certificate\n")
	cfg := writeTemp(t, dir, "serve.json", `{"tls_cert": "`+notPEM+`"}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", notPEM}, "--tls-key"},
		{[]string{"--tls-key", notPEM}, "--tls-cert"},
		{[]string{"--config", cfg}, "--tls-key"},
		{[]string{"--config", cfg, "--tls-key", filepath.Join(dir, "absent.pem")}, notPEM},
		{[]string{"--tls-cert", filepath.Join(dir, "absent.pem"), "--tls-key", notPEM}, "absent.pem"},
		{[]string{"--kafka-tls"}, "--kafka-brokers"},
		{[]string{"--kafka-brokers", "127.0.0.1:1", "--kafka-topic", "t", "--kafka-learner", "k", "--kafka-tls-ca", notPEM}, notPEM},
		{[]string{"--kafka-brokers", "127.0.0.1:1", "--kafka-topic", "t", "--kafka-learner", "k", "--kafka-sasl", "GSSAPI", "--kafka-sasl-user", "u"}, "GSSAPI"},
	} {
		_, _, err := runCLI(t, "", append([]string{"serve", "--listen", "127.0.0.1:0", "--store", store}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
		if _, err := os.Stat(store); err == nil {
			t.Fatalf("serve %v created the store", tc.args)
		}
	}
}
