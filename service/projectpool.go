package service

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dpal-dev/dpal/data"
)

// poolBatch is how many parsed records one transaction stores: the
// upload holds one batch, never the body or the pool.
const poolBatch = 1000

// maxPoolLine bounds one line of a pool upload (a 784-pixel image in
// CSV is about 4 KiB; 16 MiB allows 1 M features).
const maxPoolLine = 16 << 20

// maxRejected bounds the rejected lines an upload names.
const maxRejected = 100

// poolUpload is the answer to a pool upload.
type poolUpload struct {
	// Accepted records were stored at pool indices First … First+Accepted−1.
	Accepted int `json:"accepted"`
	First    int `json:"first"`
	// Rejected counts the refused lines; Lines names the first 100 by
	// number with what was wrong (never their values).
	Rejected int            `json:"rejected"`
	Lines    []rejectedLine `json:"rejected_lines"`
	Pooled   int            `json:"pooled"`
	PoolSize int            `json:"pool_size"`
	State    string         `json:"state"`
}

// rejectedLine is one refused line of an upload.
type rejectedLine struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// poolLine is one JSON Lines record: its features and an optional id.
type poolLine struct {
	X  []float64 `json:"x"`
	ID string    `json:"id"`
}

// uploadPool streams a pool upload (CSV rows of numbers, JSON Lines
// {"x": [...], "id": "..."} for application/x-ndjson, or IDX images for
// application/x-idx: poolSource) into the store,
// poolBatch records a transaction, validating each line: its count of
// finite numbers is the schema's dim. A bad line is named by its number
// and skipped; records past pool_size are refused. ?start=K (optional)
// must be the number of records already stored, so that a retried
// upload cannot append twice. The read deadline is renewed per batch,
// so a large pool may take long while a stalled client still times out.
func (s *Server) uploadPool(w http.ResponseWriter, r *http.Request, _ caller) error {
	name := r.PathValue("name")
	ph := s.projects
	ph.mu.Lock()
	m, err := ph.meta(name)
	if err == nil && m.State != stateUploading {
		err = errState(m, stateUploading)
	}
	if err == nil {
		err = checkStart(r, m.Pooled)
	}
	ph.mu.Unlock()
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	in := bufio.NewReaderSize(r.Body, 64<<10)
	next, err := poolSource(r.Header.Get("Content-Type"), in, m.Settings.Dim)
	if err != nil {
		return err
	}
	out := poolUpload{First: m.Pooled, Lines: []rejectedLine{}, PoolSize: m.Settings.PoolSize}
	var ids []string
	var rows [][]float64
	for {
		_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
		line, id, x, perr, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return poolReadError(w, err)
		}
		if perr == "" && x == nil {
			continue // a blank or comment line
		}
		if perr == "" && out.First+out.Accepted+len(rows) >= m.Settings.PoolSize {
			out.Rejected++
			out.Lines = append(out.Lines, rejectedLine{Line: line, Error: fmt.Sprintf("the pool is full (pool_size %d): this line and the rest of the body were not read", m.Settings.PoolSize)})
			break
		}
		if perr != "" {
			out.Rejected++
			if len(out.Lines) < maxRejected {
				out.Lines = append(out.Lines, rejectedLine{Line: line, Error: perr})
			}
			continue
		}
		ids, rows = append(ids, id), append(rows, x)
		if len(rows) == poolBatch {
			if err := s.storePool(name, out.First+out.Accepted, ids, rows); err != nil {
				return err
			}
			out.Accepted += len(rows)
			ids, rows = ids[:0], rows[:0]
		}
	}
	_ = rc.SetReadDeadline(time.Time{})
	if len(rows) > 0 {
		if err := s.storePool(name, out.First+out.Accepted, ids, rows); err != nil {
			return err
		}
		out.Accepted += len(rows)
	}
	if m, err = ph.meta(name); err != nil {
		return err
	}
	out.Pooled, out.State = m.Pooled, m.State
	s.log.Info("pool uploaded", "project", name, "accepted", out.Accepted, "rejected", out.Rejected, "pooled", m.Pooled)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// poolRecord reads the next record of an upload: its number (the line,
// or the image's index from 1 in IDX), id and features, or what is wrong
// with it (perr, never quoting it). A nil x with no perr is a line to
// skip; io.EOF ends the body.
type poolRecord func() (line int, id string, x []float64, perr string, err error)

// poolSource reads a body of contentType: JSON Lines
// (application/x-ndjson or application/jsonl), IDX images
// (application/x-idx: MNIST's format, gzipped or not, each image's bytes
// scaled by 1/255 as `dpal train` loads them) or CSV (anything else).
func poolSource(contentType string, in *bufio.Reader, dim int) (poolRecord, error) {
	switch {
	case strings.HasPrefix(contentType, "application/x-idx"):
		return idxSource(in, dim)
	case strings.HasPrefix(contentType, "application/x-ndjson"), strings.HasPrefix(contentType, "application/jsonl"):
		return lineSource(in, true, dim), nil
	}
	return lineSource(in, false, dim), nil
}

