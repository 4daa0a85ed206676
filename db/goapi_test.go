package db_test

import (
	"errors"
	"testing"

	"sessdb/db"
)

// Every method of a DB used after Close answers ErrClosed, as the
// sentinel's doc says, FileID included (it answered os.ErrClosed, which
// errors.Is(err, db.ErrClosed) does not match); and Close again is nil.
func TestEveryUseAfterCloseIsErrClosed(t *testing.T) {
	dir, err := openKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	w, err := db.OpenWriter(dir, "key/meta.db", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("close again: %v", err)
	}
	_, _, ferr := w.FileID()
	_, cerr := w.Check(1)
	for what, err := range map[string]error{
		"update":  w.Update(func(*db.Tx) error { return nil }),
		"view":    w.View(func(*db.Tx) error { return nil }),
		"file id": ferr,
		"check":   cerr,
	} {
		if !errors.Is(err, db.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", what, err)
		}
	}
}
