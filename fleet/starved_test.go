// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the promise is the same there, and tested on these two.

//go:build !freebsd

package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
	"sessdb/migrate"
	"sessdb/store"
)

// A key dir with no record that cannot be listed (here for want of a
// descriptor) cannot say whether check --repair moved its meta.db aside:
// the move into the fleet fails the key with the listing's error. It was
// read as "nothing moved aside", and a key dir holding only a moved-aside
// meta.db was skipped as holding nothing (exit 0), one with a transcript
// refused with the advice to migrate it to meta.db first, which skips a
// moved-aside key.
func TestNotRecordedThatCannotBeListedFailsTheKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "0123456789abcdef0123456789abcdef")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.AsidePrefix+"20261129T100000Z"), []byte("a damaged meta.db"), 0o600); err != nil {
		t.Fatal(err)
	}
	kd, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()

	var r MigrateReport
	testfs.Starved(t, func() { r = MigrateReport{}; notRecorded(kd, &r) })
	if r.Action != migrate.Failed || !strings.Contains(r.Cause, syscall.EMFILE.Error()) {
		t.Fatalf("a key dir that cannot be listed = %s (%s); want failed with the listing's error", r.Action, r.Cause)
	}
	r = MigrateReport{}
	notRecorded(kd, &r)
	if r.Action != migrate.Failed || !strings.Contains(r.Cause, "moved aside") {
		t.Fatalf("a key dir with a moved-aside meta.db = %s (%s); want failed, moved aside", r.Action, r.Cause)
	}
}
