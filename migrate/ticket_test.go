package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store"
)

// ticketJob is one job on key in its own job dir: its ticket, and the
// transcript it leaves staged (what it was handed, and a line).
type ticketJob struct {
	sess store.Session
	data []byte
}

var ticketJobSpec = store.Job{PiVersion: "0.58.3", Venue: "local", Model: "m"}

func resolveJob(t *testing.T, st *store.Store, key, line string) ticketJob {
	t.Helper()
	jobDir := t.TempDir()
	sess, err := st.Resolve(key, ticketJobSpec, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		data = []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	}
	data = append(data, `{"type":"message","line":"`+line+`"}`+"\n"...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return ticketJob{sess, data}
}

func (j ticketJob) promote(t *testing.T, st *store.Store) store.PromoteResult {
	t.Helper()
	res, err := st.Promote(j.sess, store.PromoteRequest{PiVersion: ticketJobSpec.PiVersion})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func migrateAll(t *testing.T, root string, back bool) {
	t.Helper()
	run := ToDB
	if back {
		run = ToLegacy
	}
	sum, err := run(root, Options{}, func(Report) error { return nil })
	if err != nil || !sum.Complete() {
		t.Fatalf("migrate (to legacy %v): %+v, %v", back, sum, err)
	}
}

// Tickets resolved before a rollback (migrate --to-legacy) and promoted
// after it, or after the migration back: the rollback drops the history
// and the migration back records the transcript as generation 1, so no
// base or promotion from before is recognised. Every such ticket is
// superseded, never promoted onto the key (a stale one over newer work, a
// retried one a second time), and the refusal leaves the rolled-back key
// as the legacy layout and the migration back read it. A ticket resolved
// on the legacy layout (through a link to the root) is based on the file,
// which the migration back keeps: it promotes (through the root's path).
func TestTicketsAcrossARollback(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	st, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("cd", 16)
	for _, line := range []string{"g1", "g2"} {
		if res := resolveJob(t, st, key, line).promote(t, st); !res.Promoted {
			t.Fatalf("promote %s: %+v", line, res)
		}
	}
	stale := resolveJob(t, st, key, "stale") // on gen 2, superseded by gen 3
	retried := resolveJob(t, st, key, "g3")
	if res := retried.promote(t, st); !res.Promoted || res.Gen != 3 {
		t.Fatalf("promote g3: %+v", res)
	}
	current := resolveJob(t, st, key, "current") // on gen 3, nothing newer
	held, err := os.ReadFile(filepath.Join(root, key, store.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}

	superseded := func(when string, jobs map[string]ticketJob) {
		t.Helper()
		for name, j := range jobs {
			if res := j.promote(t, st); res.Promoted || res.Reason != gates.Superseded {
				t.Errorf("%s, the %s ticket: %+v, want superseded", when, name, res)
			}
		}
		got, err := os.ReadFile(filepath.Join(root, key, store.TranscriptName))
		if err != nil || !bytes.Equal(got, held) {
			t.Fatalf("%s, a ticket from before changed the key's transcript (%v)", when, err)
		}
	}
	migrateAll(t, root, true)
	superseded("after the rollback", map[string]ticketJob{"stale": stale, "retried": retried, "current": current})
	// The refusals leave the key dir as they found it (docs/migration.md):
	// no meta.db, the one each promote made for the lock removed with it;
	// still the legacy layout to the store, and to the migration back.
	if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); !os.IsNotExist(err) {
		t.Fatalf("after the refusals the rolled-back key holds a meta.db (%v); want the legacy layout as it was", err)
	}
	sess, err := st.Resolve(key, ticketJobSpec, t.TempDir())
	if err != nil || !sess.Resume || sess.Bytes != int64(len(held)) {
		t.Fatalf("after the refusals the rolled-back key resolves %+v, %v; want it resumed", sess, err)
	}
	// Resolved through a link to the root, promoted through its path: the
	// same root.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	viaLink, err := store.New(link, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	legacy := resolveJob(t, viaLink, key, "legacy")
	if legacy.sess.Base.File == nil {
		t.Fatalf("a ticket on the legacy layout is based on %+v, want its file", legacy.sess.Base)
	}
	// The ticket names where the link leads (store.Store.ID), not the link.
	if real, err := filepath.EvalSymlinks(root); err != nil || legacy.sess.Root != real {
		t.Fatalf("the ticket names %q, want where the link leads, %q (%v)", legacy.sess.Root, real, err)
	}

	migrateAll(t, root, false)
	superseded("after the migration back", map[string]ticketJob{"stale": stale, "retried": retried, "current": current})
	if res := legacy.promote(t, st); !res.Promoted || res.Gen != 2 {
		t.Fatalf("the ticket resolved on the legacy layout, after the migration back: %+v, want gen 2", res)
	}
}

// A cold job resolved on a legacy key whose current.jsonl is empty is
// based on nothing; the migration records that file as gen 1 of 0 bytes,
// which still holds nothing, so the job promotes after it (before: it was
// superseded by that gen 1, which no job promoted).
func TestColdTicketAcrossTheMigrationOfAnEmptyTranscript(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	key := strings.Repeat("ef", 16)
	if err := os.MkdirAll(filepath.Join(root, key), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{store.TranscriptName: "", "venue": "local", "pi-version": "0.58.3"} {
		if err := os.WriteFile(filepath.Join(root, key, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cold := resolveJob(t, st, key, "cold")
	if cold.sess.Resume || cold.sess.Base != (store.Base{}) {
		t.Fatalf("the key with an empty transcript resolves %+v, want a cold start on nothing", cold.sess)
	}
	migrateAll(t, root, false)
	if res := cold.promote(t, st); !res.Promoted || res.Gen != 2 {
		t.Fatalf("the cold ticket after the migration: %+v, want promoted as gen 2", res)
	}
	got, err := os.ReadFile(filepath.Join(root, key, store.TranscriptName))
	if err != nil || !bytes.Equal(got, cold.data) {
		t.Fatalf("the key does not hold the cold job's transcript (%v)", err)
	}
}
