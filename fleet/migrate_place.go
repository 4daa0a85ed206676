package fleet

import (
	"fmt"
	"os"
	"path/filepath"

	"sessdb/internal/fsat"
	"sessdb/store"
)

// Where a transcripts dir sits that a migration between it and a sessions
// root refuses (PlaceError.Where).
const (
	// DirIsRoot: the transcripts dir is the sessions root itself (or a
	// link to it). The fleet's claim takes an unmarked dir of key dirs
	// for one from before marks: a fleet with records would mark the
	// root as its dir and write each generation beside the key's meta.db,
	// where no other worker reads it.
	DirIsRoot = iota + 1
	// DirInKeyDir: the transcripts dir is inside a key dir of the root
	// (Key), at any depth. The key dir is the store's, and --to etcd
	// leaves it as the way back: a quarantine of the key would move the
	// fleet's every transcript aside with it, and a removal of the old
	// root once the fleet runs would take them.
	DirInKeyDir
	// DirInRoot: the transcripts dir is inside the root at a name that is
	// no key (Name), at any depth: a removal of the old root once the
	// fleet runs would take the fleet's every transcript.
	DirInRoot
	// RootInDir: the sessions root is inside the transcripts dir (at
	// Name, any depth), which holds the fleet's key dirs alone: at a key's
	// name it would be taken for that key's dir of generation files (its
	// key dirs and meta.db files, debris to the fleet's check and reap),
	// at another a stray entry in the fleet's dir.
	RootInDir
)

// PlaceError is ToEtcd's and FromEtcd's refusal of a transcripts dir
// that is not a directory of its own apart from the sessions root (see
// Where's values), returned before anything is read or written.
type PlaceError struct {
	Where int
	Dir   string // the transcripts dir, as the Backend was given it
	Root  string // the sessions root, as given
	// Key is the key dir of Root the transcripts dir is inside
	// (DirInKeyDir); Name is the entry of Root (DirInRoot) or of Dir
	// (RootInDir) the one is inside.
	Key, Name string
}

func (e *PlaceError) Error() string {
	switch e.Where {
	case DirIsRoot:
		return fmt.Sprintf("the transcripts dir %s is the sessions root this migration moves: the fleet's transcripts dir is a directory of its own, which every worker mounts", e.Dir)
	case DirInKeyDir:
		return fmt.Sprintf("the transcripts dir %s is inside the key dir %s of the sessions root this migration moves (%s), which holds a key's own files alone: the fleet's transcripts dir is a directory of its own, which every worker mounts", e.Dir, e.Key, e.Root)
	case DirInRoot:
		return fmt.Sprintf("the transcripts dir %s is inside the sessions root this migration moves (%s), at %s: a removal of the old root would take the fleet's transcripts; the fleet's transcripts dir is a directory of its own, which every worker mounts", e.Dir, e.Root, e.Name)
	default:
		return fmt.Sprintf("the sessions root %s is inside the transcripts dir %s, at %s, which holds the fleet's key dirs alone: a sessions root is a directory of its own", e.Root, e.Dir, e.Name)
	}
}

// CheckPlaces is the refusal ToEtcd and FromEtcd make of a transcripts
// dir (dir) and a sessions root (root) that are one, or one inside the
// other (a *PlaceError); nil otherwise, and where a path cannot be
// resolved (the open of it then says what is wrong with it). Links are
// resolved; a root not made yet is placed by the nearest dir above it
// that exists. A caller may ask it first, before it connects to the
// fleet (the CLI does, naming its settings).
func CheckPlaces(root, dir string) error {
	// Where each leads, links resolved as the kernel takes them, the part
	// not made yet kept as written (fsat.ResolvedPath).
	r, err := fsat.ResolvedPath(root)
	if err != nil {
		return nil
	}
	d, err := fsat.ResolvedPath(dir)
	if err != nil {
		return nil
	}
	if r == d || sameFile(r, d) {
		return &PlaceError{Where: DirIsRoot, Dir: dir, Root: root}
	}
	if name, in := entryHolding(r, d); in {
		if store.ValidKey(name) {
			return &PlaceError{Where: DirInKeyDir, Dir: dir, Root: root, Key: name}
		}
		return &PlaceError{Where: DirInRoot, Dir: dir, Root: root, Name: name}
	}
	if name, in := entryHolding(d, r); in {
		return &PlaceError{Where: RootInDir, Dir: dir, Root: root, Name: name}
	}
	return nil
}

// entryHolding names the entry of dir that p (both resolved) is inside,
// at any depth; false when p is in no entry of dir.
func entryHolding(dir, p string) (string, bool) {
	for {
		parent := filepath.Dir(p)
		if parent == p {
			return "", false
		}
		if parent == dir || sameFile(parent, dir) {
			return filepath.Base(p), true
		}
		p = parent
	}
}

// sameFile reports whether a and b name one directory (a bind mount of
// another's path: the same device and inode).
func sameFile(a, b string) bool {
	x, err := os.Stat(a)
	if err != nil {
		return false
	}
	y, err := os.Stat(b)
	return err == nil && os.SameFile(x, y)
}
