package migrate

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"sessdb/store"
)

// testNow is the clock of every test, and of the children (runChild).
var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const testPi = "0.80.7"

// transcriptBytes is a small pi transcript whose header was created at
// created.
func transcriptBytes(created time.Time) string {
	return fmt.Sprintf(`{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":%q,"cwd":"/workspace"}`+"\n", created.UTC().Format("2006-01-02T15:04:05.000Z")) +
		`{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-11-01T11:00:00.000Z","message":{"role":"user","content":"hello"}}` + "\n"
}

// An ent is one entry of a key dir as a test lays it out.
type ent struct {
	kind  byte   // 'f' file, 'l' symlink, 'p' FIFO, 'd' directory, 0 = absent
	data  string // content, or a link's target
	mtime time.Time
}

func file(s string) ent  { return ent{kind: 'f', data: s} }
func link(to string) ent { return ent{kind: 'l', data: to} }

var (
	fifo   = ent{kind: 'p'}
	dir    = ent{kind: 'd'}
	absent = ent{}
)

// A corpusKey is a legacy key dir and what migration must make of it.
type corpusKey struct {
	name  string
	files map[string]ent // overrides of the base layout; absent deletes
	// want is fmtValues of the migrated db ("" when the key is not migrated).
	want   string
	action Action
	// back overrides the sidecar files expected after ToDB then ToLegacy
	// (absent = no file); unlisted sidecars read back as their base bytes.
	back map[string]ent
	// setup runs after the files are laid out (a db, for instance).
	setup func(t testing.TB, dir string)
	// unsettled marks a crash state of the store itself (a promotion
	// pending): the rollback settles it, so its verdict may change.
	unsettled bool
}

func (c corpusKey) key() string { return store.Key("test", "corpus", c.name) }

// base is the plain legacy key dir every corpus key starts from.
func base() map[string]ent {
	return map[string]ent{
		"current.jsonl": {kind: 'f', data: transcriptBytes(testNow.Add(-24 * time.Hour)), mtime: testNow.Add(-time.Hour)},
		"pi-version":    file(testPi),
		"venue":         file("local"),
		"resume-chain":  file("1"),
		"context":       file("1000 200000 anthropic/claude-x"),
	}
}

const plainWant = `t venue="local" pi="0.80.7" chain=1 ctx=1000/200000/"anthropic/claude-x"`

func want(changes ...string) string {
	w := plainWant
	for _, c := range changes {
		field := c[:strings.IndexAny(c, "=")+1]
		i := strings.Index(w, field)
		j := strings.Index(w[i:], " ")
		if j < 0 {
			j = len(w) - i
		}
		w = w[:i] + c + w[i+j:]
	}
	return w
}

