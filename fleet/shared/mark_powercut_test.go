package shared

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable/powercut"
)

// otherMarker is the seam as it is while another writer of the fleet
// marks dir at once: that writer's rename lands just before this one's
// temp is created, and its dir fsync has not come yet.
type otherMarker struct {
	*powercut.Journal
	t    *testing.T
	mark Mark
	done bool
}

func (o *otherMarker) CreateTemp(dir *os.File, name string) (*os.File, error) {
	if !o.done {
		o.done = true
		o.t.Helper()
		placeUnsynced(o.t, o.Journal, dir, o.mark)
	}
	return o.Journal.CreateTemp(dir, name)
}

// placeUnsynced is another writer's WriteMark of m up to its rename:
// nothing of dir fsynced.
func placeUnsynced(t *testing.T, j *powercut.Journal, dir *os.File, m Mark) {
	t.Helper()
	tmp := markTempPrefix + "0123456789abcdef"
	f, err := j.CreateTemp(dir, tmp)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(formatMark(m))
	if err == nil {
		err = j.SyncFile(f)
	}
	f.Close()
	if err == nil {
		err = j.RenameNoReplaceAtomic(dir, tmp, MarkName)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A mark WriteMark or SyncMark returns as the dir's, though another writer
// put it there and has not fsynced the dir yet, survives a power cut in
// every mode once they return: its caller goes on to write in the dir on
// the strength of it. Before, WriteMark returned another writer's mark
// (found before its own temp, or in its way at the rename) as it was, and
// a plain power cut (nothing-lands) took it back.
func TestAMarkFoundIsDurableOnceReturned(t *testing.T) {
	m := Mark{ID: "0123456789abcdef0123456789abcdef", Prefix: "/sessdb"}
	for name, run := range map[string]func(t *testing.T, j *powercut.Journal, dir string) (Mark, error){
		"WriteMark finds it": func(t *testing.T, j *powercut.Journal, dir string) (Mark, error) {
			placeUnsyncedIn(t, j, dir, m)
			return WriteMark(dir, Mark{ID: m.ID, Prefix: m.Prefix})
		},
		"WriteMark's rename meets it": func(t *testing.T, j *powercut.Journal, dir string) (Mark, error) {
			defer sharedfs.Use(&otherMarker{Journal: j, t: t, mark: m})()
			return WriteMark(dir, Mark{ID: m.ID, Prefix: m.Prefix})
		},
		"SyncMark after ReadMark": func(t *testing.T, j *powercut.Journal, dir string) (Mark, error) {
			placeUnsyncedIn(t, j, dir, m)
			got, found, err := ReadMark(dir)
			if err == nil && !found {
				t.Fatal("ReadMark: not found")
			}
			if err == nil {
				err = SyncMark(dir)
			}
			return got, err
		},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "t")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			j := powercut.New()
			defer sharedfs.Use(j)()
			got, err := run(t, j, dir)
			if err != nil || got != m {
				t.Fatalf("= %+v, %v; want %+v", got, err, m)
			}
			for _, img := range j.Images(t, parent) {
				if read, found, err := ReadMark(filepath.Join(img.Dir, "t")); err != nil || !found || read != m {
					t.Errorf("a cut after it returned (%s, lost %v): the mark %+v, %v, %v; want it there", img.Mode, img.Lost, read, found, err)
				}
			}
		})
	}
}

func placeUnsyncedIn(t *testing.T, j *powercut.Journal, dir string, m Mark) {
	t.Helper()
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	placeUnsynced(t, j, root, m)
}
