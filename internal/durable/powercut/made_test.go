package powercut

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/fsat"
)

// TestAFileMadeOutsideTheJournalIsBookedAsACreate: a file package db
// makes itself (locked before it has a name) and books with Made is taken
// back as a create through the journal is; owed, its data is the
// journal's until SyncFile, and once Handed it is taken as it is (bbolt
// fdatasyncs it); not owed, its data is taken as it is from the start.
func TestAFileMadeOutsideTheJournalIsBookedAsACreate(t *testing.T) {
	parent := t.TempDir()
	dir, err := fsat.OpenDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	j := New()
	create := func(name, data string) *os.File {
		f, err := os.OpenFile(filepath.Join(parent, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		f.WriteString(data)
		return f
	}
	// holds checks each image: what each file holds, "" for absent.
	holds := func(when string, want func(mode, name string) string) {
		t.Helper()
		for _, im := range j.Images(t, parent) {
			for _, name := range []string{"owed", "bbolts"} {
				b, err := os.ReadFile(filepath.Join(im.Dir, name))
				got := string(b)
				if err != nil {
					got = "absent"
				}
				if w := want(im.Mode, name); got != w {
					t.Errorf("%s, %s: %s holds %q, want %q (lost: %v)", when, im.Mode, name, got, w, im.Lost)
				}
			}
		}
	}
	nameLands := func(mode string) bool { return mode == Modes[2].Name || mode == Modes[3].Name }

	owed, bbolts := create("owed", "copy"), create("bbolts", "init")
	if err := j.Made(dir, "owed", owed, true); err != nil {
		t.Fatal(err)
	}
	if err := j.Made(dir, "bbolts", bbolts, false); err != nil {
		t.Fatal(err)
	}
	holds("made, not fsynced", func(mode, name string) string {
		switch {
		case !nameLands(mode):
			return "absent"
		case name == "owed":
			return ""
		}
		return "init"
	})
	if err := j.SyncFile(owed); err != nil {
		t.Fatal(err)
	}
	owed.WriteString("+commit")
	holds("the copy fsynced, then written", func(mode, name string) string {
		switch {
		case !nameLands(mode):
			return "absent"
		case name == "owed":
			return "copy"
		}
		return "init"
	})
	j.Handed(owed)
	if err := j.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	holds("handed to bbolt, the dir fsynced", func(_, name string) string {
		if name == "owed" {
			return "copy+commit"
		}
		return "init"
	})

	// A name that does not hold the file named is refused: the journal
	// would book another file.
	other := create("other", "")
	if err := j.Made(dir, "owed", other, true); err == nil {
		t.Error("Made of a name holding another file: <nil>, want it refused")
	}
}
