package service_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpal-dev/dpal/service"
)

// Example runs a server on a fresh store, creates a learner and sends it
// a batch of events: the accepted ones are durable when the answer comes.
func Example() {
	dir, _ := os.MkdirTemp("", "dpal-serve-example-")
	defer os.RemoveAll(dir)
	st, err := service.OpenStore(filepath.Join(dir, "serve.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	admin, err := st.CreateToken(service.RoleAdmin) // else New makes one and prints it to Options.Out
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := service.New(st, service.Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println(err)
		return
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	post := func(path, body string) string {
		req, _ := http.NewRequest("POST", web.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Idempotency-Key", "batch-1") // events calls need one
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprint(resp.StatusCode, " ", strings.TrimSpace(string(b)))
	}
	fmt.Println(post("/v1/learners", `{"name":"fraud","dim":2}`)[:3])
	fmt.Println(post("/v1/learners/fraud/events", "0.1,0.2\nNaN,1\n"))
	// Output:
	// 201
	// 200 {"accepted":1,"rejected":1,"results":[{"line":1,"status":"accepted","event":1},{"line":2,"status":"rejected","error":"invalid-input","field":"x"}]}
}
