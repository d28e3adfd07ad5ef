package service

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dpal-dev/dpal/dp/ledger"
)

// metrics are the Prometheus series the server exports (its own registry,
// so tests can run several servers).
type metrics struct {
	reg      *prometheus.Registry
	events   *prometheus.CounterVec
	requests *prometheus.CounterVec
	labels   *prometheus.CounterVec
	releases *prometheus.CounterVec
	epsilon  *prometheus.GaugeVec
	latency  *prometheus.HistogramVec
	// The queue of open label requests: its size, bound and oldest
	// request's age (set at each scrape), and the selections masked
	// because it was full.
	open, openMax, openAge *prometheus.GaugeVec
	masked                 *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpal_events_total",
			Help: "Events received, by learner and status (accepted, rejected)."}, []string{"learner", "status"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpal_label_requests_total",
			Help: "Label requests made, by learner."}, []string{"learner"}),
		labels: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpal_labels_total",
			Help: "Labels accepted, by learner."}, []string{"learner"}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpal_releases_total",
			Help: "Models released, by learner."}, []string{"learner"}),
		epsilon: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpal_epsilon_spent",
			Help: "ε spent per record, by learner and ledger group."}, []string{"learner", "group"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpal_http_request_duration_seconds",
			Help: "HTTP request latency, by route and status code.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)},
			[]string{"route", "code"}),
	}
	m.open = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpal_open_requests",
		Help: "Open label requests (not yet labelled), by learner."}, []string{"learner"})
	m.openMax = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpal_open_requests_max",
		Help: "The bound on open label requests (max_open_requests), by learner."}, []string{"learner"})
	m.openAge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpal_open_request_oldest_age_seconds",
		Help: "Age of the oldest open label request (0 with none open), by learner."}, []string{"learner"})
	m.masked = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpal_selections_masked_total",
		Help: "Selections masked (not published) because the learner's queue of open requests was full, by learner."}, []string{"learner"})
	m.reg.MustRegister(m.events, m.requests, m.labels, m.releases, m.epsilon, m.latency, m.open, m.openMax, m.openAge, m.masked)
	return m
}

func (m *metrics) ingested(learner string, accepted, rejected, requests, masked, releases int) {
	m.events.WithLabelValues(learner, "accepted").Add(float64(accepted))
	m.events.WithLabelValues(learner, "rejected").Add(float64(rejected))
	m.requests.WithLabelValues(learner).Add(float64(requests))
	m.masked.WithLabelValues(learner).Add(float64(masked))
	m.releases.WithLabelValues(learner).Add(float64(releases))
}

// queue sets a learner's queue gauges.
func (m *metrics) queue(learner string, q queueView) {
	m.open.WithLabelValues(learner).Set(float64(q.Open))
	m.openMax.WithLabelValues(learner).Set(float64(q.Max))
	m.openAge.WithLabelValues(learner).Set(q.OldestAgeSeconds)
}

func (m *metrics) labelled(learner string, releases int) {
	m.labels.WithLabelValues(learner).Inc()
	m.releases.WithLabelValues(learner).Add(float64(releases))
}

func (m *metrics) spent(learner string, led *ledger.Ledger) {
	for _, g := range led.Summary() {
		m.epsilon.WithLabelValues(learner, g.Group).Set(g.Epsilon)
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe records one request's latency under its route pattern.
func (m *metrics) observe(route string, code int, start time.Time) {
	m.latency.WithLabelValues(route, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
}
