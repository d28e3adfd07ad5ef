package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// term is one privacy flag of the vocabulary: its one meaning, and the
// commands that have it. README.md prints this table (vocabularyMarkdown)
// and TestFlagVocabulary checks every command's flags against it, so the
// table, the README and the commands cannot drift apart.
type term struct {
	Flag     string
	Meaning  string
	Commands []string
}

// vocabulary is the table. A flag whose name speaks of ε, δ or a budget
// must be here for every command that has it, or be a deprecated
// spelling of one that is (deprecate), or be in notPrivacy.
var vocabulary = []term{
	{"--epsilon", "the privacy target ε of what the command releases: of the whole run (train, ocp, demo's DP-SGD run), of every pool record in total (pool run, pool plan), of the whole search, which stops before spending more (search), or the ε the computed setting meets (account noise, account sample-rate, kanon account)",
		[]string{"train", "pool run", "pool plan", "ocp", "search", "demo", "account noise", "account sample-rate", "kanon account"}},
	{"--delta", "the δ of that target (and of the ledger's charges); ledger show: the δ at which each group's ε is reported; repro: the δ of every run",
		[]string{"train", "pool run", "pool plan", "ocp", "stream", "demo", "account epsilon", "account noise", "account sample-rate", "kanon run", "kanon account", "ledger show", "repro dpsgd", "repro kanon"}},
	{"--epsilons", "the targets ε swept, comma-separated",
		[]string{"repro dpsgd"}},
	{"--budget-epsilon", "the ledger's ε cap: of a new --ledger file (default: what the run charges; demo: its in-memory ledger); on an existing file a lower value holds for this run, a higher one is refused",
		[]string{"train", "pool run", "stream", "ocp", "search", "kanon run", "demo"}},
	{"--budget-delta", "the ledger's δ cap, as --budget-epsilon",
		[]string{"train", "pool run", "stream", "ocp", "search", "kanon run"}},
	{"--epsilon-select", "the ε of selection: of all selections together, a part of --epsilon (pool); of one selection decision, eps_s (stream)",
		[]string{"pool run", "pool plan", "stream", "repro stream"}},
	{"--epsilon-grad", "the ε of one mini-batch update, eps_g",
		[]string{"stream", "repro stream"}},
	{"--epsilon-answer", "the ε of one answer of the search",
		[]string{"search"}},
	{"--epsilon-noise", "ε' of the discrete Laplace noise of the noisy threshold (--threshold dp)",
		[]string{"kanon run"}},
	{"--epsilon-count, --epsilon-rr", "the ε of the demo's Laplace count and randomized-response bit",
		[]string{"demo"}},
}

// notPrivacy are flags whose names speak of δ or a budget but that are
// not privacy parameters, with what they are.
var notPrivacy = map[string]string{
	"halt-delta":    "search: a halting threshold on the posterior's log-odds (eq. 25)",
	"labels-budget": "kanon: the number of labels asked",
	"label-budget":  "stream: the number of labels asked",
}

// deprecatedSpellings are the flags renamed by the vocabulary, kept for
// one release: command → old → new.
var deprecatedSpellings = map[string]map[string]string{
	"stream":       {"budget": "budget-epsilon", "eps-select": "epsilon-select", "eps-grad": "epsilon-grad"},
	"repro stream": {"eps-select": "epsilon-select", "eps-grad": "epsilon-grad"},
	"ocp":          {"budget": "budget-epsilon"},
	"demo":         {"budget": "budget-epsilon", "eps-count": "epsilon-count", "eps-rr": "epsilon-rr"},
	"kanon run":    {"noise-epsilon": "epsilon-noise"},
	// search: --budget was the whole search's ε (now --epsilon), and
	// --epsilon one answer's (now --epsilon-answer): searchEpsilons reads
	// the old spellings.
	"search": {"budget": "epsilon"},
}

// vocabularyMarkdown is the README's table of the flag vocabulary.
func vocabularyMarkdown() string {
	var b strings.Builder
	b.WriteString("| flag | meaning | commands |\n|---|---|---|\n")
	for _, t := range vocabulary {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", strings.ReplaceAll(t.Flag, ", ", "`, `"), t.Meaning, strings.Join(t.Commands, ", "))
	}
	b.WriteString("\nOld spellings, which still work for one release with a warning on stderr: ")
	var olds []string
	for _, cmd := range slices.Sorted(maps.Keys(deprecatedSpellings)) {
		for _, old := range slices.Sorted(maps.Keys(deprecatedSpellings[cmd])) {
			olds = append(olds, fmt.Sprintf("%s `--%s` (now `--%s`)", cmd, old, deprecatedSpellings[cmd][old]))
		}
	}
	b.WriteString(strings.Join(olds, "; "))
	b.WriteString("; search `--epsilon` without `--epsilon-answer` is still read as one answer's ε.\n")
	return b.String()
}
