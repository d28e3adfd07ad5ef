package service

import (
	"path/filepath"
	"testing"

	"github.com/dpal-dev/dpal/dp/ledger/pgstore/pgtest"
)

// testStoreURL, when set (by TestOnPostgres), gives each test's store: a
// database's URL instead of a file.
var testStoreURL func(testing.TB) string

// testStorePath is a test's store: a file called file in a temporary
// directory, or a new PostgreSQL database under TestOnPostgres.
func testStorePath(t testing.TB, file string) string {
	if testStoreURL != nil {
		return testStoreURL(t)
	}
	return filepath.Join(t.TempDir(), file)
}

// TestOnPostgres runs the service's tests of what the store keeps —
// tokens, learners and their checkpoints, requests, labels, releases,
// idempotency keys, Kafka offsets, ledgers, crashes, pool projects
// (under their leases, one replica) — again on a
// PostgreSQL store (a throw-away cluster, pgtest; a new database each).
func TestOnPostgres(t *testing.T) {
	pgtest.Start(t) // skips here, once, where PostgreSQL is missing
	testStoreURL = pgtest.Start
	defer func() { testStoreURL = nil }()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Flow", TestFlow},
		{"RestartResumesExactly", TestRestartResumesExactly},
		{"IdempotentIngest", TestIdempotentIngest},
		{"IdempotencyKeyReused", TestIdempotencyKeyReused},
		{"IdempotencyKeyRequired", TestIdempotencyKeyRequired},
		{"IdempotencyKeyConcurrent", TestIdempotencyKeyConcurrent},
		{"ConcurrentIngestAndLabels", TestConcurrentIngestAndLabels},
		{"Auth", TestAuth},
		{"Tokens", TestTokens},
		{"FirstStartPrintsAdminToken", TestFirstStartPrintsAdminToken},
		{"LabelConflicts", TestLabelConflicts},
		{"LabelNeedsClaim", TestLabelNeedsClaim},
		{"CheckpointIndependentOfQueue", TestCheckpointIndependentOfQueue},
		{"QueueBound", TestQueueBound},
		{"OpenIndexFromOldStore", TestOpenIndexFromOldStore},
		{"LearnersPaged", TestLearnersPaged},
		{"BudgetSeries", TestBudgetSeries},
		{"Search", TestSearch},
		{"KafkaExactlyOnce", TestKafkaExactlyOnce},
		{"Crash", TestCrash},
		{"ProjectFlow", TestProjectFlow},
		{"ProjectCloseCancelRestart", TestProjectCloseCancelRestart},
	} {
		t.Run(tc.name, tc.fn)
	}
}
