package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// Claim ties the transcripts dir to this fleet: where the dir has no mark
// yet, it gives the fleet an ID in etcd if it has none (etcdmeta's
// FleetID) and marks the dir with it (shared.WriteMark); a dir already
// marked must name this fleet's ID, else ErrOtherFleet and nothing is
// written; so is a dir without a mark that holds key dirs, claimed by a
// fleet with no record, one without a mark that holds no key dir,
// claimed by a fleet with records and an ID (an export not mounted), and
// one without a mark whose key dirs hold a sessions root's files (see
// unmarked). Two fleets on one dir, whose prefixes differ by a slip
// ("sessdb", "/sessdb") or whose etcd clusters differ, would otherwise each
// sweep the other's transcripts as orphans.
//
// A Backend's promotions, reaps, repairs and migrations into etcd claim
// the dir before their first write, and its checks, dry runs and
// migrations out of etcd compare the mark where there is one; once a
// Backend has found the dir its own it does not look again (its first
// writer still makes the mark it found durable). Calling Claim
// first tells a caller a dir that is another fleet's (a configuration to
// fix) from a promotion's fault. Dump and stats do not look: they write
// nothing in the dir; a view of a key with no record (a resolve's absent)
// compares the mark where there is one (markedForAnother).
func (b *Backend) Claim(ctx context.Context) error {
	if err := b.opened(); err != nil {
		return err
	}
	return b.claim(callerctx.Of(ctx), true)
}

// claim is Claim where write is set, else the comparison alone: a dir
// without a mark, or a fleet without an ID, is then left so (an audit
// writes nothing), and only a mark that names another fleet, or an
// unmarked dir its writer would refuse (see unmarked: a dry run refuses
// it as its run does), is an error.
func (b *Backend) claim(ctx context.Context, write bool) error {
	done := func() bool { return b.claimed.Load() || !write && b.matched.Load() }
	if done() {
		return nil
	}
	b.claiming.Lock()
	defer b.claiming.Unlock()
	if done() {
		return nil
	}
	if b.matched.Load() {
		// An audit found the mark this fleet's: the writer makes it
		// durable (see below), and asks etcd nothing more.
		if err := shared.SyncMark(b.dir); err != nil {
			return shared.DirErrOr(b.dir, err)
		}
		b.claimed.Store(true)
		return nil
	}
	mark, found, err := shared.ReadMark(b.dir)
	if err == nil && !found {
		mark, found, err = b.unmarked(ctx)
	}
	switch {
	case errors.Is(err, shared.ErrBadMark):
		return fmt.Errorf("%w: %w; %s", ErrOtherFleet, err, b.markRemedy())
	case err != nil:
		return shared.DirErrOr(b.dir, err)
	case !found && !write:
		return nil
	}
	// A mark is written only after its fleet's ID was made: a marked dir
	// whose fleet has no ID is another fleet's, and this one gets none.
	id, err := b.fleetID(ctx, !found)
	if err != nil {
		return err
	}
	if !found {
		mark, err = shared.WriteMark(b.dir, shared.Mark{ID: id, Prefix: b.meta.Prefix()})
		if errors.Is(err, shared.ErrBadMark) {
			return fmt.Errorf("%w: %w; %s", ErrOtherFleet, err, b.markRemedy())
		}
		if err != nil {
			return shared.DirErrOr(b.dir, err)
		}
	}
	if mark.ID != id {
		return b.otherFleet(mark, id)
	}
	if !write {
		// An audit writes nothing, not even an fsync (a read-only
		// mount): a writer of this Backend makes the mark durable.
		b.matched.Store(true)
		return nil
	}
	if found {
		// Found, not written here: it may be another worker's, renamed
		// into place and not yet fsynced into the dir.
		if err := shared.SyncMark(b.dir); err != nil {
			return shared.DirErrOr(b.dir, err)
		}
	}
	b.claimed.Store(true)
	return nil
}

