// Package service owns `dpal serve`: private stream learners (package
// active/stream, Ghassemi et al. 2016) run as a durable, authenticated
// HTTP service. Events arrive all day over HTTP, annotators answer the
// label requests when free, and a privacy officer reads at any moment what
// was released and what it cost.
//
// # Durability
//
// One store (Store) holds everything — a bbolt file for one process, or a
// PostgreSQL database that replicas share (kv.go, kvpg.go, replica.go:
// one owner per learner, and per pool project (projectlease.go), through
// a fenced lease; docs/serve.md, Deployment): each learner's settings, its
// privacy ledger (dp/ledger, one per learner, each with its own budget),
// a checkpoint of the learner's state without its open requests
// (stream.Learner.SaveStateWithoutPending), its label requests (with the
// record an annotator is shown) and an index of the open ones, submitted labels,
// releases, the idempotency keys of ingest batches, and the hashed API
// tokens. The learner charges its ledger (an fsync'd transaction of its
// own) before it draws noise, so every spend is on disk before the release
// it pays for exists; the release, the requests, the labels and the new
// checkpoint are then committed in one transaction before the HTTP response
// acknowledges anything. A restart restores each learner from its last
// checkpoint and the open requests' index (session.Resume, as `dpal stream
// --resume` does: stream.RestoreWithPending, which re-makes any charge the
// checkpoint implies that the ledger lacks), so
// nothing acknowledged is lost and an
// unacknowledged batch can be sent again: the learner has not seen it.
// A failed commit restores the learner from its checkpoint at once.
//
// # Privacy
//
// A learner's guarantee is the stream learner's: neighbouring streams
// differ in one event; each record pays ε_s for its selection decision and
// ε_g if its label entered an update (Theorems 1–3 of the paper). Each
// learner has its own ledger: a record fed to two learners pays in both,
// and an officer must add them. Replaying an event would feed a record
// twice while the ledger charges it once, so an ingest batch may carry an
// Idempotency-Key: a replayed key returns the stored answer and observes
// nothing. Label requests and releases are the learner's DP outputs; the
// raw record of a request is shown only to an annotator who claims it.
// The open requests are bounded (max_open_requests): a selection made
// while the queue is full is charged and masked, which is post-processing
// of published requests and of the annotators' schedule (docs/serve.md).
// A rejected event's public answer names its line and field, never its
// values (session.RejectedClass); the operator log gets no values either.
//
// # Roles
//
// Bearer tokens (stored as SHA-256 hashes, compared in constant time)
// carry one role: ingest (send events, see acceptance only), annotator
// (list, claim and label requests), officer (releases, models, budgets,
// the ledger, metrics) and admin (all of that, and creating learners).
// Tokens cross the network in the clear unless the server speaks HTTPS:
// Config.TLSCert and TLSKey (Options.TLS) make it serve TLS 1.2 or later
// only, and KafkaConfig's TLS and SASL settings protect the Kafka ingest.
package service
