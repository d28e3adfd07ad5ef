package service

import (
	"sync"

	"golang.org/x/time/rate"
)

// Default per-token rate limits: far above an annotator or an officer,
// and above what single-event ingest sustains on one disk (see
// docs/serve.md), so that only a runaway client meets them.
const (
	defaultRate  = 2000 // requests per second
	defaultBurst = 4000
)

// limiters holds one token bucket per token id (golang.org/x/time/rate).
type limiters struct {
	rate  rate.Limit
	burst int
	mu    sync.Mutex
	byID  map[string]*rate.Limiter
}

func newLimiters(perSecond float64, burst int) *limiters {
	if perSecond <= 0 {
		perSecond = defaultRate
	}
	if burst <= 0 {
		burst = defaultBurst
	}
	return &limiters{rate: rate.Limit(perSecond), burst: burst, byID: map[string]*rate.Limiter{}}
}

// allow takes one request from the bucket of token id.
func (l *limiters) allow(id string) bool {
	l.mu.Lock()
	lim, ok := l.byID[id]
	if !ok {
		lim = rate.NewLimiter(l.rate, l.burst)
		l.byID[id] = lim
	}
	l.mu.Unlock()
	return lim.Allow()
}
