package store

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// The store makes a key dir 0700 and its files 0600, whatever the umask
// (fsat). One made otherwise (by a sessdb from before that, under a umask
// that took the owner's bits, or by a chmod) can pass every other look:
// dump shows it resuming while every promotion of it fails
// (promote-failed), or a resolve by a user that is not root fails. So
// check reports a mode without the owner's bits the store needs of the
// name (KindMode), and --repair adds them, and nothing else. The same
// holds of an entry sessdb made as root (before it gave what it makes as
// root to the root's owner) in a root a worker owns: check reports it
// (KindOwner), and --repair run as root gives it to the root's owner.

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
	if legacy.IsSidecar(name) {
		return 0o400, 0o600, true // read by a resolve of a legacy key
	}
	return 0, 0, false
}

// accessFunc judges the mode and the owner of a key's entry name, found
// at path with st its lstat (judgeAccess).
type accessFunc func(path, name string, st *unix.Stat_t)

// rootOwner is the sessions root's owner and group: the user a store's
// keys are made for (whoever runs sessdb, and, as root, the root's owner:
// see fsat's owner.go).
type rootOwner struct{ uid, gid uint32 }

// ownerOf returns the owner of root, nil when it cannot be told (no owner
// is then judged).
func ownerOf(root *os.File) *rootOwner {
	var st unix.Stat_t
	if _, err := fsat.IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(int(root.Fd()), &st) }); err != nil {
		return nil
	}
	return &rootOwner{st.Uid, st.Gid}
}

// judgeAccess returns the judge of a key's entries under a root owned by
// owner. It adds a KindMode finding when an entry lacks the owner's bits
// the store needs of its name, and a KindOwner finding when the entry is
// another user's and the root's owner may not, by the mode's group bits
// (the entry's group being the root's) or its others' bits, do what the
// store needs: a key an older sessdb made as root in a worker's root,
// which that worker's every resolve fails on. A root root owns judges no
// owner: root may do anything.
func judgeAccess(add addFunc, owner *rootOwner) accessFunc {
	return func(path, name string, st *unix.Stat_t) {
		need, made, judged := ownerNeeds(name)
		if !judged {
			return
		}
		mode := uint32(st.Mode) & 0o7777
		what := "key dir"
		if name != "." {
			what = name
		}
		if mode&need != need {
			add(path, KindMode, "mode %04o: its owner may not %s the %s (sessdb makes it %04o); a worker that is not root fails its resolves or promotions of the key", mode, lacking(mode, need, name == "."), what, made)
		}
		if owner == nil || owner.uid == 0 || st.Uid == owner.uid {
			return
		}
		// The root's owner's bits, in the owner's place for lacking.
		has := (mode & 0o7) << 6
		if st.Gid == owner.gid {
			has = (mode & 0o70) << 3
		}
		if has&need != need {
			add(path, KindOwner, "owned by uid %d, where the sessions root is uid %d's, who may not %s the %s; that user's workers fail their resolves or promotions of the key (check --repair, run as root, gives it to uid %d)", st.Uid, owner.uid, lacking(has, need, name == "."), what, owner.uid)
		}
	}
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

// repairAccess acts on the KindOwner and KindMode findings of the key
// name: each entry another user owns is given to the root's owner
// (fsat.GiveAt: as root only, never through a link, never a file with a
// second name), then each is given the owner's bits it lacks
// (fsat.AddOwnerBitsAt), the key dir first each time (examine reports it
// first), so that its files can be reached. No lock is taken: what
// changes is who may use the key, never what it holds.
func repairAccess(root *os.File, name string, found []Finding) {
	owner := ownerOf(root)
	var kd *os.File
	defer func() {
		if kd != nil {
			kd.Close()
		}
	}()
	// at returns the directory and the name a finding's path is at.
	at := func(f *Finding) (dir *os.File, entry, base string, err error) {
		entry = "."
		if _, rest, ok := strings.Cut(f.Path, "/"); ok {
			entry = rest
		}
		if entry == "." {
			return root, entry, name, nil
		}
		if kd == nil {
			if kd, err = fsat.OpenDirAt(root, name); err != nil {
				kd = nil
				return nil, entry, "", err
			}
		}
		return kd, entry, entry, nil
	}
	for _, kind := range []Kind{KindOwner, KindMode} {
		for i := range found {
			f := &found[i]
			if f.Kind != kind {
				continue
			}
			dir, entry, base, err := at(f)
			if err != nil {
				f.notRepaired(err)
				continue
			}
			if kind == KindOwner {
				giveToRootOwner(f, dir, base, owner)
			} else {
				need, _, _ := ownerNeeds(entry)
				addOwnerBits(f, dir, base, need)
			}
		}
	}
}

// giveToRootOwner gives f's entry, base in dir, to owner, the root's, and
// records the outcome on f.
func giveToRootOwner(f *Finding, dir *os.File, base string, owner *rootOwner) {
	switch {
	case owner == nil:
		f.notRepaired(errors.New("the sessions root's owner cannot be told"))
		return
	case os.Geteuid() != 0:
		f.notRepaired(errors.New("only root gives a file to another user: run check --repair as root"))
		return
	}
	before, err := fsat.GiveAt(dir, base, owner.uid, owner.gid)
	switch {
	case fsat.IsNotExist(err):
		f.Repair = "gone since it was found: nothing left to give"
	case err != nil:
		f.notRepaired(err)
	case before == owner.uid:
		f.Repair = fmt.Sprintf("gone since it was found: it is uid %d's now", before)
	default:
		f.Repair, f.Repaired = fmt.Sprintf("gave it to the sessions root's owner, uid %d (it was uid %d's)", owner.uid, before), true
	}
}

// addOwnerBits gives f's entry, base in dir, the owner's bits of need
// that its mode lacks, and records the outcome on f.
func addOwnerBits(f *Finding, dir *os.File, base string, need uint32) {
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

// rootNeeds is what the store needs of its sessions root's mode: its
// owner lists it (every walk), enters it (every resolve) and makes and
// removes keys in it (promote, reap).
const rootNeeds = 0o700

// judgeRoot returns a KindMode finding, path ".", when the sessions root's
// mode lacks the owner's bits the store needs: a root an older sessdb made
// under a umask that took them (0277 made it 0500) takes every promotion
// of a new key from a worker that is not root, while resolve says absent.
// nil: nothing to report, or the root's mode cannot be read (the walk
// reports that).
func judgeRoot(root *os.File) *Finding {
	var st unix.Stat_t
	if _, err := fsat.IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(int(root.Fd()), &st) }); err != nil {
		return nil
	}
	mode := uint32(st.Mode) & 0o7777
	if mode&rootNeeds == rootNeeds {
		return nil
	}
	return &Finding{Path: ".", Kind: KindMode, Severity: KindMode.Severity(), Detail: fmt.Sprintf("mode %04o: its owner may not %s the sessions root (sessdb makes it 0700); a worker that is not root fails its resolves, or its promotions of a new key (promote-failed) while resolve says absent", mode, lacking(mode, rootNeeds, true))}
}

// repairRoot gives the sessions root the owner's bits its finding f says
// it lacks, and records the outcome on f.
func repairRoot(root *os.File, f *Finding) {
	before, err := fsat.AddOwnerBits(root, rootNeeds)
	switch {
	case err != nil:
		f.notRepaired(err)
	case before&rootNeeds == rootNeeds:
		f.Repair = fmt.Sprintf("gone since it was found: its mode is %04o now", before)
	default:
		f.Repair, f.Repaired = fmt.Sprintf("gave its owner the bits it lacked: mode %04o, now %04o", before, before|rootNeeds), true
	}
}
