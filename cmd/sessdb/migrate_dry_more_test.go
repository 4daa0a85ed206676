package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sessdb/store"
)

// sameFailure runs argv's dry run and its run through runAs and wants
// the run to fail key (exit 1) and the dry run to fail it alike, saying
// why (its output holding because; "" asks for no word).
func sameFailure(t *testing.T, runAs func(args ...string) (int, string, string), key, what, because string, argv ...string) {
	t.Helper()
	dryCode, dryOut, dryErrs := runAs(append([]string{argv[0], "--dry-run"}, argv[1:]...)...)
	code, out, errs := runAs(argv...)
	if code != exitFault || !strings.Contains(out, key+"  failed") {
		t.Fatalf("%s: the run: exit %d\n%s\n%s; want the key failed", what, code, out, errs)
	}
	if dryCode != code || !strings.Contains(dryOut, key+"  failed") || !strings.Contains(dryOut, because) {
		t.Errorf("%s: the dry run: exit %d\n%s\n%s\nthe run: exit %d\n%s\nwant the key failed alike, %q", what, dryCode, dryOut, dryErrs, code, out, because)
	}
}

// tmpRandom is the random part of a temp's name a run names in its error.
var tmpRandom = regexp.MustCompile(`(\.tmp-)[0-9a-f]{16}\b`)

// sameFailureInTheRunsWords is sameFailure where the run fails the key on
// a write its runner may not make (permission denied): the dry run says
// the run's words for it (its cause: the refused call, its path and its
// error), a temp's random part, which only the run draws, as
// "<random>", then, where it says one, why. Before, the fleet
// migrations' dry runs said the look's "access <dir>" where their runs
// said "mkdir <dir>/<key>" or "open <dir>/.tmp-<hex>".
func sameFailureInTheRunsWords(t *testing.T, runAs func(args ...string) (int, string, string), key, what string, argv ...string) {
	t.Helper()
	dryCode, dryOut, dryErrs := runAs(append([]string{argv[0], "--dry-run"}, argv[1:]...)...)
	code, out, errs := runAs(argv...)
	cause := runsCause(failedKeyLine(out, key))
	if code != exitFault || !strings.HasSuffix(cause, ": permission denied") {
		t.Fatalf("%s: the run: exit %d, %q\n%s\n%s; want the key failed, permission denied", what, code, cause, out, errs)
	}
	want := tmpRandom.ReplaceAllString(cause, "${1}<random>")
	if dline := failedKeyLine(dryOut, key); dryCode != code || !strings.Contains(dline+":", "; "+want+":") {
		t.Errorf("%s: the dry run: exit %d, %q\n%s\nwant exit %d and the run's words, %q", what, dryCode, dline, dryErrs, code, want)
	}
}

// --from etcd as the owner of the root and of the transcripts dir, where
// the run's writes are refused: a root it may not make a key dir in (one
// root made, 0755), and a key dir it may not write in (0500) whose
// meta.db the fleet has promoted past. Each run fails the key, nothing
// written, exit 1; each dry run fails it alike.
func TestTheOwnersFromEtcdDryRunsFailWhereTheRunsMayNotWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make dirs root owns, and nobody to run the migrations as")
	}
	key := store.Key("github", "nowrite", "from")
	f, tdir, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
	base := filepath.Dir(tdir)
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
	}
	// The fleet promotes the key past the root's meta.db.
	f.run(t, key, "job-2")
	giveToNobody(tdir)

	// A new root that root made: no key dir can be made in it.
	back := filepath.Join(base, "back")
	if err := os.Mkdir(back, 0o755); err != nil {
		t.Fatal(err)
	}
	sameFailureInTheRunsWords(t, runAs, key, "--from etcd into a root root made", "migrate", "--from", "etcd", back)
	if names, err := os.ReadDir(back); err != nil || len(names) != 0 {
		t.Errorf("the root root made holds %v (%v); want nothing written", names, err)
	}

	// The old root, whose key dir its owner may not write in.
	kd := filepath.Join(root, key)
	if err := os.Chmod(kd, 0o500); err != nil {
		t.Fatal(err)
	}
	sameFailureInTheRunsWords(t, runAs, key, "--from etcd into a key dir of mode 0500", "migrate", "--from", "etcd", root)
}

// --to etcd as the owner of the root, into a transcripts dir it may not
// write in (0500, its own): the run fails a key whose generation it must
// write there, exit 1; the dry run fails it alike.
func TestTheOwnersToEtcdDryRunFailsWhereTheTranscriptsDirRefusesTheKeysDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	first, second := store.Key("github", "nowrite", "tdir-first"), store.Key("github", "nowrite", "tdir-second")
	_, tdir, runAs, root, s := nobodysRootBesideAFleet(t, first, "1")
	// The first move marks the transcripts dir as the fleet's.
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("the first move: exit %d\n%s\n%s", code, out, errs)
	}
	if res, err := promoteMarker(s, second, "1"); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	giveToNobody(root)
	if err := os.Chmod(tdir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(tdir, 0o700)
	sameFailureInTheRunsWords(t, runAs, second, "--to etcd into a transcripts dir of mode 0500", "migrate", "--to", "etcd", root)
}

