package shared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ServerNow reads the clock that stamps dir's entries, from the dir's own
// mtime after a touch, and leaves nothing in it. On a local disk that is
// this host's clock (the kernel's coarse one, a tick behind at most).
func TestServerNowIsTheTimeTheDirIsStamped(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	got, err := ServerNow(dir)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if got.Before(before.Add(-50*time.Millisecond)) || got.After(after) {
		t.Errorf("ServerNow = %v, want between %v and %v", got, before, after)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(got) {
		t.Errorf("dir's mtime is %v, ServerNow said %v", st.ModTime(), got)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "a" {
		t.Errorf("dir holds %v (%v), want only a", ents, err)
	}
}

// ServerNow of a dir that is gone is ErrDirUnavailable, never a crash
// (mutation sweep: the return of OpenDir's error dropped, and Touch of
// the nil descriptor dereferenced it; no test held it).
func TestServerNowOfADirThatIsGone(t *testing.T) {
	if got, err := ServerNow(filepath.Join(t.TempDir(), "gone")); !errors.Is(err, ErrDirUnavailable) {
		t.Errorf("ServerNow of a dir that is gone = %v, %v; want ErrDirUnavailable", got, err)
	}
}
