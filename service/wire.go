package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dpal-dev/dpal/active/stream"
	"github.com/dpal-dev/dpal/groupsearch"
)

// apiError is an error with its HTTP status and, for a validation error,
// the request field at fault. Its message never carries a record's values.
type apiError struct {
	status int
	field  string
	msg    string
}

func (e *apiError) Error() string {
	if e.field != "" {
		return e.field + ": " + e.msg
	}
	return e.msg
}

func badField(field, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, field: field, msg: fmt.Sprintf(format, args...)}
}

// The errors with a fixed status.
var (
	errExists           = &apiError{status: http.StatusConflict, field: "name", msg: "a learner of this name exists"}
	errNoLearner        = &apiError{status: http.StatusNotFound, msg: "no such learner"}
	errNoSearch         = &apiError{status: http.StatusNotFound, msg: "no such search population"}
	errSearchExists     = &apiError{status: http.StatusConflict, field: "name", msg: "a search population of this name exists"}
	errNoRequest        = &apiError{status: http.StatusNotFound, field: "id", msg: "no label request with this id"}
	errNoRecord         = &apiError{status: http.StatusNotFound, field: "id", msg: "no such record"}
	errLabelled         = &apiError{status: http.StatusConflict, field: "id", msg: "the request is already labelled"}
	errClaimed          = &apiError{status: http.StatusConflict, field: "id", msg: "the request is claimed by another annotator"}
	errNotClaimed       = &apiError{status: http.StatusConflict, field: "id", msg: "claim the request before labelling it (no live claim of yours holds it; claims last 15 minutes)"}
	errTooLarge         = &apiError{status: http.StatusRequestEntityTooLarge, msg: "request body too large"}
	errBodyTimeout      = &apiError{status: http.StatusRequestTimeout, msg: "the body did not arrive within the body deadline"}
	errInFlight         = &apiError{status: http.StatusConflict, field: "Idempotency-Key", msg: "a batch with this key is being committed; retry for its answer"}
	errKeyReused        = &apiError{status: http.StatusUnprocessableEntity, field: "Idempotency-Key", msg: "this key was used with a different body: nothing was observed (a retry must send the same body; a new batch needs a new key)"}
	errStoreUnavailable = &apiError{status: http.StatusServiceUnavailable, msg: "the store (PostgreSQL) is unreachable; retry"}
	errBroken           = &apiError{status: http.StatusServiceUnavailable, msg: "the learner stopped after an internal error (see the server log); restart the server to resume it from its last checkpoint"}
)

// statusOf maps an error to its HTTP status (500 for an unknown error).
func statusOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	return http.StatusInternalServerError
}

// errorBody is every error response.
type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// readBody reads at most limit bytes of the request body, within the
// body deadline (Options.BodyTimeout): a client that stalls gets 408 and
// its connection is closed. The deadline is lifted once the body is read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return nil, errTooLarge
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		return nil, errBodyTimeout
	case err != nil:
		return nil, &apiError{status: http.StatusBadRequest, msg: "reading the body failed"}
	}
	_ = rc.SetReadDeadline(time.Time{})
	return b, nil
}

// decodeStrict decodes one JSON object into v, refusing unknown fields and
// trailing data. The message names the field, never the value.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badField("body", "trailing data after the JSON object")
	}
	return nil
}

// jsonError names the field of a decoding error without its value.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return badField(te.Field, "wrong type (want %s)", te.Type)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badField(strings.Trim(f, `"`), "unknown field")
	}
	if f, msg, ok := namedSetting(err); ok {
		return badField(f, "%s", msg)
	}
	return badField("body", "malformed JSON")
}

// settingError answers a library's validation error of the settings
// object obj ("config", "params", "halting"): field obj.<name> when the
// library names the setting, obj when it does not.
func settingError(obj string, err error) error {
	if f, msg, ok := namedSetting(err); ok {
		return badField(obj+"."+f, "%s", msg)
	}
	return badField(obj, "%v", err)
}

// namedSetting reads the JSON name of the setting a library's error
// names (stream.FieldError, groupsearch.FieldError) and the message to
// answer: the library's, or for an unknown enum name the names allowed,
// without the value sent (as jsonError never echoes one).
func namedSetting(err error) (field, msg string, ok bool) {
	var sf *stream.FieldError
	var gf *groupsearch.FieldError
	switch {
	case errors.As(err, &sf) && sf.Want != nil:
		return sf.Field, "unknown name (want one of " + strings.Join(sf.Want, ", ") + ")", true
	case errors.As(err, &sf):
		return sf.Field, err.Error(), true
	case errors.As(err, &gf):
		return gf.Field, err.Error(), true
	}
	return "", "", false
}

// createRequest is the body of POST /v1/learners: the settings of `dpal
// stream` (stream.Config's JSON names) over its defaults for dim, the
// detector's (stream.DetectorConfig: the Gaussian update).
type createRequest struct {
	Name   string          `json:"name"`
	Dim    int             `json:"dim"`
	Config json.RawMessage `json:"config,omitempty"`
	// Budget is the per-record ε budget of the learner's ledger (default:
	// the learner's ε_s + ε_g, what one record can spend).
	Budget float64 `json:"budget,omitempty"`
	// MaxOpenRequests bounds the queue of open label requests (default
	// defaultMaxOpen): while it is full, selections are masked (see
	// docs/serve.md, "The queue's bound").
	MaxOpenRequests int `json:"max_open_requests,omitempty"`
}

