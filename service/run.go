package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the file `dpal serve --config FILE` reads (JSON). Flags
// override its fields; every field has a working default.
type Config struct {
	// Store is the store file (default DefaultStore in the working directory).
	Store string `json:"store,omitempty"`
	// Listen is the address (default DefaultListen, loopback only).
	Listen string `json:"listen,omitempty"`
	// TLSCert and TLSKey, given together, are PEM files of the server's
	// certificate chain and private key: the server then speaks HTTPS only
	// (TLS 1.2 at least) and reloads both files on SIGHUP.
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	// MaxEventsBody and MaxBody bound request bodies (see Options).
	MaxEventsBody int64 `json:"max_events_body,omitempty"`
	MaxBody       int64 `json:"max_body,omitempty"`
	// RatePerToken and Burst limit each token's requests (see Options).
	RatePerToken float64 `json:"rate_per_token,omitempty"`
	Burst        int     `json:"burst,omitempty"`
	// MaxConns, MaxConnsPerIP and BodyTimeoutSeconds bound connections
	// and the reading of a body (see Options).
	MaxConns           int     `json:"max_conns,omitempty"`
	MaxConnsPerIP      int     `json:"max_conns_per_ip,omitempty"`
	BodyTimeoutSeconds float64 `json:"body_timeout_seconds,omitempty"`
	// Learners are created at start unless the store holds them: each is
	// the body of POST /v1/learners.
	Learners []json.RawMessage `json:"learners,omitempty"`
	// Kafka, when set, feeds a learner from a Kafka topic.
	Kafka *KafkaConfig `json:"kafka,omitempty"`
	// Advertise is the URL other replicas on a shared store reach this
	// one at (default: http:// or https:// and the listening address);
	// LeaseSeconds is a learner's lease time (default DefaultLeaseTTL).
	Advertise    string  `json:"advertise,omitempty"`
	LeaseSeconds float64 `json:"lease_seconds,omitempty"`
}

// The defaults of Config.
const (
	DefaultStore  = "dpal-serve.db"
	DefaultListen = "127.0.0.1:8080"
)

// LoadConfig reads a config file, refusing unknown fields.
func LoadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// LearnerFlag turns "NAME:DIM" into the body of POST /v1/learners for a
// learner with the default settings.
func LearnerFlag(s string) (json.RawMessage, error) {
	name, dim, ok := strings.Cut(s, ":")
	d, err := strconv.Atoi(dim)
	if !ok || err != nil {
		return nil, errors.New("want NAME:DIM, e.g. fraud:3")
	}
	return json.Marshal(createRequest{Name: name, Dim: d})
}

// ensureLearner creates the learner of a create request unless it exists.
func (s *Server) ensureLearner(raw []byte) error {
	spec, err := decodeCreate(raw)
	if err != nil {
		return err
	}
	if err := s.addLearner(spec); err != nil && !errors.Is(err, errExists) {
		return fmt.Errorf("learner %s: %w", spec.Name, err)
	}
	return nil
}

// options are the Server's options of c; with TLS files, their
// certificate is loaded and reloaded on SIGHUP until stop is called.
func (c Config) options(out io.Writer, log *slog.Logger) (opts Options, stop func(), err error) {
	opts = Options{MaxEventsBody: c.MaxEventsBody, MaxBody: c.MaxBody,
		RatePerToken: c.RatePerToken, Burst: c.Burst, Log: log, Out: out,
		MaxConns: c.MaxConns, MaxConnsPerIP: c.MaxConnsPerIP, BodyTimeout: time.Duration(c.BodyTimeoutSeconds * float64(time.Second)),
		Advertise: c.Advertise, LeaseTTL: time.Duration(c.LeaseSeconds * float64(time.Second))}
	useTLS, err := c.tlsFiles()
	if err != nil || !useTLS {
		return opts, func() {}, err
	}
	cf, err := loadCert(c.TLSCert, c.TLSKey)
	if err != nil {
		return opts, nil, err
	}
	opts.TLS = cf.tlsConfig()
	return opts, cf.reloadOnHangup(log), nil
}

// Run opens the store, creates the configured learners, and serves until
// ctx ends; then it shuts down gracefully and closes the store. A fresh
// store's admin token goes to out; listening(addr) is called once the
// socket is open (nil: nothing). With c.TLSCert and c.TLSKey it serves
// HTTPS only and re-reads both files on SIGHUP.
func Run(ctx context.Context, c Config, out io.Writer, log *slog.Logger, listening func(addr string)) error {
	if c.Store == "" {
		c.Store = DefaultStore
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	// Certificates and Kafka's settings are read before the store opens:
	// a bad file fails the start at once.
	if c.Kafka != nil {
		if _, err := c.Kafka.connOpts(); err != nil {
			return err
		}
	}
	opts, stopReload, err := c.options(out, log)
	if err != nil {
		return err
	}
	defer stopReload()
	st, err := OpenStore(c.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	// Listening comes first: a replica's default advertised URL is its
	// address.
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	if opts.Advertise == "" && st.Shared() {
		scheme := "http://"
		if opts.TLS != nil {
			scheme = "https://"
		}
		opts.Advertise = scheme + ln.Addr().String()
		if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
			log.Warn("replicas forward requests to this one's --advertise URL; the default, the listening address, names no host", "advertise", opts.Advertise)
		}
	}
	srv, err := New(st, opts)
	if err != nil {
		return err
	}
	for i, raw := range c.Learners {
		if err := srv.ensureLearner(raw); err != nil {
			srv.Close()
			return fmt.Errorf("config learners[%d]: %w", i, err)
		}
	}
	log.Info("dpal serve listening", "addr", ln.Addr().String(), "store", st.Path(), "tls", opts.TLS != nil, "advertise", opts.Advertise)
	if listening != nil {
		listening(ln.Addr().String())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kafkaErr := make(chan error, 1)
	if c.Kafka != nil {
		go func() {
			err := srv.RunKafka(ctx, *c.Kafka)
			if err != nil {
				log.Error("kafka consumer stopped; shutting down", "err", err)
			}
			kafkaErr <- err
			cancel() // a server that silently stopped consuming would look healthy
		}()
	} else {
		kafkaErr <- nil
	}
	err = srv.Serve(ctx, ln, 10*time.Second)
	cancel()
	err = errors.Join(err, <-kafkaErr)
	srv.Close()
	log.Info("dpal serve stopped", "err", err)
	return err
}
