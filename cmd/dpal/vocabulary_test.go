package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// privacyName matches flag names that speak of ε, δ or a budget.
var privacyName = regexp.MustCompile(`(^|-)(eps|epsilon|epsilons|delta|budget)(-|$)`)

// commandsByName is every command under rootCmd by its path without
// "dpal ".
func commandsByName() map[string]*cobra.Command {
	out := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out[strings.TrimPrefix(c.CommandPath(), "dpal ")] = c
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(rootCmd)
	return out
}

// TestFlagVocabulary pins the flag vocabulary: every privacy flag of every
// command is in the table with that command (or a deprecated spelling of
// one, or not a privacy flag), and every row names flags the commands
// have.
func TestFlagVocabulary(t *testing.T) {
	cmds := commandsByName()
	listed := map[string]bool{} // "command --flag"
	for _, term := range vocabulary {
		for _, name := range term.Commands {
			for _, flag := range strings.Split(term.Flag, ", ") {
				listed[name+" "+flag] = true
			}
		}
	}
	for name, c := range cmds {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				switch {
				case !privacyName.MatchString(f.Name):
				case isDeprecated(f):
					if deprecatedSpellings[name][f.Name] == "" {
						t.Errorf("--%s is deprecated but not in deprecatedSpellings[%q]", f.Name, name)
					}
				case notPrivacy[f.Name] != "":
				case !listed[name+" --"+f.Name]:
					t.Errorf("--%s (%s) is not in the vocabulary for %q", f.Name, f.Usage, name)
				}
			})
		})
	}
	for key := range listed {
		i := strings.LastIndex(key, " --")
		name, flag := key[:i], key[i+3:]
		c, ok := cmds[name]
		switch {
		case !ok:
			t.Errorf("vocabulary names command %q, which does not exist", name)
		case c.Flags().Lookup(flag) == nil:
			t.Errorf("vocabulary lists --%s for %q, which has no such flag", flag, name)
		case isDeprecated(c.Flags().Lookup(flag)):
			t.Errorf("vocabulary lists --%s for %q, a deprecated spelling", flag, name)
		}
	}
	for name, olds := range deprecatedSpellings {
		for old, to := range olds {
			f := cmds[name].Flags()
			if f.Lookup(old) == nil || !isDeprecated(f.Lookup(old)) || f.Lookup(to) == nil {
				t.Errorf("%s: --%s should be a deprecated spelling of --%s", name, old, to)
			}
		}
	}
}

// TestREADMEVocabulary: the README prints the vocabulary table as it is.
func TestREADMEVocabulary(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := vocabularyMarkdown(); !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not hold the flag vocabulary as vocabularyMarkdown prints it; paste:\n%s", want)
	}
}

// TestDeprecatedSpellings: an old spelling still works, warns, and is
// refused beside its replacement with another value.
func TestDeprecatedSpellings(t *testing.T) {
	_, stderr, err := runCLI(t, "", "demo", "--budget", "3")
	if err != nil || !strings.Contains(stderr, "--budget is deprecated: use --budget-epsilon") {
		t.Errorf("demo --budget 3: %v, stderr %q", err, stderr)
	}
	if _, _, err := runCLI(t, "", "demo", "--budget", "3", "--budget-epsilon", "3"); err != nil {
		t.Errorf("same value twice: %v", err)
	}
	if _, _, err := runCLI(t, "", "demo", "--budget", "3", "--budget-epsilon", "2"); err == nil || !strings.Contains(err.Error(), "both given") {
		t.Errorf("different values: %v", err)
	}
}
