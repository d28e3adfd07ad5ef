// Package pool owns pool-based differentially private active learning
// (Schwethelm et al. 2024, "Differentially Private Active Learning:
// Balancing Effective Data Selection and Privacy"): the data-independent
// planner that fixes, before any data is touched, every training phase's
// steps, noise multiplier and per-group Poisson sampling rates (naive DP-AL,
// Fig. 2; step amplification, Fig. 5 and §3.3; the alternatives of App.
// D.1), the joint accounting of selection and training (§3.5, eq. 6), the
// acquisition functions and their private top-k selection (App. C:
// Acquisition, Acquire, on dp/mech's NoisyTopK), the select-and-charge step
// (Select, through dp/ledger), and the loop (Run) that trains with package dpsgd
// per the plan, selects through Select, asks a label Oracle and reports
// every record's loss as the ledger holds it.
//
// # Groups
//
// The records that are labelled together form a group: "initial" (the
// random labelled start D_1), then "query-1" … "query-T", the records chosen
// by selection phase j. Every record of a group has taken part in the same
// mechanisms with the same parameters, so the group's loss is each of its
// records' loss. Records never selected pay only for the selections that
// scored them: ε_Sel in total.
//
// # Neighbouring relation
//
// Add/remove one record of the pool (unlabelled or labelled). The planner
// reads only public quantities (budget, batch size, epochs, group sizes), so
// the plan itself costs nothing.
package pool
