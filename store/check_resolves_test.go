package store

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A meta.db whose record does not decode says, as a damaged one does,
// what a resolve makes of the key as the ladder orders it:
// meta-unreadable with a transcript in place, absent with none (the
// first rung, which no job changes).
func TestCheckOfAnUndecodableRecordSaysWhatResolveDoes(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(t *testing.T, transcript string)
		reason gates.Reason
	}{
		{"a transcript in place", func(*testing.T, string) {}, gates.MetaUnreadable},
		{"no transcript", func(t *testing.T, p string) { must(t, os.Remove(p)) }, gates.Absent},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "undecodable")
			chkWriteRaw(t, root, key, "sidecars", "venue", []byte{0xc1})
			c.edit(t, filepath.Join(root, key, TranscriptName))
			found, _ := chkRun(t, s, false)
			f := chkFind(found, key+"/"+db.FileName, KindRecordUndecodable)
			if f == nil {
				t.Fatalf("no record-undecodable finding: %+v", found)
			}
			if want := "(resolve: " + string(c.reason) + ")"; !strings.Contains(f.Detail, want) {
				t.Errorf("detail %q, want it to say %q", f.Detail, want)
			}
			sess, err := s.Resolve(key, localJob(), t.TempDir())
			if err != nil || sess.Reason != c.reason {
				t.Errorf("resolve: %s, %v; want %s", sess.Reason, err, c.reason)
			}
		})
	}
}

// A directory put at meta.db after check opened the key (its meta.db
// whole then) is what the next resolve meets: the line about it says
// meta-unreadable, as that resolve does, not what the file check opened
// said (resumed).
func TestCheckOfAMetaDBReplacedByADirectoryAfterItsOpenSaysWhatResolveDoes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "replaced")
	p := filepath.Join(root, key, db.FileName)
	var once sync.Once
	faults.Set(func(pt faults.Point) error {
		if pt == faults.CheckAfterKeyOpen {
			once.Do(func() {
				must(t, os.Remove(p))
				must(t, os.Mkdir(p, 0o700))
			})
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found, _ := chkRun(t, s, false)
	faults.Set(nil)
	f := chkFind(found, key+"/"+db.FileName, KindNotRegular)
	if f == nil {
		t.Fatalf("no not-a-regular-file finding at meta.db: %+v", found)
	}
	if want := "resolve: " + string(gates.MetaUnreadable); !strings.Contains(f.Detail, want) {
		t.Errorf("detail %q, want it to say %q", f.Detail, want)
	}
	sess, err := s.Resolve(key, localJob(), t.TempDir())
	if err != nil || sess.Reason != gates.MetaUnreadable {
		t.Errorf("resolve: %s, %v; want %s", sess.Reason, err, gates.MetaUnreadable)
	}
}
