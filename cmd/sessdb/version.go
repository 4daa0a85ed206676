package main

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"sessdb/db"
)

var cmdVersion = &command{
	name:  "version",
	usage: "version [--json]",
	short: "print the version, VCS revision, Go version and the meta.db schemas read and written",
	long: `
Prints the module version and the VCS revision the binary was built from
(runtime/debug.ReadBuildInfo: "(devel)" and no revision for a binary built
outside a module download or a VCS checkout, or with -buildvcs=false, as
GOFLAGS may set), the Go version, and the
meta.db schema versions: a binary reads every schema up to its own and
writes its own (the first write upgrades an older file); a file of a newer
schema is refused, and check reports it as meta-newer-schema: run the
version that wrote it. 'sessdb --version' is the same command.`,
	example: `  sessdb version
  sessdb --version --json | jq -r .revision`,
	exits: []int{exitOK, exitFault, exitUsage},
	bind:  bindVersion,
}

// buildInfo reads the binary's build information; tests fix it.
var buildInfo = debug.ReadBuildInfo

// oldestSchema is the first meta.db schema; every one from it up to
// db.SchemaVersion is read.
const oldestSchema = 1

// versionOutput is version --json (docs/json.md).
type versionOutput struct {
	Version      string     `json:"version"`       // the module version, "(devel)" when unknown
	Revision     *string    `json:"revision"`      // VCS revision; null when not stamped
	RevisionTime *time.Time `json:"revision_time"` // the revision's commit time
	Modified     *bool      `json:"modified"`      // the tree had uncommitted changes
	Go           string     `json:"go"`
	SchemaWrites uint64     `json:"schema_writes"`
	SchemaReads  []uint64   `json:"schema_reads"`
}

func bindVersion(fs *flag.FlagSet) func(*invocation) int {
	asJSON := fs.Bool("json", false, "print one JSON object (docs/json.md)")
	return func(inv *invocation) int {
		v := versionOutput{Version: "(devel)", Go: "unknown", SchemaWrites: db.SchemaVersion}
		for s := uint64(oldestSchema); s <= db.SchemaVersion; s++ {
			v.SchemaReads = append(v.SchemaReads, s)
		}
		if bi, ok := buildInfo(); ok {
			if bi.Main.Version != "" {
				v.Version = bi.Main.Version
			}
			v.Go = bi.GoVersion
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev := s.Value
					v.Revision = &rev
				case "vcs.time":
					if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
						t = t.UTC()
						v.RevisionTime = &t
					}
				case "vcs.modified":
					m := s.Value == "true"
					v.Modified = &m
				}
			}
		}
		if *asJSON {
			return writeJSON(inv, v)
		}
		// Go records no setting for -buildvcs=false, so an unstamped build
		// cannot say which of the two it was.
		rev := "unknown (not stamped: built outside a VCS checkout, or with -buildvcs=false)"
		if v.Revision != nil {
			rev = *v.Revision
			if v.RevisionTime != nil {
				rev += " (" + v.RevisionTime.Format(time.RFC3339) + ")"
			}
			if v.Modified != nil && *v.Modified {
				rev += ", modified"
			}
		}
		reads := make([]string, len(v.SchemaReads))
		for i, s := range v.SchemaReads {
			reads[i] = fmt.Sprint(s)
		}
		_, err := fmt.Fprintf(inv.stdout, "sessdb %s\nrevision  %s\ngo        %s\nmeta.db   schema %d written; schemas %s read\n",
			v.Version, printable(rev), v.Go, v.SchemaWrites, strings.Join(reads, ", "))
		if err != nil {
			return inv.rep.fault(fmt.Errorf("write: %w", err))
		}
		return exitOK
	}
}
