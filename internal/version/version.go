// Package version says which build of tickstack is running: its release (the chart's appVersion),
// git commit and build time, set at link time by the flags hack/ldflags.sh prints (`make build` and
// hack/images/build.sh use them), else taken from the Go toolchain's VCS stamp when it made one.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time (hack/ldflags.sh).
var (
	// Version is the release; "dev" when the build did not set it.
	Version = "dev"
	// Commit is the git commit the binary was built from.
	Commit = ""
	// Modified is "true" when the tree had uncommitted changes.
	Modified = ""
	// Date is the build time, UTC, RFC 3339.
	Date = ""
)

// Info is a binary's version, as `tickstack version` prints it and the manager and agent log it.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"goVersion"`
}

// Get reads the release and the toolchain's VCS stamp.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date, Modified: Modified == "true", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok && i.Commit == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Date = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// String is one line: release, commit (with "+changes" for a tree with uncommitted changes), build
// time and Go version.
func (i Info) String() string {
	commit := i.Commit
	if i.Modified {
		commit += "+changes"
	}
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, commit, i.Date, i.GoVersion)
}

// KeysAndValues are the fields for a structured log line.
func (i Info) KeysAndValues() []any {
	return []any{"version", i.Version, "commit", i.Commit, "modified", i.Modified, "date", i.Date, "go", i.GoVersion}
}
