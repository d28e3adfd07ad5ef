package service

import (
	"net/http"
	"strings"
	"testing"
)

// TestIdempotencyKeyReused: a key sent again with another body is refused
// with 422 and observes nothing; with the same body it returns the stored
// answer.
func TestIdempotencyKeyReused(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	var first, again ingestAnswer
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(5), &first, "Idempotency-Key", "k1")
	var e errorBody
	ts.mustDo(http.StatusUnprocessableEntity, RoleIngest, "POST", "/v1/learners/a/events", events(6), &e, "Idempotency-Key", "k1")
	if e.Field != "Idempotency-Key" || !strings.Contains(e.Error, "different body") {
		t.Errorf("reused key: %+v", e)
	}
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/learners/a/events", events(5), &again, "Idempotency-Key", "k1")
	if len(again.Results) != len(first.Results) || again.Accepted != first.Accepted {
		t.Errorf("replay answered %+v, first %+v", again, first)
	}
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	if b.Stats.Observed != 5 {
		t.Errorf("observed %d, want the first batch's 5", b.Stats.Observed)
	}
}

// TestIdempotencyKeyRequired: an events call without a key is refused
// (a retry would feed its records twice while each is charged once).
func TestIdempotencyKeyRequired(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	var e errorBody
	ts.mustDo(http.StatusBadRequest, RoleIngest, "POST", "/v1/learners/a/events", events(3), &e, "Idempotency-Key", "")
	if e.Field != "Idempotency-Key" {
		t.Errorf("no key: %+v", e)
	}
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	if b.Stats.Observed != 0 {
		t.Errorf("observed %d without a key", b.Stats.Observed)
	}
}
