package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dpal-dev/dpal/dp/ledger"
	"github.com/dpal-dev/dpal/service"
)

// serveOptions are the flags of `dpal serve`.
type serveOptions struct {
	Store, Listen, Config, Advertise     string
	TLSCert, TLSKey                      string
	KafkaBrokers                         []string
	KafkaTopic, KafkaLearner, KafkaGroup string
	KafkaTLS                             bool
	KafkaTLSCA, KafkaSASL, KafkaSASLUser string
	Learners                             []string
}

// tokenOptions are the flags of `dpal serve token create` and `revoke`
// (Role: create only).
type tokenOptions struct{ Store, Role string }

// serveBenchOptions are the flags of `dpal serve bench`: the load's
// settings bound into Spec, and its learner's config as given.
type serveBenchOptions struct {
	Spec          service.LoadSpec
	LearnerConfig string
}

var (
	serveOpts                        serveOptions
	tokenCreateOpts, tokenRevokeOpts tokenOptions
	serveBenchOpts                   serveBenchOptions
)

func init() {
	serveCmd := &cobra.Command{
		Use:   "serve",
		Short: "Run private stream learners as a durable, authenticated HTTP service",
		Long: `serve runs named private stream learners (the learner of 'dpal stream') behind
an HTTP/JSON API (GET /openapi.json describes it; docs/serve.md has a quick
start). Everything — each learner's ledger and checkpoint, label requests,
labels, releases and the hashed API tokens — lives in one store file, or, with
--store postgres://… (or $DPAL_STORE_DSN), in a PostgreSQL database that
replicas share (docs/serve.md, Deployment); every spend is committed before
its release leaves, and a restart resumes each learner exactly. A fresh
store prints an admin token once, on stdout.

--config FILE is JSON: {"store", "listen", "advertise", "lease_seconds",
"tls_cert", "tls_key", "max_events_body", "max_body",
"learners": [bodies of POST /v1/learners]};
flags override it. --tls-cert and --tls-key (together) make it serve HTTPS
only, TLS 1.2 at least; SIGHUP re-reads both files. SIGTERM or SIGINT shut
down gracefully. Logs are JSON lines on stderr.`,
		Args: cobra.NoArgs,
		RunE: runServe,
	}
	f, o := serveCmd.Flags(), &serveOpts
	f.StringVar(&o.Store, "store", service.DefaultStore, "store file (created if absent, mode 0600; holds private data), or a postgres:// URL that replicas share (default $"+storeDSNEnv+" when set)")
	f.StringVar(&o.Listen, "listen", service.DefaultListen, "address to listen on")
	f.StringVar(&o.Advertise, "advertise", "", "with a postgres:// --store: the URL other replicas forward this one's learners' requests to (default: the listening address)")
	f.StringVar(&o.TLSCert, "tls-cert", "", "serve HTTPS only, with this PEM certificate chain (needs --tls-key; reloaded on SIGHUP)")
	f.StringVar(&o.TLSKey, "tls-key", "", "with --tls-cert: the PEM private key of the certificate")
	f.StringVar(&o.Config, "config", "", "JSON config file (learners to create, limits)")
	f.StringSliceVar(&o.KafkaBrokers, "kafka-brokers", nil, "consume events from Kafka: seed brokers host:port,…")
	f.StringVar(&o.KafkaTopic, "kafka-topic", "", "with --kafka-brokers: the topic (each record: one event line, or several)")
	f.StringVar(&o.KafkaLearner, "kafka-learner", "", "with --kafka-brokers: the learner the topic feeds")
	f.StringVar(&o.KafkaGroup, "kafka-group", "", "with --kafka-brokers: the consumer group (default dpal-serve-LEARNER)")
	f.BoolVar(&o.KafkaTLS, "kafka-tls", false, "with --kafka-brokers: connect over TLS, verifying the brokers against the system's roots")
	f.StringVar(&o.KafkaTLSCA, "kafka-tls-ca", "", "with --kafka-brokers: connect over TLS, verifying the brokers against this PEM file's certificates")
	f.StringVar(&o.KafkaSASL, "kafka-sasl", "", "with --kafka-brokers: SASL mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (password from $"+kafkaPasswordEnv+")")
	f.StringVar(&o.KafkaSASLUser, "kafka-sasl-user", "", "with --kafka-sasl: the SASL user")
	f.StringArrayVar(&o.Learners, "learner", nil, "create learner NAME:DIM with the default settings of 'dpal stream' unless the store holds it (repeatable)")

	token := groupCommand("token", "Create or revoke API tokens (while the server is stopped)")
	create := &cobra.Command{
		Use:   "create",
		Short: "Print a new token of --role (stored hashed: shown only now)",
		Args:  cobra.NoArgs,
		RunE:  runTokenCreate,
	}
	create.Flags().StringVar(&tokenCreateOpts.Role, "role", "", "ingest, annotator, officer or admin (required)")
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke the token of this id (the 16 hex digits 'token create' printed) or the token itself",
		Args:  cobra.ExactArgs(1),
		RunE:  runTokenRevoke,
	}
	for _, t := range []struct {
		c *cobra.Command
		o *tokenOptions
	}{{create, &tokenCreateOpts}, {revoke, &tokenRevokeOpts}} {
		t.c.Flags().StringVar(&t.o.Store, "store", service.DefaultStore, "store file, or postgres:// URL (default $"+storeDSNEnv+" when set)")
		token.AddCommand(t.c)
	}
	bench := &cobra.Command{
		Use:   "bench",
		Short: "Measure durable ingest over loopback: a fixed count of events against an in-process server on a scratch store",
		Long: `bench starts a server on a fresh store in a temporary directory, listening on
127.0.0.1, creates a learner of --dim (the default learner of 'dpal serve
--learner NAME:DIM' unless --learner-config or --max-open say otherwise),
and sends --events synthetic events in requests of --batch lines from
--workers clients. --store postgres://… (an empty database) benches the
shared store, --replicas N that many replicas on it, --learners N spreads the
events over N learners (learner j's requests to replica j mod --replicas,
which takes its lease with its first request). Every event counted was durably accepted (committed
before the answer). It prints one JSON object: events/s and the p50/p99
request latency overall and per tenth of the events (last_over_first is the
last tenth's rate over the first's), the process's RSS (server and clients)
at the start, after each tenth and at the end, and the learner's queue of
open label requests at the end; then it deletes the store.`,
		Args: cobra.NoArgs,
		RunE: runServeBench,
	}
	bf, b := bench.Flags(), &serveBenchOpts
	bf.IntVar(&b.Spec.Events, "events", 100_000, "events to send")
	bf.IntVar(&b.Spec.Batch, "batch", 1000, "events per request (1: single-event ingest)")
	bf.IntVar(&b.Spec.Workers, "workers", 2, "concurrent clients")
	bf.IntVar(&b.Spec.Dim, "dim", 16, "event dimension")
	bf.Uint64Var(&b.Spec.Seed, "seed", 1, "seed of the synthetic events (the learner's noise stays secure)")
	bf.StringVar(&b.LearnerConfig, "learner-config", "", `the learner's stream settings, as "config" of POST /v1/learners (JSON; default: the defaults)`)
	bf.IntVar(&b.Spec.MaxOpen, "max-open", 0, "the learner's max_open_requests (0: the default)")
	bf.StringVar(&b.Spec.Store, "store", "", "a postgres:// URL of an empty database to bench on, instead of a scratch store file")
	bf.IntVar(&b.Spec.Replicas, "replicas", 1, "replicas serving the postgres:// --store; with one learner requests alternate between them")
	bf.IntVar(&b.Spec.Learners, "learners", 1, "spread the events over this many learners; learner j's requests go to replica j mod --replicas")
	serveCmd.AddCommand(token, bench)
	rootCmd.AddCommand(serveCmd)
}

