package service

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"net/http"
	"testing"
)

// idxImages is an IDX file of n images of rows×cols unsigned bytes,
// image i's pixels all i.
func idxImages(n, rows, cols int) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0x08, 3})
	for _, d := range []int{n, rows, cols} {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	for i := range n {
		b.Write(bytes.Repeat([]byte{byte(i)}, rows*cols))
	}
	return b.Bytes()
}

func gzipped(b []byte) []byte {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(b)
	w.Close()
	return z.Bytes()
}

// TestProjectPoolIDX: a pool uploads as IDX images, plain or gzipped,
// scaled by 1/255; a header that does not fit the project's dim, or a
// body cut inside an image, is refused with the reason.
func TestProjectPoolIDX(t *testing.T) {
	const n = 600
	tests := []struct {
		name   string
		body   []byte
		status int
		pooled int
	}{
		{"plain", idxImages(n, 2, 2), http.StatusOK, n},
		{"gzip", gzipped(idxImages(n, 2, 2)), http.StatusOK, n},
		{"wrong-dim", idxImages(n, 3, 3), http.StatusBadRequest, 0},
		{"not-idx", []byte("0.1,0.2,0.3,0.4\n"), http.StatusBadRequest, 0},
		{"cut", idxImages(n, 2, 2)[:16+4*300+2], http.StatusBadRequest, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t)
			ts.mustDo(201, RoleAdmin, "POST", "/v1/projects", projectBody("p", "poisson", "entropy", n), nil)
			ts.mustDo(tc.status, RoleIngest, "POST", "/v1/projects/p/pool", string(tc.body), nil, "Content-Type", "application/x-idx")
			var v projectView
			ts.mustDo(200, RoleOfficer, "GET", "/v1/projects/p", "", &v)
			if v.Pooled != tc.pooled {
				t.Errorf("pooled %d, want %d", v.Pooled, tc.pooled)
			}
		})
	}
}

// TestIDXSourceScales: image i's pixels come out as i/255, numbered from 1.
func TestIDXSourceScales(t *testing.T) {
	next, err := idxSource(bufio.NewReader(bytes.NewReader(idxImages(256, 1, 2))), 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 256 {
		line, _, x, perr, err := next()
		if err != nil || perr != "" || line != i+1 || x[0] != float64(i)/255 || x[1] != x[0] {
			t.Fatalf("image %d: line %d x %v perr %q err %v", i, line, x, perr, err)
		}
	}
	if _, _, _, _, err := next(); err != io.EOF {
		t.Fatalf("after the last image: %v", err)
	}
}