// learnerSpec is a validated create request.
type learnerSpec struct {
	Name    string
	Config  stream.Config
	Budget  float64
	MaxOpen int
}

// The bound on a learner's open label requests: the default, and the
// most a learner may ask for.
const (
	defaultMaxOpen = 10_000
	maxMaxOpen     = 1_000_000
)

// maxDim bounds a learner's dimension (the update noise caps it lower).
const maxDim = 1 << 16

// decodeCreate validates a create request and returns the learner's
// configuration, ledger budget and queue bound.
func decodeCreate(b []byte) (learnerSpec, error) {
	var req createRequest
	if err := decodeStrict(b, &req); err != nil {
		return learnerSpec{}, err
	}
	if !nameRE.MatchString(req.Name) {
		return learnerSpec{}, badField("name", "want 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit")
	}
	if req.Dim < 1 || req.Dim > maxDim {
		return learnerSpec{}, badField("dim", "want an integer in [1, %d]", maxDim)
	}
	if req.MaxOpenRequests < 0 || req.MaxOpenRequests > maxMaxOpen {
		return learnerSpec{}, badField("max_open_requests", "want an integer in [1, %d] (0: the default %d)", maxMaxOpen, defaultMaxOpen)
	}
	if req.MaxOpenRequests == 0 {
		req.MaxOpenRequests = defaultMaxOpen
	}
	cfg := stream.DetectorConfig(req.Dim)
	if len(req.Config) > 0 {
		if err := decodeStrict(req.Config, &cfg); err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				ae.field = "config." + ae.field
			}
			return learnerSpec{}, err
		}
		cfg.Dim = req.Dim
	}
	if cfg.NonPrivate {
		return learnerSpec{}, badField("config.non_private", "the non-private baseline is for experiments, not a service")
	}
	if cfg.Update == stream.Tree {
		// Every acknowledged batch is checkpointed, and a tree learner's
		// state cannot be saved (its noisy nodes would have to be).
		return learnerSpec{}, badField("config.update", "the tree update cannot be checkpointed; use gaussian or gamma")
	}
	recEps, err := cfg.RecordEpsilon()
	if err != nil {
		return learnerSpec{}, settingError("config", err)
	}
	switch {
	case req.Budget == 0:
		req.Budget = recEps
	case req.Budget < recEps*(1-1e-12) || math.IsInf(req.Budget, 0):
		return learnerSpec{}, badField("budget", "must be at least the learner's per-record ε (ε_s + ε_g = %g), or the first update would be refused", recEps)
	}
	return learnerSpec{Name: req.Name, Config: cfg, Budget: req.Budget, MaxOpen: req.MaxOpenRequests}, nil
}

// maxRecordID bounds a client's record id.
const maxRecordID = 128

// parseEvents splits an events body into lines (CSV rows or JSON objects
// {"x": [...], "id": "..."}; blank and '#' lines are skipped but counted)
// and parses each. A JSON body (Content-Type application/json) is one
// event, whatever its layout.
func parseEvents(body []byte, oneJSON bool, dim int) []event {
	var evs []event
	if oneJSON {
		var buf bytes.Buffer
		if json.Compact(&buf, body) != nil {
			return []event{{line: 1, field: "body"}}
		}
		body = buf.Bytes()
	}
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		evs = append(evs, parseEvent(line, n, dim))
	}
	return evs
}

// parseEvent parses one event line with stream.ParseEvent (one parser for
// the CLI and the service), and its optional record id.
func parseEvent(line []byte, n, dim int) event {
	ev := event{line: n}
	x, err := stream.ParseEvent(line, nil)
	if err != nil || len(x) != dim {
		ev.field = "x"
		return ev
	}
	ev.x = x
	if line[0] == '{' && bytes.Contains(line, []byte(`"id"`)) {
		var v struct {
			ID *string `json:"id"`
		}
		if json.Unmarshal(line, &v) != nil || v.ID == nil || !validRecordID(*v.ID) {
			ev.field = "id"
		} else {
			ev.record = *v.ID
		}
	}
	return ev
}

// validRecordID accepts printable UTF-8 of 1 to maxRecordID bytes without
// ':' (which default ids use) or '/'.
func validRecordID(s string) bool {
	if s == "" || len(s) > maxRecordID || !utf8.ValidString(s) || strings.ContainsAny(s, ":/") {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// labelRequest is the body of POST …/labels.
type labelRequest struct {
	ID uint64  `json:"id"`
	Y  float64 `json:"y"`
}

func decodeLabel(b []byte) (labelRequest, error) {
	var req labelRequest
	if err := decodeStrict(b, &req); err != nil {
		return req, err
	}
	if req.ID == 0 {
		return req, badField("id", "want the id of a label request (> 0)")
	}
	if req.Y != 1 && req.Y != -1 {
		return req, badField("y", "want -1 or 1")
	}
	return req, nil
}

func jsonBytes(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