func runServe(cmd *cobra.Command, _ []string) error {
	f, o := cmd.Flags(), &serveOpts
	var c service.Config
	if o.Config != "" {
		var err error
		if c, err = service.LoadConfig(o.Config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
	}
	switch dsn := os.Getenv(storeDSNEnv); {
	case f.Changed("store"):
		c.Store = o.Store
	case dsn != "":
		c.Store = dsn
	case c.Store == "":
		c.Store = o.Store
	}
	if f.Changed("listen") || c.Listen == "" {
		c.Listen = o.Listen
	}
	if f.Changed("advertise") {
		c.Advertise = o.Advertise
	}
	if f.Changed("tls-cert") {
		c.TLSCert = o.TLSCert
	}
	if f.Changed("tls-key") {
		c.TLSKey = o.TLSKey
	}
	for _, l := range o.Learners {
		raw, err := service.LearnerFlag(l)
		if err != nil {
			return fmt.Errorf("--learner %q: %w", l, err)
		}
		c.Learners = append(c.Learners, raw)
	}
	if err := kafkaFlags(o, &c); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
	return service.Run(ctx, c, cmd.OutOrStdout(), log, nil)
}

// kafkaPasswordEnv holds the Kafka SASL password: a flag's value would
// show in the process list.
const kafkaPasswordEnv = "DPAL_KAFKA_SASL_PASSWORD"

// kafkaFlags sets c.Kafka from the --kafka-* flags, if any, and the SASL
// password from $DPAL_KAFKA_SASL_PASSWORD unless the config file holds one.
func kafkaFlags(o *serveOptions, c *service.Config) error {
	brokers, topic, learner, group := o.KafkaBrokers, o.KafkaTopic, o.KafkaLearner, o.KafkaGroup
	conn := o.KafkaTLS || o.KafkaTLSCA != "" || o.KafkaSASL != "" || o.KafkaSASLUser != ""
	switch {
	case len(brokers) == 0 && topic == "" && learner == "" && group == "" && !conn:
	case len(brokers) == 0 || topic == "" || learner == "":
		return errors.New("--kafka-brokers, --kafka-topic and --kafka-learner go together (and --kafka-group, --kafka-tls, --kafka-tls-ca, --kafka-sasl and --kafka-sasl-user go with them)")
	default:
		c.Kafka = &service.KafkaConfig{Brokers: brokers, Topic: topic, Learner: learner, Group: group,
			TLS: o.KafkaTLS, TLSCA: o.KafkaTLSCA, SASLMechanism: o.KafkaSASL, SASLUser: o.KafkaSASLUser}
	}
	if c.Kafka != nil && c.Kafka.SASLPassword == "" {
		c.Kafka.SASLPassword = os.Getenv(kafkaPasswordEnv)
	}
	return nil
}

// storeDSNEnv names the store when --store is not given: a postgres://
// URL's password in a flag would show in the process list.
const storeDSNEnv = "DPAL_STORE_DSN"

// openTokenStore opens --store path (else $DPAL_STORE_DSN), which must
// exist: a token for a store that a typo would create is useless. A
// PostgreSQL store is shared: the running replicas see the token at once.
func openTokenStore(cmd *cobra.Command, path string) (*service.Store, error) {
	if dsn := os.Getenv(storeDSNEnv); dsn != "" && !cmd.Flags().Changed("store") {
		path = dsn
	}
	if ledger.IsURL(path) {
		st, err := service.OpenStore(path)
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err)
		}
		return st, nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	st, err := service.OpenStore(path)
	if errors.Is(err, service.ErrLocked) {
		return nil, fmt.Errorf("--store: %w (stop the server first)", err)
	}
	return st, err
}

func runTokenCreate(cmd *cobra.Command, _ []string) error {
	role, err := service.ParseRole(tokenCreateOpts.Role)
	if err != nil {
		return fmt.Errorf("--role: %w", err)
	}
	st, err := openTokenStore(cmd, tokenCreateOpts.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	tok, err := st.CreateToken(role)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), tok)
	fmt.Fprintf(cmd.ErrOrStderr(), "dpal serve token: %s token, id %s (keep the token secret; revoke it by its id)\n", role, service.TokenID(tok))
	return nil
}

func runTokenRevoke(cmd *cobra.Command, args []string) error {
	st, err := openTokenStore(cmd, tokenRevokeOpts.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.RevokeToken(args[0])
}

func runServeBench(cmd *cobra.Command, _ []string) error {
	c := serveBenchOpts.Spec
	if cfg := serveBenchOpts.LearnerConfig; cfg != "" {
		c.LearnerConfig = json.RawMessage(cfg)
	}
	dir, err := os.MkdirTemp("", "dpal-serve-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	res, err := service.SelfLoad(cmd.Context(), dir, c)
	if err != nil {
		return err
	}
	return printJSON(cmd.OutOrStdout(), res)
}
