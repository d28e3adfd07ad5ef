package service

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveOn starts ts's server with opts on a loopback listener through
// Serve (the path with the connection limits and timeouts) and returns
// its address.
func serveOn(t *testing.T, opts Options) (string, *testServer) {
	t.Helper()
	ts := newTestServer(t)
	ts.createLearner("a")
	opts.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	srv, err := New(ts.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), ts
}

// slowBody opens a connection that sends an events request's headers
// and a few bytes of a body it never finishes.
func slowBody(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(c, "POST /v1/learners/a/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+
		"\r\nIdempotency-Key: slow\r\nContent-Length: 100000\r\n\r\n0.1,")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// closedWithin reports whether the server answers or closes c within d,
// and the status line it sent, if any.
func closedWithin(c net.Conn, d time.Duration) (bool, string) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := bufio.NewReader(c).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false, ""
	}
	return true, strings.TrimSpace(line)
}

// TestSlowClients: a connection that stalls in its body is answered 408
// and closed after the body deadline, not the 60 s read timeout; past the
// per-IP (and the total) connection limit a connection is refused at once
// with 503; a well-behaved request then goes through.
func TestSlowClients(t *testing.T) {
	addr, ts := serveOn(t, Options{BodyTimeout: 300 * time.Millisecond, MaxConnsPerIP: 4, MaxConns: 100})
	var conns []net.Conn
	for range 4 {
		conns = append(conns, slowBody(t, addr, ts.tok[RoleIngest]))
	}
	extra := slowBody(t, addr, ts.tok[RoleIngest])
	if ok, line := closedWithin(extra, 200*time.Millisecond); !ok || !strings.Contains(line, "503") {
		t.Errorf("a 5th connection from one IP over a limit of 4: closed %v, %q", ok, line)
	}
	extra.Close()
	for i, c := range conns {
		if ok, line := closedWithin(c, 3*time.Second); !ok || !strings.Contains(line, "408") {
			t.Errorf("slow body %d: closed %v, %q; want 408 after the 300 ms body deadline", i, ok, line)
		}
		c.Close()
	}
	time.Sleep(50 * time.Millisecond) // the server sees the closes
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/learners/a/events", strings.NewReader(events(3)))
	req.Header.Set("Authorization", "Bearer "+ts.tok[RoleIngest])
	req.Header.Set("Idempotency-Key", "after-the-slow-ones")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a normal request after the slow ones: %d", resp.StatusCode)
	}
}

// TestConnLimitTotal: past the total limit a connection is refused with 503.
func TestConnLimitTotal(t *testing.T) {
	addr, ts := serveOn(t, Options{BodyTimeout: 5 * time.Second, MaxConnsPerIP: 100, MaxConns: 3})
	for range 3 {
		defer slowBody(t, addr, ts.tok[RoleIngest]).Close()
	}
	time.Sleep(50 * time.Millisecond)
	extra := slowBody(t, addr, ts.tok[RoleIngest])
	defer extra.Close()
	if ok, line := closedWithin(extra, 500*time.Millisecond); !ok || !strings.Contains(line, "503") {
		t.Errorf("a 4th connection over a total of 3: closed %v, %q", ok, line)
	}
}
