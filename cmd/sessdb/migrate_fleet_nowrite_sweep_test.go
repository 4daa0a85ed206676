package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// --from etcd of a record with no transcript into a key dir of mode 0500
// holding an empty meta.db and a promotion's temp a killed worker left:
// the run writes meta.db in place (64d0642), and its sweep of the temp,
// an unlink in a key dir it may not write in, removes nothing and lists
// nothing. Its dry run listed the temp as one the run "removes", a plan
// the run did not keep (the temp stays, for check to report). It now
// lists what the run removes: nothing, there.
func TestAFromEtcdDryRunListsNoSweepTheRunMayNotMake(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody, whom a mode binds")
	}
	key := store.Key("github", "nowrite", "sweep")
	_, tdir, runAs, root, _ := nobodysRootBesideAFleet(t, key, "1")
	if err := os.Remove(filepath.Join(root, key, store.TranscriptName)); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runAs("migrate", "--to", "etcd", root); code != exitOK {
		t.Fatalf("to etcd: exit %d\n%s\n%s", code, out, errs)
	}
	back := filepath.Join(filepath.Dir(tdir), "back")
	kd := filepath.Join(back, key)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := fsat.OpenDir(kd)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := db.OpenWriter(d, db.FileName, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lock.Close()
	d.Close()
	temp := "." + store.TranscriptName + ".tmp-0123456789abcdef"
	if err := os.WriteFile(filepath.Join(kd, temp), []byte("a killed promotion's"), 0o600); err != nil {
		t.Fatal(err)
	}
	giveToNobody(back)
	if err := os.Chmod(kd, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(kd, 0o700) // for the cleanup
	dcode, dout, derrs := runAs("migrate", "--from", "etcd", "--dry-run", back)
	code, out, errs := runAs("migrate", "--from", "etcd", back)
	line := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, key+"  ") {
				return l
			}
		}
		return ""
	}
	if code != exitOK || !strings.Contains(line(out), "  migrate ") {
		t.Fatalf("the run: exit %d; want 0, the key migrated\n%s\n%s", code, out, errs)
	}
	if _, err := os.Lstat(filepath.Join(kd, temp)); err != nil {
		t.Fatalf("the temp after the run: %v; want it left (the key dir 0500)", err)
	}
	if dl, l := line(dout), line(out); dcode != code || dl != l {
		t.Errorf("the dry run: exit %d, %q\n%s\nwant exit %d and the run's line, %q", dcode, dl, derrs, code, l)
	}
}
