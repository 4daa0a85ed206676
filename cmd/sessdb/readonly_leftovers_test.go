package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/sample"
	"sessdb/store"
)

// leftoverRoot is a copy of the sample holding every state the store, a
// killed command or an operator can leave under a root, beside the
// damaged sample's: a reap killed after its rename (a .reaped dir whose
// last entry is reaping), a reaped dir a promotion landed in, a
// quarantine dir, a schema 1 meta.db (an older sessdb's, which a writer's
// open upgrades), a meta.db with a second name outside the root, a
// moved-aside meta.db, stale and young temps of both kinds, an empty key
// dir, and a key whose transcript, and one whose meta.db, is a FIFO.
func leftoverRoot(t *testing.T) string {
	t.Helper()
	root := copySample(t)
	at := sample.Time.Add(time.Hour)

	// A reap killed between its rename and its removals.
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterRename {
			return syscall.EIO
		}
		return nil
	})
	s, err := store.New(root, store.Options{Now: func() time.Time { return at }, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	s.Reap(false) // the key fails at the fault, named in the result
	faults.Set(nil)
	if m, _ := filepath.Glob(filepath.Join(root, store.ReapedPrefix+sample.Expired+"-*")); len(m) != 1 {
		t.Fatalf("no reaped dir of the expired key: %v", m)
	}

	// The damaged sample's states (damageSample's, but for the expired
	// key, reaped above: another key's meta.db emptied).
	pendingPromotion(t, root, sample.Resumable)
	p := filepath.Join(root, sample.LongChain, "current.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "feedback 5", "feedback 6", 1)), 0o600)
	emptied := filepath.Join(root, store.Key("github", "acme/widget", "pi/issue-emptied"))
	copyDir(t, filepath.Join(root, sample.Resumable), emptied)
	os.Truncate(filepath.Join(emptied, "meta.db"), 0)
	os.Symlink("/srv/elsewhere", filepath.Join(root, store.Key("github", "acme/widget", "pi/issue-99")))

	landed := store.Key("github", "acme/widget", "pi/issue-landed")
	copyDir(t, filepath.Join(root, sample.Mixed), filepath.Join(root, store.ReapedPrefix+landed+"-0123456789abcdef"))
	if code, out, errs := runCLI(t, "check", "--repair", "--quarantine", sample.Mixed, root); code != exitOK {
		t.Fatalf("quarantine: exit %d\n%s%s", code, out, errs)
	}

	// A schema 1 meta.db, as an older sessdb wrote it.
	bdb, err := bolt.Open(filepath.Join(root, sample.LongChain, "meta.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{1}) }); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	if err := os.Link(filepath.Join(root, sample.LongChain, "meta.db"), filepath.Join(t.TempDir(), "backup-meta.db")); err != nil {
		t.Fatal(err)
	}

	res := filepath.Join(root, sample.Resumable)
	b, _ = os.ReadFile(filepath.Join(res, "meta.db"))
	os.WriteFile(filepath.Join(res, "meta.db.damaged-20261129T080000Z"), b, 0o600)
	old := sample.Time.Add(-3 * time.Hour)
	for _, name := range []string{".meta.db.tmp-00c0ffee00c0ffee", ".current.jsonl.tmp-0badc0de0badc0de"} {
		os.WriteFile(filepath.Join(res, name), []byte("debris"), 0o600)
		os.Chtimes(filepath.Join(res, name), old, old)
	}
	os.WriteFile(filepath.Join(res, ".current.jsonl.tmp-00000000feedface"), []byte("young"), 0o600)

	os.Mkdir(filepath.Join(root, store.Key("github", "acme/widget", "pi/issue-empty")), 0o700)
	for _, name := range []string{"current.jsonl", "meta.db"} {
		kd := filepath.Join(root, store.Key("github", "acme/widget", "pi/fifo-"+name))
		os.Mkdir(kd, 0o700)
		if err := syscall.Mkfifo(filepath.Join(kd, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// copyDir copies the regular files of the directory from into a new
// directory to, keeping their mtimes.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Mkdir(to, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := e.Info()
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o600)
		os.Chtimes(filepath.Join(to, e.Name()), fi.ModTime(), fi.ModTime())
	}
}

// dump, stats, check without --repair and reap --dry-run change nothing
// on a root holding every leftover the store and its commands can leave
// (the read-only tests before ran on the sample and its damaged copy
// only), and none of them waits on a FIFO.
func TestReadOnlyCommandsLeaveEveryLeftoverAsItIs(t *testing.T) {
	atSampleTime(t)
	root := leftoverRoot(t)
	before := fingerprint(t, root)
	for _, args := range [][]string{
		{"dump"}, {"dump", "--json", "--verify", "--history", "64"}, {"dump", "--verify", "--wide"},
		{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "local"},
		{"dump", "--key", sample.LongChain, "--verify", "--history", "3"},
		{"stats"}, {"stats", "--json"}, {"stats", "--prometheus", "--since", "10000h"},
		{"check"}, {"check", "--json"},
		{"reap", "--dry-run"}, {"reap", "--dry-run", "--ttl-days", "1", "--json"},
	} {
		done := make(chan struct{})
		var code int
		var out, errs string
		go func() {
			defer close(done)
			code, out, errs = runCLI(t, append(args, root)...)
		}()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%v has not ended after 60 s", args)
		}
		if out == "" || code != exitOK && code != exitFault && code != exitIssues {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		if after := fingerprint(t, root); after != before {
			t.Fatalf("%v changed the root:\n%s", args, fingerprintDiff(before, after))
		}
	}
}

// fingerprintDiff is the lines of two fingerprints that differ.
func fingerprintDiff(before, after string) string {
	was := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		was[l] = true
	}
	is := map[string]bool{}
	var b strings.Builder
	for _, l := range strings.Split(after, "\n") {
		is[l] = true
		if !was[l] {
			b.WriteString("now:  " + l + "\n")
		}
	}
	for _, l := range strings.Split(before, "\n") {
		if !is[l] {
			b.WriteString("was:  " + l + "\n")
		}
	}
	return b.String()
}