// corpus is every odd legacy value the issue lists, and more.
func corpus() []corpusKey {
	pend := file("(pending)")
	return []corpusKey{
		{name: "plain", want: plainWant},
		{name: "venue podman with newline", files: map[string]ent{"venue": file("podman\n")}, want: want(`venue="podman"`), back: map[string]ent{"venue": file("podman")}},
		{name: "venue absent", files: map[string]ent{"venue": absent}, want: want("venue=-")},
		{name: "venue empty", files: map[string]ent{"venue": file("")}, want: want(`venue="(pending)"`), back: map[string]ent{"venue": pend}},
		{name: "venue whitespace", files: map[string]ent{"venue": file(" \t\n")}, want: want(`venue=""`), back: map[string]ent{"venue": file("")}},
		{name: "venue link", files: map[string]ent{"venue": link("../../target-local")}, want: want(`venue="(pending)"`), back: map[string]ent{"venue": pend}},
		{name: "venue dangling link", files: map[string]ent{"venue": link("nowhere")}, want: want(`venue="(pending)"`), back: map[string]ent{"venue": pend}},
		{name: "venue fifo", files: map[string]ent{"venue": fifo}, want: want(`venue="(pending)"`), back: map[string]ent{"venue": pend}},
		{name: "venue oversized", files: map[string]ent{"venue": file("local" + strings.Repeat(" ", 5000))}, want: want(`venue="(pending)"`), back: map[string]ent{"venue": pend}},
		{name: "venue pending", files: map[string]ent{"venue": pend}, want: want(`venue="(pending)"`)},
		{name: "venue empty dir", files: map[string]ent{"venue": dir}, want: want(`venue="(pending)"`), back: map[string]ent{"venue": pend}},
		{name: "pi empty", files: map[string]ent{"pi-version": file("")}, want: want(`pi=""`)},
		{name: "pi absent", files: map[string]ent{"pi-version": absent}, want: want(`pi=""`), back: map[string]ent{"pi-version": file("")}},
		{name: "pi padded", files: map[string]ent{"pi-version": file(" 0.80.7 \n")}, want: plainWant, back: map[string]ent{"pi-version": file(testPi)}},
		{name: "pi link", files: map[string]ent{"pi-version": link("../../target-pi")}, want: want(`pi=""`), back: map[string]ent{"pi-version": file("")}},
		{name: "pi other", files: map[string]ent{"pi-version": file("0.79.0")}, want: want(`pi="0.79.0"`)},
		{name: "pi invalid utf8", files: map[string]ent{"pi-version": file("0.80.7\xff")}, want: want("pi=" + strconv.Quote("0.80.7\ufffd")), back: map[string]ent{"pi-version": file("0.80.7\ufffd")}},
		{name: "chain 007", files: map[string]ent{"resume-chain": file("007")}, want: want("chain=0"), back: map[string]ent{"resume-chain": file("0")}},
		{name: "chain spaced", files: map[string]ent{"resume-chain": file(" 3 ")}, want: want("chain=3"), back: map[string]ent{"resume-chain": file("3")}},
		{name: "chain negative", files: map[string]ent{"resume-chain": file("-4")}, want: want("chain=0"), back: map[string]ent{"resume-chain": file("0")}},
		{name: "chain fraction", files: map[string]ent{"resume-chain": file("3.5")}, want: want("chain=0"), back: map[string]ent{"resume-chain": file("0")}},
		{name: "chain text", files: map[string]ent{"resume-chain": file("abc")}, want: want("chain=0"), back: map[string]ent{"resume-chain": file("0")}},
		{name: "chain empty", files: map[string]ent{"resume-chain": file("")}, want: want("chain=0"), back: map[string]ent{"resume-chain": file("0")}},
		{name: "chain link", files: map[string]ent{"resume-chain": link("../../target-chain")}, want: want("chain=0"), back: map[string]ent{"resume-chain": file("0")}},
		{name: "chain at bound", files: map[string]ent{"resume-chain": file("3")}, want: want("chain=3")},
		{name: "chain absent", files: map[string]ent{"resume-chain": absent}, want: want("chain=-")},
		{name: "chain huge", files: map[string]ent{"resume-chain": file("100000000000000000000")}, want: want("chain=18446744073709551615")},
		{name: "context text", files: map[string]ent{"context": file("abc")}, want: want("ctx=-"), back: map[string]ent{"context": absent}},
		{name: "context one number", files: map[string]ent{"context": file("100")}, want: want("ctx=-"), back: map[string]ent{"context": absent}},
		{name: "context zero window", files: map[string]ent{"context": file("100 0")}, want: want("ctx=-"), back: map[string]ent{"context": absent}},
		{name: "context negative", files: map[string]ent{"context": file("-1 200000")}, want: want("ctx=-"), back: map[string]ent{"context": absent}},
		{name: "context decimal", files: map[string]ent{"context": file("1.5 200000")}, want: want("ctx=-"), back: map[string]ent{"context": absent}},
		{name: "context link", files: map[string]ent{"context": link("../../target-context")}, want: want("ctx=-"), back: map[string]ent{"context": absent}},
		{name: "context oversized", files: map[string]ent{"context": file("1 2" + strings.Repeat(" ", 5000))}, want: want("ctx=-"), back: map[string]ent{"context": absent}},
		{name: "context extra fields", files: map[string]ent{"context": file("100 200000 anthropic/claude-x extra")}, want: want(`ctx=100/200000/"anthropic/claude-x"`), back: map[string]ent{"context": file("100 200000 anthropic/claude-x")}},
		{name: "context tabs and case", files: map[string]ent{"context": file("190000\t200000  Anthropic/Claude-X\n")}, want: want(`ctx=190000/200000/"Anthropic/Claude-X"`), back: map[string]ent{"context": file("190000 200000 Anthropic/Claude-X")}},
		{name: "context full unstamped", files: map[string]ent{"context": file("190000 200000")}, want: want(`ctx=190000/200000/""`)},
		{name: "context foreign model", files: map[string]ent{"context": file("190000 200000 openai/gpt-5")}, want: want(`ctx=190000/200000/"openai/gpt-5"`)},
		{name: "context huge", files: map[string]ent{"context": file("100000000000000000000 100000000000000000000")}, want: want(`ctx=9223372036854775807/9223372036854775807/""`)},
		{name: "lock stale", files: map[string]ent{"lock": {kind: 'f', mtime: testNow.Add(-2 * time.Hour)}}, want: plainWant, back: map[string]ent{"lock": absent}},
		{name: "lock stale dangling link", files: map[string]ent{"lock": {kind: 'l', data: "nowhere", mtime: testNow.Add(-2 * time.Hour)}}, want: plainWant, back: map[string]ent{"lock": absent}},
		{name: "lock fresh", files: map[string]ent{"lock": {kind: 'f', mtime: testNow.Add(-5 * time.Minute)}}, action: Locked},
		{name: "temps", files: map[string]ent{"current.jsonl.4242.0.incoming": file("half"), "current.jsonl.incoming": file("x"), "venue.incoming": file("podman")}, want: plainWant,
			back: map[string]ent{"current.jsonl.4242.0.incoming": absent, "current.jsonl.incoming": absent, "venue.incoming": absent}},
		{name: "transcript link", files: map[string]ent{"current.jsonl": link("../../target-transcript")}, want: "-" + plainWant[1:]},
		{name: "transcript fifo", files: map[string]ent{"current.jsonl": fifo}, want: "-" + plainWant[1:]},
		{name: "transcript absent", files: map[string]ent{"current.jsonl": absent}, want: "-" + plainWant[1:]},
		{name: "transcript empty", files: map[string]ent{"current.jsonl": {kind: 'f', mtime: testNow.Add(-time.Hour)}}, want: plainWant},
		{name: "transcript expired", files: map[string]ent{"current.jsonl": {kind: 'f', data: transcriptBytes(testNow.Add(-40 * 24 * time.Hour)), mtime: testNow.Add(-30 * 24 * time.Hour)}}, want: plainWant},
		{name: "transcript unparseable", files: map[string]ent{"current.jsonl": {kind: 'f', data: "not json\n", mtime: testNow.Add(-time.Hour)}}, want: plainWant},
		{name: "transcript old header", files: map[string]ent{"current.jsonl": {kind: 'f', data: transcriptBytes(testNow.Add(-60 * 24 * time.Hour)), mtime: testNow.Add(-time.Hour)}}, want: plainWant},
		{name: "transcript large", files: map[string]ent{"current.jsonl": {kind: 'f', data: transcriptBytes(testNow) + strings.Repeat("x", 10000) + "\n", mtime: testNow.Add(-time.Hour)}}, want: plainWant},
		{name: "only a transcript", files: map[string]ent{"pi-version": absent, "venue": absent, "resume-chain": absent, "context": absent},
			want: `t venue=- pi="" chain=- ctx=-`, back: map[string]ent{"pi-version": file("")}},
		{name: "interrupted before commit", want: plainWant, setup: emptyDB},
		{name: "mixed", files: map[string]ent{"venue": file("podman"), "lock": {kind: 'f', mtime: testNow.Add(-3 * time.Hour)}}, action: Already, setup: promotedDB("local", 5, testNow.Add(-2*time.Hour)),
			back: map[string]ent{"venue": file("local"), "resume-chain": file("5"), "lock": absent}},
		{name: "migrated", files: map[string]ent{"pi-version": absent, "venue": absent, "resume-chain": absent, "context": absent}, action: Already, setup: promotedDB("podman", 2, testNow.Add(-2*time.Hour)),
			back: map[string]ent{"pi-version": file(testPi), "venue": file("podman"), "resume-chain": file("2"), "context": file("1000 200000 anthropic/claude-x")}},
		{name: "pending promotion", action: Already, setup: pendingDB, unsettled: true, back: map[string]ent{"resume-chain": file("2")}},
		// The db's clock says expired, the transcript's mtime does not: the
		// rollback must carry the db's clock into the mtime.
		{name: "migrated long ago", files: map[string]ent{"pi-version": absent, "venue": absent, "resume-chain": absent, "context": absent}, action: Already, setup: promotedDB("local", 1, testNow.Add(-20*24*time.Hour)),
			back: map[string]ent{"pi-version": file(testPi), "venue": file("local"), "resume-chain": file("1"), "context": file("1000 200000 anthropic/claude-x")}},
	}
}