// otherFleet is the refusal of a dir marked for another fleet than this
// one, whose ID is id ("" for none).
func (b *Backend) otherFleet(mark shared.Mark, id string) error {
	this := fmt.Sprintf("this fleet (etcd prefix %q) has the ID %s", b.meta.Prefix(), id)
	if id == "" {
		this = fmt.Sprintf("this fleet (etcd prefix %q) has no ID in etcd (%s)", b.meta.Prefix(), b.meta.FleetIDKey())
	}
	return fmt.Errorf("%w: %s is marked (%s) for the fleet with the ID %s, made under etcd prefix %q; %s. Two fleets on one transcripts dir sweep each other's transcripts as orphans: give each fleet its own dir; %s",
		ErrOtherFleet, b.dir, shared.MarkName, mark.ID, mark.Prefix, this, b.markRemedy())
}

// markedForAnother is the audit of a read that found no record (a
// resolve's absent): ErrOtherFleet where the dir's mark names another
// fleet than this one (a prefix that differs by a slip, "sessdb" for
// "/sessdb", under which every key has no record; another cluster), as
// a writer's claim would refuse it, else nil. Before, every resolve under
// such a prefix was absent, exit 0, a cold start whose promote was then
// refused. It costs a read of the mark and one of the fleet's ID, only
// where no record was found, once a Backend. A dir without a mark, or
// with one that cannot be read, or an ID etcd does not give now, is left
// to the writers (the read's answer stands).
func (b *Backend) markedForAnother(ctx context.Context) error {
	if b.claimed.Load() || b.matched.Load() {
		return nil
	}
	mark, found, err := shared.ReadMark(b.dir)
	if err != nil || !found {
		return nil
	}
	id, err := b.fleetID(ctx, false)
	switch {
	case err != nil:
		return nil
	case mark.ID != id:
		return b.otherFleet(mark, id)
	}
	b.matched.Store(true)
	return nil
}

// unmarked judges a dir without a mark before this fleet's first writer
// marks it: one that holds key dirs is marked only by a fleet with a
// record, and one that holds none only by a fleet with no record, or
// with records and no ID (from before marks), and never one whose key
// dirs hold a sessions root's files (sessionsRootFile). A fleet with none (its
// prefix a slip of the fleet's, another cluster, a fleet whose etcd data
// was lost) would mark the dir of a fleet from before marks its own,
// sweep that fleet's transcripts as orphans and lock it out; one with
// records and an ID would write its promotions where no other host
// reads them (the empty dir under an export not mounted). found: another
// worker marked the dir meanwhile (a worker marks it before it makes a
// key dir), which claim judges as any mark. An audit (write unset)
// refuses both as the writers do, so that a dry run plans nothing its run
// refuses (a check of a fleet with no record on a dir of key dirs called
// every transcript there an orphan, and reap --dry-run planned to sweep
// them).
func (b *Backend) unmarked(ctx context.Context) (mark shared.Mark, found bool, err error) {
	if err := b.at(hookUnmarked, ""); err != nil {
		return mark, false, err
	}
	var has bool
	if err := b.retried(ctx, func(c context.Context) (err error) {
		has, err = b.meta.HasRecords(c)
		return err
	}); err != nil {
		return mark, false, err
	}
	// A fleet with records and an ID marked its dir when it made the ID,
	// before its first record: an unmarked dir with no key dir is not the
	// one its records name (the empty directory under a mount point whose
	// export did not mount on this host, a mistyped path that exists).
	// Marked, every promotion would write its generation there, where no
	// other host reads it, and commit it over the key's conversation.
	var id string
	if has {
		if id, err = b.fleetID(ctx, false); err != nil {
			return mark, false, err
		}
	}
	root, err := fsat.OpenDir(b.dir)
	if err != nil {
		return mark, false, err
	}
	defer root.Close()
	names, err := sharedfs.ReadDirNames(root)
	if err != nil {
		return mark, false, err
	}
	keys := slices.DeleteFunc(names, func(n string) bool { return !etcdmeta.ValidKey(n) })
	// A dir of key dirs holding a sessions root's files is a sessions
	// root (a worker's old PI_SESSIONS_DIR given as the transcripts dir),
	// never a fleet's dir from before marks: marked, every promotion would
	// write its generation there, where no other host reads it. A fleet
	// with no record is refused such a dir anyway, but told what it is,
	// not that its key dirs are another fleet's, to be moved aside.
	rootFile := ""
	if len(keys) > 0 {
		rootFile = sessionsRootFile(root, keys)
	}
	if (has && id == "" || has == (len(keys) > 0)) && rootFile == "" {
		// A fleet with records and no ID (from before marks) marks any
		// dir; one with records on a dir of key dirs (from before marks,
		// or its mark removed by an operator) marks it; one with none on
		// a dir with none marks it too.
		return mark, false, nil
	}
	if mark, found, err = shared.ReadMark(b.dir); found || err != nil {
		return mark, found, err
	}
	if rootFile != "" {
		return mark, false, fmt.Errorf("%w: %s has no mark (%s) and holds %s, a sessions root's file: it is a sessions root (a worker's PI_SESSIONS_DIR?), not a fleet's transcripts dir, whose key dirs hold generation files alone; marked, every promotion would write there, where no other host reads it. Point the fleet at its own transcripts dir (is PI_SESSIONS_TRANSCRIPTS_DIR its path?); a sessions root moves into the fleet by sessdb migrate --to etcd (docs/fleet.md)",
			ErrOtherFleet, b.dir, shared.MarkName, rootFile)
	}
	if has {
		return mark, false, fmt.Errorf("%w: %s has no mark (%s) and no key dir, but this fleet (etcd prefix %q) has records and the ID %s, made when it marked its transcripts dir: its records name files in that dir, not here (is the shared dir mounted on this host? is PI_SESSIONS_TRANSCRIPTS_DIR its path?). Point the fleet at its dir; if this empty dir is to be the fleet's from now on (its own lost for good), delete the fleet's ID (etcdctl del %s) and run again (docs/fleet.md)",
			ErrOtherFleet, b.dir, shared.MarkName, b.meta.Prefix(), id, etcdctlKey(b.meta.FleetIDKey()))
	}
	held, they, their, dirs := fmt.Sprintf("%d key dirs (%s among them)", len(keys), slices.Min(keys)), "they are", "their", "key dirs"
	if len(keys) == 1 {
		held, they, their, dirs = fmt.Sprintf("1 key dir (%s)", keys[0]), "it is", "its", "key dir"
	}
	return mark, false, fmt.Errorf("%w: %s holds %s and no mark (%s), and this fleet (etcd prefix %q) has no record: %s another fleet's (from before marks), or this fleet's from before its etcd data was lost, and this fleet would sweep %s transcripts as orphans. Give this fleet its own transcripts dir, or move the %s aside (docs/fleet.md)",
		ErrOtherFleet, b.dir, held, shared.MarkName, b.meta.Prefix(), they, their, dirs)
}

