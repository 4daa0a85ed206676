package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/internal/access"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// The transcripts dir is its owner's, as a sessions root is: the fleet
// makes its key dirs 0700 and its files 0600, and, as root on Linux, the
// dir's owner's (fsat). What an older sessdb made under a umask that took
// the owner's bits, or as root, every worker's promote or resolve then
// fails on, while nothing reported it: check judges, for the dir's owner,
// the dir itself and its mark (every worker reads the mark), each key dir
// (a promote writes in it) and the generation each record names (a resolve
// reads it). A mode is given its owner's bits back by --repair; another
// user's entry is left to the operator (access: the dir's owner can
// rename another user's file in).

// What the fleet needs, in its owner's place, of the dir and its mark, a
// key dir and a generation.
const (
	dirNeeds  = 0o700
	markNeeds = 0o400
	genNeeds  = 0o400
)

// judgeAccess adds what the dir's owner (nil: not known) may not do with
// an entry at path in root, the transcripts dir (st its lstat), of which
// the fleet needs need: kind mode for its own entry, kind owner for
// root's, in a dir another user owns (access.JudgeAt, its ACL read).
func judgeAccess(root *os.File, add addFunc, owner *access.Owner, path, what string, st *unix.Stat_t, need uint32) {
	dir := fsat.IsDir(st)
	modeLacks, ownerLacks := access.JudgeAt(root, path, st, need, owner)
	if modeLacks != 0 {
		add(path, store.KindMode, "mode %04o: its owner may not %s the %s (sessdb makes it %04o); a worker fails its promotions or resolves", uint32(st.Mode)&0o7777, access.Verbs(modeLacks, dir), what, made(dir))
	} else if what == "key dir" && access.OpenToAnyone(st) {
		add(path, store.KindMode, "mode %04o: anyone may write in the key dir (no sticky bit; sessdb makes it %04o): any user of the host may replace the key's generations", uint32(st.Mode)&0o7777, made(dir))
	}
	if ownerLacks != 0 {
		add(path, store.KindOwner, "owned by uid %d, where the transcripts dir is uid %d's, who may not %s the %s; that user's workers fail their promotions or resolves (as root, once it is known to be the fleet's: chown %d:%d)", st.Uid, owner.UID, access.Verbs(ownerLacks, dir), what, owner.UID, owner.GID)
	}
}

// made is the mode the fleet makes a directory or a file with.
func made(dir bool) uint32 {
	if dir {
		return 0o700
	}
	return 0o600
}

// dirOwner is the transcripts dir's owner, nil when it cannot be told.
func dirOwner(root *os.File) *access.Owner {
	if owner, ok := access.OwnerOf(root); ok {
		return &owner
	}
	return nil
}

// checkTop judges the transcripts dir's own mode and its mark's, before
// its entries, and with Repair gives a mode the owner's bits it lacks.
func (c *checker) checkTop(visit func(store.Finding) error, sum *store.CheckSummary) error {
	return visitAll(c.top(), visit, sum)
}

// visitAll counts and visits found, in order.
func visitAll(found []store.Finding, visit func(store.Finding) error, sum *store.CheckSummary) error {
	for _, f := range found {
		count(sum, f)
		if err := visit(f); err != nil {
			return err
		}
	}
	return nil
}

