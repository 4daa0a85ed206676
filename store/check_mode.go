package store

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// The store makes a key dir 0700 and its files 0600, whatever the umask
// (fsat). One made otherwise (by a sessdb from before that, under a umask
// that took the owner's bits, or by a chmod) can pass every other look:
// dump shows it resuming while every promotion of it fails
// (promote-failed), or a resolve by a user that is not root fails. So
// check reports a mode without the owner's bits the store needs of the
// name (KindMode), and --repair adds them, and nothing else.

// ownerNeeds returns the owner's bits the store needs of a key's entry
// name (the key dir's own is "."), the mode it makes it with, and whether
// it judges that name at all: a key dir it lists, enters and writes in;
// meta.db, which a promotion opens for writing; the transcript, which a
// resolve reads and a promotion replaces by a rename (in the key dir, not
// the file).
func ownerNeeds(name string) (need, made uint32, judged bool) {
	switch name {
	case ".":
		return 0o700, 0o700, true
	case db.FileName:
		return 0o600, 0o600, true
	case TranscriptName:
		return 0o400, 0o600, true
	}
	return 0, 0, false
}

// judgeMode adds a KindMode finding at path when st, the lstat of the
// key's entry name, lacks the owner's bits the store needs of it.
func judgeMode(add addFunc, path, name string, st *unix.Stat_t) {
	need, made, judged := ownerNeeds(name)
	mode := uint32(st.Mode) & 0o7777
	if !judged || mode&need == need {
		return
	}
	what := "key dir"
	if name != "." {
		what = name
	}
	add(path, KindMode, "mode %04o: its owner may not %s the %s (sessdb makes it %04o); a worker that is not root fails its resolves or promotions of the key", mode, lacking(mode, need, name == "."), what, made)
}

// lacking names what the owner may not do for want of the bits of need
// that mode lacks ("read", "write", "enter" or "execute"), as a list
// ending in "or".
func lacking(mode, need uint32, dir bool) string {
	var verbs []string
	for _, b := range []struct {
		bit  uint32
		verb string
	}{{0o400, "read"}, {0o200, "write"}, {0o100, "execute"}} {
		if need&b.bit != 0 && mode&b.bit == 0 {
			verb := b.verb
			if dir && b.bit == 0o100 {
				verb = "enter"
			}
			verbs = append(verbs, verb)
		}
	}
	if len(verbs) > 1 {
		return strings.Join(verbs[:len(verbs)-1], ", ") + " or " + verbs[len(verbs)-1]
	}
	return verbs[0]
}

// repairModes gives each name of the key name that has a KindMode finding
// the owner's bits it lacks (fsat.AddOwnerBitsAt: never through a link),
// the key dir first (examine reports it first), so that its files can be
// reached. No lock is taken: bits are only added, and no writer's work is
// touched.
func repairModes(root *os.File, name string, found []Finding) {
	var kd *os.File
	defer func() {
		if kd != nil {
			kd.Close()
		}
	}()
	for i := range found {
		f := &found[i]
		if f.Kind != KindMode {
			continue
		}
		entry := "."
		if _, rest, ok := strings.Cut(f.Path, "/"); ok {
			entry = rest
		}
		need, _, _ := ownerNeeds(entry)
		dir, base := root, name
		if entry != "." {
			if kd == nil {
				var err error
				if kd, err = fsat.OpenDirAt(root, name); err != nil {
					f.notRepaired(err)
					continue
				}
			}
			dir, base = kd, entry
		}
		before, err := fsat.AddOwnerBitsAt(dir, base, need)
		switch {
		case fsat.IsNotExist(err):
			f.Repair = "gone since it was found: nothing left to give bits to"
		case err != nil:
			f.notRepaired(err)
		case before&need == need:
			f.Repair = fmt.Sprintf("gone since it was found: its mode is %04o now", before)
		default:
			f.Repair, f.Repaired = fmt.Sprintf("gave its owner the bits it lacked: mode %04o, now %04o", before, before|need), true
		}
	}
}