// The worker's migrations of a key dir already in the layout asked for,
// with nothing to remove, write nothing: the run says "already", exit 0,
// in a key dir the worker may not write in (0500) too. So does its dry
// run. And --to-legacy over a meta.db its runner may not write (0400, in
// a key dir it may write in) fails the key, exit 1: so does its dry run.
func TestTheWorkersDryRunsOfAMigratedKeyDirAnswerAsTheRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	w := newNobodysWorker(t)
	dir := filepath.Join(w.root, workerKey)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"current.jsonl": header, "pi-version": "0.58.3", "venue": "local"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	giveToNobody(w.root)
	if code, out, errs := w.runAs("migrate", w.root); code != exitOK {
		t.Fatalf("the worker's migration into meta.db: exit %d\n%s\n%s", code, out, errs)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	dryCode, dryOut, dryErrs := w.runAs("migrate", "--dry-run", w.root)
	code, out, errs := w.runAs("migrate", w.root)
	if code != exitOK || !strings.Contains(out, workerKey+"  already") {
		t.Fatalf("the run over a migrated key dir of mode 0500: exit %d\n%s\n%s; want already, exit 0", code, out, errs)
	}
	if dryCode != code || !strings.Contains(dryOut, workerKey+"  already") {
		t.Errorf("the dry run over a migrated key dir of mode 0500: exit %d\n%s\n%s; want already, exit 0, as the run", dryCode, dryOut, dryErrs)
	}

	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "meta.db"), 0o400); err != nil {
		t.Fatal(err)
	}
	dryCode, dryOut, dryErrs = w.runAs("migrate", "--to-legacy", "--dry-run", w.root)
	code, out, errs = w.runAs("migrate", "--to-legacy", w.root)
	if code != exitFault || !strings.Contains(out, workerKey+"  failed") {
		t.Fatalf("--to-legacy over a meta.db of mode 0400: exit %d\n%s\n%s; want the key failed", code, out, errs)
	}
	if dryCode != code || !strings.Contains(dryOut, workerKey+"  failed") || !strings.Contains(dryOut, "permission denied") {
		t.Errorf("--to-legacy's dry run over a meta.db of mode 0400: exit %d\n%s\n%s\nthe run: exit %d\n%s\nwant the key failed alike, permission denied", dryCode, dryOut, dryErrs, code, out)
	}
}

// --from etcd into a root that does not exist yet, in a dir its runner
// may not make it in (one root made, 0755): the run stops at once,
// "mkdir …: permission denied", nothing written, exit 1. Its dry run
// planned every key "migrate", exit 0. It now stops alike.
func TestTheFromEtcdDryRunIntoARootItMayNotMakeStopsAsTheRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make dirs root owns, and nobody to run the migrations as")
	}
	key := store.Key("github", "nowrite", "new-root")
	_, tdir, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
	base := filepath.Dir(tdir)
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
	}
	locked := filepath.Join(base, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(locked, "new", "sessions")
	dryCode, dryOut, dryErrs := runAs("migrate", "--from", "etcd", "--dry-run", back)
	code, out, errs := runAs("migrate", "--from", "etcd", back)
	if code != exitFault || !strings.Contains(errs, "permission denied") {
		t.Fatalf("the run: exit %d\n%s\n%s; want it stopped, permission denied", code, out, errs)
	}
	if dryCode != code || !strings.Contains(dryErrs, "mkdir "+filepath.Join(locked, "new")+": permission denied") {
		t.Errorf("the dry run: exit %d\n%s\n%s\nthe run: exit %d\n%s\n%s\nwant it stopped alike, naming the dir it cannot make", dryCode, dryOut, dryErrs, code, out, errs)
	}
	if names, err := os.ReadDir(locked); err != nil || len(names) != 0 {
		t.Errorf("the dir root made holds %v (%v); want nothing made", names, err)
	}
	// Where the root can be made, the dry run plans the key, makes
	// nothing.
	open := filepath.Join(base, "open", "sessions")
	if err := os.Mkdir(filepath.Dir(open), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Dir(open), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runAs("migrate", "--from", "etcd", "--dry-run", open); code != exitOK || !strings.Contains(out, key+"  migrate") {
		t.Errorf("the dry run into a root its runner may make: exit %d\n%s\n%s; want the key planned, exit 0", code, out, errs)
	}
	if _, err := os.Lstat(open); !os.IsNotExist(err) {
		t.Errorf("the dry run made %s (%v); want nothing made", open, err)
	}
}
