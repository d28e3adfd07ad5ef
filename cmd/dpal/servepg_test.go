package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
	"github.com/dpal-dev/dpal/service"
)

// TestServeTokenPostgres: `dpal serve token create --store postgres://…`
// (and with the URL in $DPAL_STORE_DSN) works while a replica runs on the
// database, and the replica accepts the token at once.
func TestServeTokenPostgres(t *testing.T) {
	dsn := pgtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, service.Config{Store: dsn, Listen: "127.0.0.1:0"}, io.Discard,
			slog.New(slog.NewJSONHandler(io.Discard, nil)), func(a string) { addr <- a })
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	case <-time.After(time.Minute):
		t.Fatal("the replica did not start")
	}
	for _, viaEnv := range []bool{false, true} {
		args := []string{"serve", "token", "create", "--role", "officer"}
		if viaEnv {
			t.Setenv(storeDSNEnv, dsn)
		} else {
			args = append(args, "--store", dsn)
		}
		out, _, err := runCLI(t, "", args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		tok := lines[len(lines)-1]
		if err != nil || !strings.HasPrefix(tok, "dpal_officer_") {
			t.Fatalf("token create (env %v): %q %v", viaEnv, out, err)
		}
		req, _ := http.NewRequest("GET", base+"/v1/ledger", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the running replica answered %d to the new token (env %v)", resp.StatusCode, viaEnv)
		}
	}
}
