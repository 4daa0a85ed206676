package store

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/access"
	"sessdb/internal/durable"
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
// holds of an entry sessdb made as root (before it made what it makes as
// root the root's owner's) in a root a worker owns: check reports it
// (KindOwner), and leaves it to the operator (advice). Both are judged
// for the user the store is made for, the root's owner: in a root root
// owns, nothing (root may use anything; access.Judge).

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

// judgeAccess returns the judge of a key's entries under root, owned by
// owner (nil: not known), each at a path relative to root. It adds a
// KindMode finding when an entry of the owner's own lacks the owner's
// bits the store needs of its name, and a KindOwner finding when the
// entry is root's and the root's owner may not, by the mode's group or
// others' bits or its access ACL, do what the store needs: a key an older
// sessdb made as root in a worker's root, which that worker's every
// resolve fails on (access.JudgeAt).
func judgeAccess(root *os.File, add addFunc, owner *access.Owner) accessFunc {
	return func(path, name string, st *unix.Stat_t) {
		need, made, judged := ownerNeeds(name)
		if !judged {
			return
		}
		what, dir := name, name == "."
		if dir {
			what = "key dir"
		}
		modeLacks, ownerLacks := access.JudgeAt(root, path, st, need, owner)
		if modeLacks != 0 {
			add(path, KindMode, "mode %04o: its owner may not %s the %s (sessdb makes it %04o); a worker that is not root fails its resolves or promotions of the key", uint32(st.Mode)&0o7777, access.Verbs(modeLacks, dir), what, made)
		} else if dir && access.OpenToAnyone(st) {
			add(path, KindMode, "mode %04o: anyone may write in the key dir (no sticky bit; sessdb makes it %04o): any user of the host may replace the key's meta.db or transcript, which its next resolve resumes", uint32(st.Mode)&0o7777, made)
		}
		if ownerLacks != 0 {
			add(path, KindOwner, "owned by uid %d, where the sessions root is uid %d's, who may not %s the %s; that user's workers fail their resolves or promotions of the key (as root, once it is known to be the store's: chown %d:%d)", st.Uid, owner.UID, access.Verbs(ownerLacks, dir), what, owner.UID, owner.GID)
		}
	}
}

// rootOwner is the owner of root, nil when it cannot be told (no owner is
// then judged).
func rootOwner(root *os.File) *access.Owner {
	if owner, ok := access.OwnerOf(root); ok {
		return &owner
	}
	return nil
}

// repairModes gives each name of the key name that has a KindMode
// finding the owner's bits it lacks (access.GiveBits: never through a
// link; through disk, and fsynced before it is said repaired), the key
// dir first (examine reports it first), so that its files can be
// reached. No lock is taken: bits are only added, and no writer's work
// is touched. A KindOwner finding is left to the operator (advice).
func repairModes(disk durable.FS, root *os.File, name string, found []Finding) {
	// The modes judged are the root's owner's own entries': only such
	// an entry is given bits (fsat.AddOwnerBitsAt checks it on the inode
	// it chmods).
	uid := -1
	if owner := rootOwner(root); owner != nil {
		uid = int(owner.UID)
	}
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
					kd = nil
					f.notRepaired(err)
					continue
				}
			}
			dir, base = kd, entry
		}
		give := access.GiveBits
		if entry == "." {
			give = access.MendKeyDir // the others' write bit taken too
		}
		outcome, done, err := give(disk, dir, base, need, uid)
		if err != nil {
			f.notRepaired(err)
			continue
		}
		f.Repair, f.Repaired = outcome, done
	}
}

// judgeUnopened judges, by lstat, the modes and owners of the files of a
// key that could not be opened: one whose meta.db its owner may not read
// (0000) fails the key's open, and is named (mode) and mended by --repair
// like any other, where before it was only unreadable. A key dir that
// cannot be entered was judged already (examine).
func judgeUnopened(root *os.File, name string, judge accessFunc) {
	kd, err := fsat.OpenDirAt(root, name)
	if err != nil {
		return
	}
	defer kd.Close()
	for _, n := range []string{db.FileName, TranscriptName} {
		if st, err := fsat.LstatAt(kd, n); err == nil && fsat.IsRegular(&st) {
			judge(name+"/"+n, n, &st)
		}
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
	mode, lacks, ok := access.DirLacks(root, rootNeeds)
	if !ok || lacks == 0 {
		return nil
	}
	return &Finding{Path: ".", Kind: KindMode, Severity: KindMode.Severity(), Detail: fmt.Sprintf("mode %04o: its owner may not %s the sessions root (sessdb makes it 0700); a worker that is not root fails its resolves, or its promotions of a new key (promote-failed) while resolve says absent", mode, access.Verbs(lacks, true))}
}

// unreadRoot is judgeRoot, and with repair repairRoot, for a sessions
// root the check could not open or list: opened by fsat.OpenDirUnread
// (O_PATH on Linux), which needs none of the bits its owner lacks. nil:
// nothing found, or the root cannot be opened even so (off Linux).
func (s *Store) unreadRoot(repair bool) *Finding {
	root, err := fsat.OpenDirUnread(s.root)
	if err != nil {
		return nil
	}
	defer root.Close()
	f := judgeRoot(root)
	if f == nil {
		return nil
	}
	f.Remains = true
	if repair {
		repairRoot(s.disk.disk(), root, f)
		f.Remains = judgeRoot(root) != nil
	}
	return f
}

// repairRoot gives the sessions root the owner's bits its finding f says
// it lacks, through disk (made durable before it is said done), and
// records the outcome on f.
func repairRoot(disk durable.FS, root *os.File, f *Finding) {
	outcome, done, err := access.GiveBits(disk, root, ".", rootNeeds, -1)
	if err != nil {
		f.notRepaired(err)
		return
	}
	f.Repair, f.Repaired = outcome, done
}