// unreadTop is checkTop where the dir or its mark could not be read (the
// claim's error, cause): a dir its owner may not list or enter, a mark it
// may not read. The dir is opened by fsat.OpenDirUnread (O_PATH on
// Linux), which needs none of the bits its owner lacks, and with Repair
// they are given back, the dir's before its mark's (a dir that cannot be
// entered hides its mark's mode), and the dir claimed after all: its
// findings are visited, and the check goes on. Else the error says what
// was found and what was mended (a failed check prints no finding).
func (b *Backend) unreadTop(ctx context.Context, o CheckOptions, visit func(store.Finding) error, sum *store.CheckSummary, cause error) error {
	root, err := fsat.OpenDirUnread(b.dir)
	if err != nil {
		return cause
	}
	defer root.Close()
	c := &checker{b: b, o: o, root: root, owner: dirOwner(root)}
	var found []store.Finding
	for range 2 {
		top := c.top()
		found = append(found, top...)
		if len(top) == 0 || slices.ContainsFunc(top, func(f store.Finding) bool { return f.Remains }) {
			break
		}
		if cause = b.claim(ctx, o.Repair); cause == nil {
			return visitAll(found, visit, sum)
		}
		if !errors.Is(cause, fs.ErrPermission) {
			break // another refusal (a mark that is not one): named, with what was mended
		}
	}
	if len(found) == 0 {
		return cause
	}
	what := make([]string, len(found))
	for i, f := range found {
		what[i] = fmt.Sprintf("%s: %s (%s)", f.Path, f.Detail, cmp.Or(f.Repair, "check --repair gives its owner the bits back"))
	}
	return fmt.Errorf("%w: %s", cause, strings.Join(what, "; "))
}

// top judges the transcripts dir's own mode and its mark's, and with
// Repair gives a mode the owner's bits it lacks.
func (c *checker) top() []store.Finding {
	var out []store.Finding
	add := func(path string, kind store.Kind, format string, args ...any) *store.Finding {
		out = append(out, store.Finding{Path: path, Kind: kind, Severity: kind.Severity(), Detail: c.b.unroot(fmt.Sprintf(format, args...)), Remains: true})
		return &out[len(out)-1]
	}
	if mode, lacks, ok := access.DirLacks(c.root, dirNeeds); ok && lacks != 0 {
		add(".", store.KindMode, "mode %04o: its owner may not %s the transcripts dir (sessdb makes it 0700); a worker fails its promotions, or its resolves", mode, access.Verbs(lacks, true))
	}
	if st, err := fsat.LstatAt(c.root, shared.MarkName); err == nil && fsat.IsRegular(&st) {
		judgeAccess(c.root, add, c.owner, shared.MarkName, "dir's mark", &st, markNeeds)
	}
	if c.o.Repair {
		c.repairModes(out)
	}
	return out
}

// repairModes gives each entry of found with a KindMode finding the
// owner's bits it lacks (access.GiveBits: never through a link; through
// the fleet's seam, and fsynced before it is said repaired), a key dir
// before its files (the walk reports it first). No lock is taken:
// bits are only added. A KindOwner finding is left (access.OwnerAdvice).
func (c *checker) repairModes(found []store.Finding) {
	dirs := map[string]*os.File{}
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
	}()
	// The modes judged are the dir's owner's own entries': only such an
	// entry is given bits (fsat.AddOwnerBitsAt checks it on the inode it
	// chmods).
	uid := -1
	if c.owner != nil {
		uid = int(c.owner.UID)
	}
	for i := range found {
		f := &found[i]
		switch f.Kind {
		case store.KindOwner:
			f.Repair = "left as is: " + access.OwnerAdvice
			continue
		case store.KindMode:
		default:
			continue
		}
		dir, base, need := c.root, ".", uint32(dirNeeds)
		key, file, inKey := strings.Cut(f.Path, "/")
		switch {
		case f.Path == shared.MarkName:
			base, need = shared.MarkName, markNeeds
		case f.Path != ".":
			base = key
			if inKey {
				d, ok := dirs[key]
				if !ok {
					var err error
					if d, err = fsat.OpenDirAt(c.root, key); err != nil {
						f.Repair, f.RepairFailed = "not repaired: "+err.Error(), true
						continue
					}
					dirs[key] = d
				}
				dir, base, need = d, file, genNeeds
			}
		}
		give := access.GiveBits
		if f.Path != "." && f.Path != shared.MarkName && !inKey {
			give = access.MendKeyDir // the others' write bit taken too
		}
		outcome, done, err := give(sharedfs.FS(), dir, base, need, uid)
		if err != nil {
			f.Repair, f.RepairFailed = "not repaired: "+err.Error(), true
			continue
		}
		f.Repair, f.Repaired, f.Remains = outcome, done, false
	}
}