// rootFilesLooked bounds how many key dirs sessionsRootFile looks in: every
// key dir of a sessions root holds its files, and a fleet's dir from
// before marks is looked at once, when it is marked.
const rootFilesLooked = 64

// sessionsRootFile is the first of a sessions root's files (meta.db,
// current.jsonl) found in the first rootFilesLooked of keys, the key dirs
// of dir, as "KEY/NAME", or "" when none holds one. A fleet writes
// neither name in a key dir. What cannot be looked at is passed by.
func sessionsRootFile(dir *os.File, keys []string) string {
	keys = slices.Sorted(slices.Values(keys))
	for _, key := range keys[:min(len(keys), rootFilesLooked)] {
		kd, err := fsat.OpenDirAt(dir, key)
		if err != nil {
			continue
		}
		for _, name := range []string{db.FileName, store.TranscriptName} {
			if _, err := fsat.LstatAt(kd, name); err == nil {
				kd.Close()
				return key + "/" + name
			}
		}
		kd.Close()
	}
	return ""
}

// fleetID is the fleet's ID (etcdmeta's FleetID), asked again after a
// backoff while etcd is unavailable, within the request timeout and ctx:
// a leader change fails a request at once, and making the ID lands once
// however often it is sent (guarded by the key's absence).
func (b *Backend) fleetID(ctx context.Context, create bool) (id string, err error) {
	err = b.retried(ctx, func(c context.Context) (err error) {
		id, err = b.meta.FleetID(c, create)
		return err
	})
	return id, err
}

// retried is untilAnswered within the request timeout and ctx.
func (b *Backend) retried(ctx context.Context, ask func(context.Context) error) error {
	c, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return untilAnswered(c, ask)
}

// markRemedy is what an operator does when the mark is wrong.
func (b *Backend) markRemedy() string {
	return fmt.Sprintf("if the dir is this fleet's (its etcd data restored from a snapshot older than the mark, or its fleet key not copied to a new prefix), remove %s/%s and run again (docs/fleet.md)", b.dir, shared.MarkName)
}
