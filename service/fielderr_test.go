package service

import (
	"net/http"
	"strings"
	"testing"
)

// TestSettingFields: an invalid setting inside config, params or halting
// is answered with its path (config.eta, not config), with the library's
// message (the CLI's text); an unknown enum name with the names allowed,
// never the value sent.
func TestSettingFields(t *testing.T) {
	ts := newTestServer(t)
	const search = `{"name":"s","oracle":"rr","params":{"t_low":1,"t_high":2,"epsilon":1`
	for _, tc := range []struct {
		name, path, body, field string
		msg                     string // a part of the message
	}{
		{"unknown selector", "/v1/learners", `{"name":"b","dim":2,"config":{"selector":"nope"}}`, "config.selector", "want one of bernoulli, exponential"},
		{"unknown norm mode", "/v1/learners", `{"name":"b","dim":2,"config":{"norm_mode":"nope"}}`, "config.norm_mode", "want one of clip, reject"},
		{"unknown policy", "/v1/learners", `{"name":"b","dim":2,"config":{"policy":"nope"}}`, "config.policy", "want one of flsw, flmb"},
		{"unknown update", "/v1/learners", `{"name":"b","dim":2,"config":{"update":"nope"}}`, "config.update", "want one of gamma, gaussian, tree"},
		{"unknown calibration", "/v1/learners", `{"name":"b","dim":2,"config":{"calibration":"nope"}}`, "config.calibration", "want one of paper, scale, slab"},
		{"eta", "/v1/learners", `{"name":"b","dim":2,"config":{"eta":-1}}`, "config.eta", "stream: eta must be finite and > 0, got -1"},
		{"window", "/v1/learners", `{"name":"b","dim":2,"config":{"window":0}}`, "config.window", "stream: window must be in"},
		{"M", "/v1/learners", `{"name":"b","dim":2,"config":{"m":0}}`, "config.m", "stream: M must be finite and > 0"},
		{"eps_grad", "/v1/learners", `{"name":"b","dim":2,"config":{"eps_grad":-1}}`, "config.eps_grad", "stream: eps-grad:"},
		{"delta", "/v1/learners", `{"name":"b","dim":2,"config":{"delta":2}}`, "config.delta", "needs 0 < delta < 1"},
		{"loss", "/v1/learners", `{"name":"b","dim":2,"config":{"loss":"square"}}`, "config.loss", "unknown loss"},
		{"exponential b", "/v1/learners", `{"name":"b","dim":2,"config":{"selector":"exponential","b":2}}`, "config.b", "exponential selector needs 0 <= b < M"},
		{"wrong type", "/v1/learners", `{"name":"b","dim":2,"config":{"eta":"fast"}}`, "config.eta", "wrong type"},
		{"unknown setting", "/v1/learners", `{"name":"b","dim":2,"config":{"bogus":1}}`, "config.bogus", "unknown field"},
		{"t_low", "/v1/searches", `{"name":"s","oracle":"rr","params":{"t_low":-1,"t_high":2,"epsilon":1}}`, "params.t_low", "t_low must be > 0"},
		{"t_high", "/v1/searches", `{"name":"s","oracle":"rr","params":{"t_low":2,"t_high":1,"epsilon":1}}`, "params.t_high", "need t_low < t_high"},
		{"epsilon", "/v1/searches", `{"name":"s","oracle":"rr","params":{"t_low":1,"t_high":2,"epsilon":-1}}`, "params.epsilon", "epsilon must be finite and > 0"},
		{"mean level", "/v1/searches", search + `,"mean_level":5}}`, "params.mean_level", "mean level must lie in [0, t_low]"},
		{"posterior", "/v1/searches", search + `},"halting":{"posterior":2}}`, "halting.posterior", "halting posterior α must be in (0, 1)"},
		{"halting delta", "/v1/searches", search + `},"halting":{"delta":-1}}`, "halting.delta", "halting δ must be in (0, 1)"},
		{"max queries", "/v1/searches", search + `},"halting":{"max_queries":-1}}`, "halting.max_queries", "max queries must be >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e errorBody
			got := ts.do(RoleAdmin, "POST", tc.path, tc.body, &e)
			if got != http.StatusBadRequest || e.Field != tc.field || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("status %d field %q (%s), want 400 %q (%s)", got, e.Field, e.Error, tc.field, tc.msg)
			}
			if strings.Contains(e.Error, "nope") {
				t.Errorf("the answer echoes the value sent: %s", e.Error)
			}
		})
	}
}

// TestScoreIndexZero: an accepted scores line always says its index, 0
// included (omitempty once dropped it); a rejected line has none. A
// line without an index takes the count of accepted lines before it.
func TestScoreIndexZero(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(http.StatusCreated, RoleAdmin, "POST", "/v1/searches", `{"name":"s","oracle":"rr","params":{"t_low":1,"t_high":5,"epsilon":1}}`, nil)
	var ans struct {
		Results []map[string]any
	}
	ts.mustDo(http.StatusOK, RoleIngest, "POST", "/v1/searches/s/scores", "0.5\n0,0.25\nx,1\n1\n", &ans)
	for i, want := range []any{0.0, 0.0, nil, 2.0} {
		r := ans.Results[i]
		if got, ok := r["index"]; got != want || ok != (want != nil) {
			t.Errorf("line %d: index %v (present %v), want %v", i+1, got, ok, want)
		}
	}
}
