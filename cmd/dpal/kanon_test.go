package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKAnonAccountCLI(t *testing.T) {
	t.Run("delta-json", func(t *testing.T) {
		out, _, err := runCLI(t, "", "kanon", "account", "--beta", "0.6", "--k", "100", "--epsilon", "1.416290731874155", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Epsilon, Delta float64
			NMax           int `json:"n_max"`
			NMin           int `json:"n_min"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.NMax != 114 || r.NMin != 110 || !(r.Delta > 4.5e-13 && r.Delta < 4.52e-13) {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("inverses", func(t *testing.T) {
		for _, args := range [][]string{
			{"--beta", "0.1", "--k", "20"},
			{"--beta", "0.1", "--epsilon", "1", "--delta", "1e-8"},
			{"--k", "20", "--epsilon", "1"},
		} {
			out, _, err := runCLI(t, "", append([]string{"kanon", "account"}, args...)...)
			if err != nil || !strings.Contains(out, "-DP") {
				t.Errorf("%v: %q, %v", args, out, err)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		out, _, err := runCLI(t, "", "kanon", "account", "--table")
		if err != nil || strings.Count(out, "delta =") != 4 {
			t.Fatalf("%q, %v", out, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--beta", "0.1", "--k", "0", "--epsilon", "1"}, "k must be >= 1"},
			{[]string{"--beta", "1.5", "--k", "5", "--epsilon", "1"}, "0 < beta <= 1"},
			{[]string{"--beta", "0", "--k", "5"}, "0 < beta <= 1"},
			{[]string{"--beta", "1", "--k", "5", "--epsilon", "1"}, "no sampling"},
			{[]string{"--beta", "0.5", "--k", "5", "--epsilon", "0.5"}, "below -ln(1 - beta)"},
			{[]string{"--beta", "0.5"}, "give two of"},
			{[]string{"--beta", "0.5", "--k", "5", "--delta", "2"}, "0 < delta < 1"},
		} {
			_, _, err := runCLI(t, "", append([]string{"kanon", "account"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: error %v, want %q", c.args, err, c.want)
			}
		}
	})
}
