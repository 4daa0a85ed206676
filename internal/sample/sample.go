// Package sample names the keys of the small sessions root shipped in
// testdata/sessions, which the README's first command dumps: db keys that
// resume, have expired and have a long resume chain, a legacy key, a mixed
// one, and a name that is not a key. Its test builds the root (Build, in
// build_test.go: only the test needs it) through the store's own Promote,
// so the sample is what a real worker would leave behind, with a fixed
// clock so that a rebuild gives the same records but for their ticket ids,
// which each resolve draws at random.
//
// Rebuild it with the first command; the second follows because the
// golden file of dump --history shows the new ticket ids:
//
//	go test ./internal/sample -run TestSample -update
//	go test ./cmd/sessdb -run TestGolden -update
package sample

import (
	"time"

	"sessdb/store"
)

// Time is the sample's clock: the instant of its newest promotion.
var Time = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// The sample's keys, derived as a worker would.
var (
	Resumable = store.Key("github", "acme/widget", "pi/issue-42")          // promoted cold, then resumed: resumes
	Expired   = store.Key("github", "acme/widget", "feature/old-refactor") // promoted 30 days before Time: expired
	LongChain = store.Key("gitlab", "acme/api", "pi/issue-7")              // five runs in a row: a resume chain of 4
	Legacy    = store.Key("github", "acme/widget", "pi/issue-9")           // the legacy sidecar files only, no meta.db
	Mixed     = store.Key("forgejo", "acme/site", "main")                  // meta.db with legacy files left beside it
)
