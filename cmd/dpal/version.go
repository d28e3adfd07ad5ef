package main

import (
	"runtime/debug"
	"strings"
)

// version is the module version, the commit and whether the tree was
// modified, read from the binary's build information: `go install
// …/cmd/dpal@v0.1.0` records v0.1.0, a build in a checkout records
// "(devel)" and the commit.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	parts := []string{info.Main.Version}
	if parts[0] == "" {
		parts[0] = "(devel)"
	}
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			parts = append(parts, "commit "+s.Value)
		case s.Key == "vcs.modified" && s.Value == "true":
			parts = append(parts, "modified")
		}
	}
	return strings.Join(parts, ", ") + ", " + info.GoVersion
}

func init() { rootCmd.Version = version() }
