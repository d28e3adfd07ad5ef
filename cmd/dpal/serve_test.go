package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpal-dev/dpal/service"
)

func TestServeToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	if _, _, err := runCLI(t, "", "serve", "token", "create", "--role", "officer", "--store", path); err == nil {
		t.Fatal("token create on a missing store succeeded")
	}
	st, err := service.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, _, err := runCLI(t, "", "serve", "token", "create", "--role", "root", "--store", path); err == nil || !strings.Contains(err.Error(), "--role") {
		t.Fatalf("unknown role: %v", err)
	}
	out, _, err := runCLI(t, "", "serve", "token", "create", "--role", "officer", "--store", path)
	if err != nil || !strings.HasPrefix(out, "dpal_officer_") {
		t.Fatalf("token create: %q %v", out, err)
	}
	id := service.TokenID(strings.TrimSpace(out))
	if _, _, err := runCLI(t, "", "serve", "token", "revoke", id, "--store", path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "", "serve", "token", "revoke", id, "--store", path); err == nil {
		t.Error("revoking twice succeeded")
	}
}
