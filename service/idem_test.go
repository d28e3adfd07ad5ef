package service

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
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

// TestIdempotencyKeyConcurrent: calls with one key sent at once observe
// the batch once (the key is read before the learner's lock, and a call
// with the key that settles meanwhile is caught): each is answered 200
// with the batch's answer or 409 while it commits.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	ts := newTestServer(t)
	ts.createLearner("a")
	const keys, senders = 20, 6
	for k := range keys {
		codes := make([]int, senders)
		answers := make([]ingestAnswer, senders)
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", ts.http.URL+"/v1/learners/a/events", strings.NewReader(events(3)))
				req.Header.Set("Authorization", "Bearer "+ts.tok[RoleIngest])
				req.Header.Set("Idempotency-Key", fmt.Sprintf("same-%d", k))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // codes[s] stays 0
				}
				defer resp.Body.Close()
				codes[s] = resp.StatusCode
				_ = json.NewDecoder(resp.Body).Decode(&answers[s])
			})
		}
		wg.Wait()
		var first *ingestAnswer
		for s, code := range codes {
			switch {
			case code == http.StatusConflict:
			case code != http.StatusOK:
				t.Fatalf("key %d sender %d: status %d", k, s, code)
			case first == nil:
				first = &answers[s]
			case !reflect.DeepEqual(answers[s], *first):
				t.Fatalf("key %d: answers differ: %+v and %+v", k, answers[s], *first)
			}
		}
		if first == nil {
			t.Fatalf("key %d: no sender was answered 200: %v", k, codes)
		}
	}
	var b budgetView
	ts.mustDo(http.StatusOK, RoleOfficer, "GET", "/v1/learners/a/budget", "", &b)
	if b.Stats.Observed != 3*keys {
		t.Errorf("observed %d, want each of the %d batches once (%d)", b.Stats.Observed, keys, 3*keys)
	}
}

// TestSettledKeys: since tells whether a key settled after a number, or
// that too many did to tell.
func TestSettledKeys(t *testing.T) {
	var k settledKeys
	k.add("a")
	from := k.seq.Load()
	k.add("b")
	for _, tc := range []struct {
		key  string
		from uint64
		want bool
	}{{"a", 0, true}, {"a", from, false}, {"b", from, true}, {"c", 0, false}} {
		if got := k.since(tc.key, tc.from); got != tc.want {
			t.Errorf("since(%q, %d) = %v, want %v", tc.key, tc.from, got, tc.want)
		}
	}
	for i := range settledRing {
		k.add(fmt.Sprint(i))
	}
	if !k.since("c", from) {
		t.Error("after more keys than the ring holds, since must say maybe")
	}
}
