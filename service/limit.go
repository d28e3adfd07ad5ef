package service

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

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

// Default connection limits and body deadline (Options).
const (
	defaultMaxConns      = 1024
	defaultMaxConnsPerIP = 128
	defaultBodyTimeout   = 10 * time.Second
)

// connLimitListener refuses a connection beyond max open connections in
// all, or perIP from one address, with a 503 written at once, so that
// slow or idle clients cannot hold every connection.
type connLimitListener struct {
	net.Listener
	max, perIP int
	log        *slog.Logger
	closeOnly  bool // refuse by closing, without the 503 (HTTPS)

	mu    sync.Mutex
	total int
	byIP  map[string]int
}

func newConnLimitListener(ln net.Listener, max, perIP int, log *slog.Logger) *connLimitListener {
	return &connLimitListener{Listener: ln, max: max, perIP: perIP, log: log, byIP: map[string]int{}}
}

// refusal is what a refused connection reads.
const refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: 46\r\n\r\n" +
	`{"error":"too many connections; retry later"}` + "\n"

// Accept returns the next connection within the limits.
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(ip); err == nil {
			ip = host
		}
		l.mu.Lock()
		ok := l.total < l.max && l.byIP[ip] < l.perIP
		if ok {
			l.total++
			l.byIP[ip]++
		}
		l.mu.Unlock()
		if ok {
			return &limitedConn{Conn: c, release: func() { l.release(ip) }}, nil
		}
		l.log.Warn("connection refused: over the connection limit", "max_conns", l.max, "max_conns_per_ip", l.perIP)
		if l.closeOnly {
			_ = c.Close()
			continue
		}
		go func() {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(c, refusal)
			_ = c.Close()
		}()
	}
}

func (l *connLimitListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

// limitedConn gives its place back once, when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
