package service

import (
	"embed"
	"io/fs"
	"net/http"
)

// openAPI is the OpenAPI 3 description of the API, served at
// /openapi.json. Tests check it against the registered handlers and
// against real answers, and CI lints it with Redocly (docs/serve.md).
//
//go:embed openapi.json
var openAPI []byte

// web holds the page (annotator and officer views): static files, no
// build step, calling only the documented API.
//
//go:embed web
var web embed.FS

// page serves the embedded page under /ui/ with a strict content policy:
// scripts and styles from this origin only, no framing.
func page() http.Handler {
	sub, _ := fs.Sub(web, "web")
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	})
}