// lineSource reads CSV or JSON Lines, one record a line.
func lineSource(in *bufio.Reader, jsonl bool, dim int) poolRecord {
	line := 0
	return func() (int, string, []float64, string, error) {
		raw, err := readPoolLine(in)
		if err != nil {
			return 0, "", nil, "", err
		}
		line++
		if len(bytes.TrimSpace(raw)) == 0 || raw[0] == '#' {
			return line, "", nil, "", nil
		}
		id, x, perr := parsePoolLine(raw, jsonl, dim)
		return line, id, x, perr, nil
	}
}

// idxSource reads an IDX file of unsigned-byte images whose size is dim.
// Every byte is a valid pixel, so only the header can be wrong: it is
// refused before any record is stored.
func idxSource(in *bufio.Reader, dim int) (poolRecord, error) {
	body := io.Reader(in)
	if head, _ := in.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, msg: "the IDX body starts as gzip but its gzip header is damaged"}
		}
		body = zr
	}
	h, err := data.ParseIDXHeader(body)
	if err != nil {
		return nil, &apiError{status: http.StatusBadRequest, msg: "not an IDX file of images: " + err.Error()}
	}
	if len(h.Dims) < 2 || h.RecordSize() != dim {
		return nil, &apiError{status: http.StatusBadRequest, field: "dim",
			msg: fmt.Sprintf("the IDX records are %v (%d values each), the project's dim is %d", h.Dims[1:], h.RecordSize(), dim)}
	}
	buf := make([]byte, dim)
	i := 0
	return func() (int, string, []float64, string, error) {
		if i == h.Count() {
			return 0, "", nil, "", io.EOF
		}
		if _, err := io.ReadFull(body, buf); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, "", nil, "", &apiError{status: http.StatusBadRequest,
					msg: fmt.Sprintf("the IDX body ends inside image %d of the %d its header announces: the batches before it were stored", i+1, h.Count())}
			}
			return 0, "", nil, "", err
		}
		i++
		x := make([]float64, dim)
		for j, b := range buf {
			x[j] = float64(b) / 255
		}
		return i, "", x, "", nil
	}, nil
}

// checkStart checks ?start= against the records stored.
func checkStart(r *http.Request, pooled int) error {
	v := r.URL.Query().Get("start")
	if v == "" {
		return nil
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 0 {
		return badField("start", "want an integer ≥ 0")
	}
	if k != pooled {
		return &apiError{status: http.StatusConflict, field: "start", msg: fmt.Sprintf("the pool holds %d records, not %d: nothing was stored (continue at start=%d)", pooled, k, pooled)}
	}
	return nil
}

// storePool stores one batch at pool index start, refusing it if another
// upload stored records meanwhile, and marks the project ready when the
// pool is complete.
func (s *Server) storePool(name string, start int, ids []string, rows [][]float64) error {
	ph := s.projects
	ph.mu.Lock()
	defer ph.mu.Unlock()
	_, err := ph.update(name, func(tx kvTx, m *projectMeta) error {
		if m.State != stateUploading || m.Pooled != start {
			return &apiError{status: http.StatusConflict, msg: "another upload stored records meanwhile; the records before this batch were kept (read the project's pooled count)"}
		}
		if err := appendPoolTx(tx, name, start, ids, rows); err != nil {
			return err
		}
		m.Pooled += len(rows)
		if m.Pooled == m.Settings.PoolSize {
			m.State = stateReady
		}
		return nil
	})
	return err
}

// readPoolLine reads one line (without its end), at most maxPoolLine bytes.
func readPoolLine(in *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := in.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxPoolLine {
			return nil, errTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (len(buf) == 0 || !errors.Is(err, io.EOF)) {
			return nil, err
		}
		return bytes.TrimRight(buf, "\r\n"), nil
	}
}

// poolReadError maps a failed body read to its answer.
func poolReadError(w http.ResponseWriter, err error) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, errTooLarge), errors.As(err, &mbe):
		return &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("a line is longer than %d bytes: the batches before it were stored", maxPoolLine)}
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		return errBodyTimeout
	}
	return &apiError{status: http.StatusBadRequest, msg: "reading the body failed"}
}

// parsePoolLine parses one line into its id and dim finite features; the
// problem, if any, never quotes the line.
func parsePoolLine(raw []byte, jsonl bool, dim int) (string, []float64, string) {
	var x []float64
	var id string
	if jsonl {
		var pl poolLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&pl); err != nil {
			return "", nil, "not a JSON object {\"x\": [numbers], \"id\": \"optional\"}"
		}
		if len(pl.ID) > poolIDLimit {
			return "", nil, fmt.Sprintf("id longer than %d bytes", poolIDLimit)
		}
		x, id = pl.X, pl.ID
	} else {
		fields := strings.Split(string(raw), ",")
		x = make([]float64, 0, len(fields))
		for i, f := range fields {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return "", nil, fmt.Sprintf("value %d is not a number", i+1)
			}
			x = append(x, v)
		}
	}
	if p := checkRow(x, dim); p != "" {
		return "", nil, p
	}
	return id, x, ""
}

// checkRow says what is wrong with a row of features, if anything: its
// count is not dim, or a value is not finite.
func checkRow(x []float64, dim int) string {
	if len(x) != dim {
		return fmt.Sprintf("%d values, want %d", len(x), dim)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("value %d is not finite", i+1)
		}
	}
	return ""
}
