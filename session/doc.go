// Package session owns how a private stream learner is driven: how it is
// started (Start) and resumed from a checkpoint (Resume), how an event is
// fed to it (Observe: a bad one is rejected, and changes nothing) and its
// releases taken (TakeReleases); a whole `dpal stream` run from its
// settings (Spec: the learner, new or resumed from a state file, and its
// ledger; StreamDataset and StreamEvents, and the Summary they report);
// the loop that feeds it a dataset with a simulated oracle; the event
// protocol of event mode (the meta, request, release and rejected lines,
// and the rule that a rejected event says only that it was rejected); the
// checks that keep a resumed learner from replaying records its ledger has
// already charged (the dataset order; in event mode the inputs consumed,
// skipped by offset on a resume); event mode's checkpoints (no line leaves
// before the state that accounts for it is saved); and the state files
// themselves: written atomically and sealed with an HMAC-SHA256.
// docs/event-mode.md gives the rules and their threat model. The CLI
// (`dpal stream`, which only maps its flags to a Spec and prints what the
// run returns), the reproductions (`dpal repro stream`) and the service
// (Start, Resume, Observe, TakeReleases) all run learners through it, so
// these rules live in one place.
//
// It sits above active/stream and data, and below cmd/dpal, repro and
// service.
package session
