package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/migrate"
	"sessdb/store"
)

// hostKey is a key dir as ToEtcd reads it, under its meta.db's lock.
type hostKey struct {
	lock    *db.DB
	sc      db.Sidecars
	history []db.HistoryEntry
	// file is the transcript in place (in a dry run, a promotion in
	// flight's temp), nil when there is none; size and sum are its bytes.
	file *os.File
	size int64
	sum  uint32
	// rolled says a promotion in flight was rolled forward first (the
	// key dir changed); cut, that ctx's end stopped a read (a dry run's
	// of the temp, a roll-forward's, the transcript's checksum) before
	// anything more was done.
	rolled, cut bool
}

func (k *hostKey) close() {
	if k.file != nil {
		k.file.Close()
	}
	if k.lock != nil {
		k.lock.Close()
	}
}

// copiedWhole checks the copy of k's transcript just written to file
// under dir (n bytes of CRC32C sum) against what k read under its lock,
// and removes the file when they differ: the key dir's transcript was
// changed while it was copied, by something that ignores the lock.
func (k *hostKey) copiedWhole(dir, file string, n int64, sum uint32) error {
	if n == k.size && sum == k.sum {
		return nil
	}
	shared.Remove(dir, file)
	return fmt.Errorf("copy %s: %w", k.file.Name(), errChanged)
}

// toEtcd moves one entry of the root into etcd. The key dir's lock is
// held from the read to the etcd commit, so what is committed is what the
// key held. end says whether ctx's end cut it short (see walk): before
// anything was written or rolled forward, the key is not printed.
func (m *migration) toEtcd(ctx context.Context, name string) (r MigrateReport, end keyEnd) {
	r.Key = name
	kd, ok := openEntry(m.rootDir, name, &r)
	if !ok {
		return r, ran
	}
	defer kd.Close()
	k := m.readHost(ctx, kd, name, &r)
	defer k.close()
	if k.cut {
		if k.rolled {
			// Stopped as it read the transcript the roll-forward put
			// in place: the key dir changed, nothing else was done.
			fail(&r, fmt.Errorf("%w: left alone, rolled forward only", ctx.Err()))
			return r, stopPrinted
		}
		return r, stopUnprinted
	}
	if r.Action != "" {
		return r, ran
	}
	rec := m.recordToMove(k, &r)
	r.Values = valuesOf(rec)
	// stop is the end of a key that ctx's end stopped with err, nothing
	// written: cut, unless its promotion in flight was rolled forward.
	stop := func(err error) (MigrateReport, keyEnd) {
		if !k.rolled {
			return r, stopUnprinted
		}
		fail(&r, fmt.Errorf("%w: left alone, rolled forward only", err))
		return r, stopPrinted
	}

	if err := m.notTried(); err != nil {
		fail(&r, fmt.Errorf("%w: left alone", err))
		return r, ran
	}
	if err := m.b.at(hookMigrateRead, name); err != nil {
		fail(&r, err)
		return r, ran
	}
	st, err := m.b.readIn(ctx, name, m.b.meta.Get)
	if cerr := stopped(ctx, err); cerr != nil {
		return stop(cerr)
	}
	if err != nil {
		m.failEtcd(ctx, &r, err, ": left alone")
		return r, ran
	}
	if st.Rev != 0 || len(st.History) > 0 {
		if cerr := m.judgeExisting(ctx, &r, rec, hostHistory(k.history), st, lostPromotion(k.sc, k.file != nil, k.size, k.sum)); cerr != nil {
			return stop(cerr)
		}
		if r.Action == migrate.Already && sameGen(st.Record.Transcript, rec.Transcript) {
			if cerr := m.writeMissing(ctx, &r, k, st.Record.Transcript); cerr != nil {
				return stop(cerr)
			}
		}
		return r, ran
	}
	written := []string{m.b.meta.RecordKey(name)}
	if rec.Transcript != nil {
		written = slices.Insert(written, 0, fmt.Sprintf("%s/%016x-<random>.jsonl", name, rec.Transcript.Gen))
	}
	if m.opts.DryRun {
		if rec.Transcript != nil {
			// What the run's write of the generation file meets at the
			// key's name in the transcripts dir fails it before anything
			// is written: the plan says so too.
			if err := shared.KeyDirErr(m.b.dir, name); err != nil {
				fail(&r, err)
				return r, ran
			}
		}
		r.Action, r.Written = migrate.Migrated, written
		return r, ran
	}

	var wrote, wroteWall time.Time
	if rec.Transcript != nil {
		// Before the write, as a promotion's Stage: a reaper ages the
		// file from its mtime, which a stall inside the write (its
		// fsyncs) does not move.
		wrote, wroteWall = time.Now(), m.b.now().Round(0)
		if err := m.b.at(hookMigrateCopy, name); err != nil {
			fail(&r, err)
			return r, ran
		}
		// ctx's end stops the copy between chunks; nothing is left of it.
		file, n, sum, err := shared.Write(ctx, m.b.dir, name, rec.Transcript.Gen, io.NewSectionReader(k.file, 0, 1<<62))
		if cerr := stopped(ctx, err); cerr != nil {
			return stop(cerr)
		}
		if err == nil {
			err = k.copiedWhole(m.b.dir, file, n, sum)
		}
		if err != nil {
			fail(&r, err)
			return r, ran
		}
		rec.Transcript.File, written[0] = file, file
		if err := faults.At(faults.ToEtcdWritten); err != nil {
			shared.Remove(m.b.dir, file)
			fail(&r, err)
			return r, ran
		}
	}
	// ctx ended once the copy was done (its fsyncs, its rename, the
	// directory's fsync: long on a slow file server) sends no create: the
	// file is removed, as a copy the end cut, and the key is left as it
	// was. A create sent would end at once all the same, unanswered, and
	// keep its file, the key printed failed as if it might have landed.
	if cerr := ctx.Err(); cerr != nil {
		if rec.Transcript != nil {
			shared.Remove(m.b.dir, rec.Transcript.File)
		}
		return stop(cerr)
	}
	// A create ctx's end cut short may have landed: the key is printed
	// failed, its file kept for its record or for reap (create), and a
	// re-run finds it migrated, or migrates it.
	switch cur, err := m.create(ctx, name, rec, hostHistory(k.history), wrote, wroteWall); {
	case cur != nil:
		cerr := m.judgeExisting(ctx, &r, rec, hostHistory(k.history), *cur, lostPromotion(k.sc, k.file != nil, k.size, k.sum))
		m.keptFile(&r, rec.Transcript)
		if cerr != nil {
			// Stopped as it read the fleet's file that holds the key:
			// nothing landed (the create found the key held). A file
			// create kept, or a roll-forward, is said; else the key is
			// as never started.
			if len(r.Written) == 0 && !k.rolled {
				return r, stopUnprinted
			}
			fail(&r, fmt.Errorf("%w: left alone", cerr))
			if k.rolled {
				r.Cause += ", rolled forward only"
			}
			return r, stopPrinted
		}
		return r, ran
	case err != nil:
		m.failEtcd(ctx, &r, err, "")
		m.keptFile(&r, rec.Transcript)
		if stopped(ctx, err) != nil {
			return r, stopPrinted
		}
		return r, ran
	}
	if err := faults.At(faults.ToEtcdCommitted); err != nil {
		fail(&r, err)
		return r, ran
	}
	r.Action, r.Written = migrate.Migrated, written
	return r, ran
}

// keptFile names in r's Written the generation file t names that this
// run wrote and create kept, its key not migrated: a try whose answer was
// lost may have landed, so the file may be its record's, and is left for
// reap to judge. What is in the transcripts dir is what the report says
// was written, as for a failed key of every direction.
func (m *migration) keptFile(r *MigrateReport, t *etcdmeta.Transcript) {
	if t == nil || t.File == "" {
		return
	}
	f, err := shared.Open(m.b.dir, t.File)
	if err != nil {
		return
	}
	f.Close()
	if !slices.Contains(r.Written, t.File) {
		r.Written = append(r.Written, t.File)
	}
}

// writeMissing brings back the generation file of a key etcd already
// holds at the key dir's generation (held) when it is missing from the
// transcripts dir (deleted by hand, a restore that left it out), from the
// key dir it came from: without it the fleet cold-starts the key as
// transcript-replaced after every run. It is written at the record's own
// name, so the record, its revision (every job's ticket) and the history
// stay as they are. Only bytes of that generation are written (its size
// and CRC32C, as the record says); a key dir that no longer holds them,
// and anything at the name, whatever it holds (check's to judge), get
// nothing. r says what was (or, in a dry run, would be) written. ctx's
// end stops the copy, nothing left of it: its error is returned, r as
// judged before the copy.
func (m *migration) writeMissing(ctx context.Context, r *MigrateReport, k *hostKey, held *etcdmeta.Transcript) error {
	if held == nil || k.file == nil {
		return nil
	}
	if key, _, ok := shared.ParseName(held.File); !ok || key != r.Key {
		return nil // a record check calls undecodable: nothing is written for it
	}
	switch f, err := shared.Open(m.b.dir, held.File); {
	case err == nil:
		f.Close()
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil
	}
	if k.size != held.Size || uint64(k.sum) != held.CRC32C {
		r.Cause = fmt.Sprintf("its file %s is missing, and the key dir's transcript is not the generation its record describes (%d bytes, crc32c %s): not written again (resolve: transcript-replaced)",
			held.File, k.size, store.Checksum(k.sum))
		return nil
	}
	r.Written = []string{held.File}
	if m.opts.DryRun {
		r.Cause = "its file is missing: a run writes it again from the key dir"
		return nil
	}
	if err := m.b.at(hookMigrateCopy, r.Key); err != nil {
		r.Written = nil
		fail(r, err)
		return nil
	}
	n, sum, err := shared.WriteAgain(ctx, m.b.dir, held.File, io.NewSectionReader(k.file, 0, 1<<62))
	if cerr := stopped(ctx, err); cerr != nil {
		r.Written = nil
		return cerr
	}
	if err == nil {
		err = k.copiedWhole(m.b.dir, held.File, n, sum)
	}
	switch {
	case errors.Is(err, shared.ErrExists):
		r.Written = nil // another run wrote it meanwhile
	case err != nil:
		r.Written = nil
		fail(r, err)
	default:
		r.Cause = "its file was missing: written again from the key dir"
	}
	return nil
}

// openEntry opens an entry of a sessions root as a key dir, without
// following a link, or says in r why it is skipped or failed.
func openEntry(root *os.File, name string, r *MigrateReport) (*os.File, bool) {
	if !store.ValidKey(name) {
		r.Action, r.Cause = migrate.Skipped, "not a key (want 32 lowercase hex characters)"
		return nil, false
	}
	kd, err := fsat.OpenDirAt(root, name)
	switch {
	case err == nil:
		return kd, true
	case errors.Is(err, fsat.ErrNotDir):
		r.Action, r.Cause = migrate.Skipped, "not a real directory (a link, or not a directory): the store never follows it"
	case errors.Is(err, os.ErrNotExist):
		r.Action, r.Cause = migrate.Skipped, "vanished"
	default:
		fail(r, err)
	}
	return nil, false
}

// readHost reads the key dir kd under its meta.db's exclusive lock (a dry
// run: the shared one), a promotion in flight rolled forward first (a dry
// run reads its temp instead), or sets r's Action to what becomes of a
// key that is not moved.
func (m *migration) readHost(ctx context.Context, kd *os.File, name string, r *MigrateReport) *hostKey {
	k := &hostKey{}
	if _, err := fsat.LstatAt(kd, db.FileName); err != nil {
		if fsat.IsNotExist(err) {
			notRecorded(kd, r)
		} else {
			fail(r, err)
		}
		return k
	}
	write := !m.opts.DryRun
	open := func() bool {
		d, sc, err := m.openLocked(kd, name, write)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, errMovedAside) {
			r.Action, r.Cause = migrate.Skipped, "vanished"
			return false
		}
		if err != nil {
			lockErr(r, err)
			return false
		}
		k.lock, k.sc = d, sc
		return true
	}
	if !open() {
		return k
	}
	if !write {
		// The run opens meta.db for writing (its exclusive lock): one
		// this user may not write fails the key there, and so here.
		if err := migrate.MayOpenMetaDB(kd); err != nil {
			fail(r, err)
			return k
		}
	}
	transcript := store.TranscriptName
	if p := k.sc.Pending; store.PendingInFlight(kd, p) {
		if err := migrate.PendingTempNotRegular(kd, p); err != nil {
			fail(r, err) // no roll-forward settles it, a dry run's neither
			return k
		}
		if !write {
			var err error
			if transcript, err = dryRunTranscript(ctx, kd, p, r); err != nil {
				k.cut = stopped(ctx, err) != nil
				fail(r, err)
				return k
			}
		} else {
			// RollForward takes the key's lock itself; the in-process lock
			// would make it wait for this one until its timeout.
			k.lock.Close()
			k.lock = nil
			if _, err := m.st.RollForwardContext(ctx, name); err != nil {
				// Stopped as it read the temp: nothing renamed or swept.
				if k.cut = stopped(ctx, err) != nil; !k.cut {
					lockErr(r, err)
				}
				return k
			}
			k.rolled = true
			rolled := len(r.Oddities)
			odd(r, db.FileName, fmt.Sprintf("a pending promotion (gen %d)", p.Gen), "rolled forward first")
			if err := faults.At(faults.ToEtcdRolledForward); err != nil {
				fail(r, err)
				return k
			}
			if !open() {
				return k
			}
			tempRemoved(r, rolled, kd, p, k.sc)
			if store.PendingInFlight(kd, k.sc.Pending) {
				fail(r, fmt.Errorf("%s: %w", fsat.Join(kd, db.FileName), errNotSettled))
				return k
			}
		}
	}
	if sc := k.sc; sc.Transcript == nil && sc.PiVersion == nil && sc.Venue == nil && sc.ResumeChain == nil && sc.Context == nil {
		// No record at all: a migration or a first promotion that died
		// before its commit. The store judges the key by its legacy files.
		notRecorded(kd, r)
		return k
	}
	if err := k.lock.View(func(tx *db.Tx) (err error) { k.history, err = tx.History(0); return err }); err != nil {
		lockErr(r, err)
		return k
	}
	f, err := fsat.OpenAt(kd, transcript, unix.O_RDONLY, 0)
	switch {
	case err == nil:
	case fsat.IsNotExist(err):
		return k
	case errors.Is(err, unix.ELOOP):
		r.Action, r.Cause = migrate.Failed, "current.jsonl is a link: the store never follows it, and the fleet cannot hold it; left alone"
		return k
	default:
		fail(r, err)
		return k
	}
	k.file = f
	if st, err := fsat.Fstat(f); err != nil || !fsat.IsRegular(&st) {
		r.Action, r.Cause = migrate.Failed, "current.jsonl is not a regular file: the fleet cannot hold it; left alone"
		fail(r, err)
		return k
	}
	k.size, k.sum, err = checksum(ctx, f)
	if stopped(ctx, err) != nil {
		k.cut = true // the caller says whether a roll-forward ran
		return k
	}
	fail(r, err)
	return k
}

// notRecorded files a key dir with no record: one whose damaged meta.db
// a repair moved aside, and one in the legacy layout, are refused (ToEtcd
// moves meta.db keys only), each saying what settles it; one with nothing
// in it is skipped.
//
// A listing or lstat that failed (no descriptor left, an I/O error) cannot
// tell which: the key fails with that error, as any read of it that
// failed, rather than skipped as holding nothing.
func notRecorded(kd *os.File, r *MigrateReport) {
	names, err := fsat.ReadDirNames(kd)
	if err != nil && !fsat.IsNotExist(err) {
		fail(r, err)
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, store.AsidePrefix) {
			r.Action, r.Cause = migrate.Failed, "its damaged meta.db was moved aside by check --repair: settle the key first (sessdb check --repair --accept KEY, or --quarantine KEY)"
			return
		}
	}
	switch legacyLayout, err := legacyFiles(kd); {
	case legacyLayout:
		r.Action, r.Cause = migrate.Failed, "in the legacy layout (no record in meta.db): run sessdb migrate (to meta.db) first"
		return
	case err != nil:
		fail(r, err)
		return
	}
	r.Action, r.Cause = migrate.Skipped, "nothing to migrate: no record and no transcript"
}

// recordToMove is the record the fleet takes for the key: the one the
// store serves (see served), so that every job gets the verdict it got
// before, with an oddity for each way it is not the meta.db record as it
// stands.
func (m *migration) recordToMove(k *hostKey, r *MigrateReport) etcdmeta.Record {
	rec := recordOf(k.sc, "")
	t, kind := served(k.sc, k.file != nil, k.size, k.sum)
	switch kind {
	case servedUnrecorded:
		odd(r, store.TranscriptName, "not named by any record", "not moved: the fleet holds the key's stamps and no transcript (absent)")
	case servedAbsent:
		odd(r, store.TranscriptName, "absent", fmt.Sprintf("the record's gen %d is not moved: the key stays absent", rec.Transcript.Gen))
	case servedPrev:
		odd(r, store.TranscriptName, fmt.Sprintf("gen %d, the generation before a committed promotion (gen %d) whose temp was lost", t.Gen, rec.Transcript.Gen),
			fmt.Sprintf("moved as gen %d, as the store serves it", t.Gen))
	case servedMismatch:
		odd(r, store.TranscriptName, fmt.Sprintf("%d bytes, crc32c %s: does not match its record", k.size, store.Checksum(k.sum)),
			"moved as it is: the fleet cold-starts it as transcript-replaced, as the store does")
	}
	rec.Transcript = t
	return rec
}

// How a key dir's transcript relates to its record (see served).
const (
	servedPlain      = iota // the record's generation, in place
	servedNone              // no record, no transcript
	servedUnrecorded        // a transcript no record names
	servedAbsent            // a record whose transcript is gone
	servedPrev              // the generation before a promotion whose temp was lost
	servedMismatch          // a transcript that matches no record
)

// served is the generation a key dir with sidecars sc and a transcript in
// place (file; size bytes of CRC32C sum) holds, as the store judges it.
// The record's identity when the two agree. A committed promotion whose
// temp was lost leaves the generation before it in place, which the store
// serves: that one, with the record's promotion time (the expiry clock the
// store reads). A transcript that matches neither keeps the record's
// identity, which cold-starts it as transcript-replaced on either side. A
// record with no transcript in place, or none at all, is nil (absent).
func served(sc db.Sidecars, file bool, size int64, sum uint32) (*etcdmeta.Transcript, int) {
	t := transcriptOf(sc.Transcript)
	p := sc.Pending
	switch {
	case t == nil && file:
		return nil, servedUnrecorded
	case t == nil:
		return nil, servedNone
	case !file:
		return nil, servedAbsent
	case t.Size == size && t.CRC32C == uint64(sum):
		return t, servedPlain
	case p != nil && p.Prev != nil && p.Prev.Size == size && p.Prev.CRC32C == uint64(sum):
		return &etcdmeta.Transcript{Gen: p.Prev.Gen, Size: p.Prev.Size, CRC32C: p.Prev.CRC32C, PromotedAt: t.PromotedAt}, servedPrev
	}
	return t, servedMismatch
}

// judgeExisting files a key etcd already holds (state st) against rec,
// the record the key dir would give it (replaced: see lostPromotion): the
// same generation is Already (under other stamps, by no one lineage, a
// Conflict: stampConflict), a later one the fleet promoted from it is
// Already too, anything else a Conflict, left alone. ctx's end while it
// reads the fleet's file (descends) is that end's error, r unchanged: no
// telling whether the key is already there or in conflict.
func (m *migration) judgeExisting(ctx context.Context, r *MigrateReport, rec etcdmeta.Record, hist []etcdmeta.HistoryEntry, st etcdmeta.State, replaced *etcdmeta.Transcript) error {
	held := st.Record.Transcript
	_, moved, err := descends(ctx, m.b.dir, held, st.History, rec.Transcript, hist)
	if cerr := stopped(ctx, err); cerr != nil {
		return cerr
	}
	switch {
	case st.Rev != 0 && sameGen(held, rec.Transcript):
		if d := stampConflict(st.Record, rec, hist, st.History, replaced); d != "" {
			// The same bytes under other stamps, by another promotion:
			// another root's key (see stampConflict).
			r.Action = Conflict
			r.Cause = fmt.Sprintf("etcd holds %s, the same bytes as the key dir, but with other stamps (%s) and another history: left alone", describe(held), d)
			return nil
		}
		r.Action = migrate.Already
	case st.Rev != 0 && moved:
		r.Action = migrate.Already
		r.Cause = fmt.Sprintf("the fleet has promoted it since: etcd holds %s, the key dir %s", describe(held), describe(rec.Transcript))
	case st.Rev == 0:
		r.Action = Conflict
		r.Cause = fmt.Sprintf("etcd holds %s and no record for the key: left alone", countEntries(len(st.History), "history "))
		return nil
	default:
		if err := shared.DirErr(m.b.dir); err != nil {
			// descends could not read the fleet's file: no telling.
			fail(r, fmt.Errorf("%w: left alone", err))
			return nil
		}
		r.Action = Conflict
		r.Cause = fmt.Sprintf("etcd holds %s, the key dir %s, which it does not descend from: left alone", describe(held), describe(rec.Transcript))
		return nil
	}
	r.Values = valuesOf(st.Record)
	return nil
}

// create commits the key's record and history to etcd, again while etcd's
// answer is lost, within the request timeout and ctx (a try ctx's end
// cut short may have landed, as one gone unanswered: its file is kept,
// for its record or for reap). cur is the state of a key
// found held by another write; a try that finds its own record (it names
// this run's file) landed on an earlier try, one etcd's client sent
// again itself too. A conflict removes the file this run wrote, unless a
// try's answer was lost (it may be the record's).
//
// wrote is when the write of rec's file began, by the monotonic clock and
// by the wall clock alone (a suspended host advances only the latter): past
// commitWindow after it, nothing is sent, as a promotion's commit sends
// nothing, since a reaper may have swept the file by then as a dead
// write's.
func (m *migration) create(ctx context.Context, key string, rec etcdmeta.Record, hist []etcdmeta.HistoryEntry, wrote, wroteWall time.Time) (*etcdmeta.State, error) {
	ctx, cancel := context.WithTimeout(ctx, m.b.timeout)
	defer cancel()
	tooLate := func() error {
		if late := max(time.Since(wrote), m.b.now().Round(0).Sub(wroteWall)); rec.Transcript != nil && late > commitWindow {
			return fmt.Errorf("create %s: not sent: its file was written %v ago, past the %v a reaper waits for a record to name it (a stalled or suspended migration?)", key, late.Round(time.Second), commitWindow)
		}
		return nil
	}
	unsure := false
	for try := 0; ; try++ {
		if err := tooLate(); err != nil {
			if !unsure {
				shared.Remove(m.b.dir, rec.Transcript.File)
			}
			return nil, err
		}
		// Hedged (b.hedge), as a commit is: a Create lands once at most
		// however many times it is sent (its compare wants the key
		// empty), and a try sent again makes it unsure, so that a try
		// that finds the key holding its own record is the other landed.
		// A try sent again looks at the clocks first, as each round
		// does (Backend.hedge's late).
		err := m.b.hedge(ctx, func(c context.Context) error {
			_, err := m.b.meta.Create(c, key, rec, hist)
			return err
		}, func() { unsure = true }, tooLate)
		var ce *etcdmeta.ConflictError
		switch {
		case err == nil:
			return nil, nil
		case errors.As(err, &ce):
			// A record naming this run's file (its name has a random
			// part) is this create's, whether or not a try went
			// unanswered here: etcd's client sends a try again itself
			// when its answer is a context error while ctx lives, and
			// only the second try's conflict comes back. A record with no
			// file is taken for this create's only after a try that may
			// have landed, unanswered here or sent again by the client
			// (Resent): two runs at once write the same one.
			//
			// A promotion may have landed on the record between such a
			// try and the next (the client waits ~25 ms before it sends
			// again): the record then names the newer file, and its
			// history still holds the key dir's own newest entry, which
			// the create carried. Only a migration of this key dir writes
			// that entry, and its lock is held from the read to here: the
			// create is this run's. With no history to tell by, the file
			// is kept all the same, the record's or an orphan, for reap
			// to judge after the grace, as after a try unanswered here.
			t, mine := ce.Current.Record.Transcript, rec.Transcript
			maybe := unsure || ce.Resent
			if ce.Current.Rev != 0 && (maybe && mine == nil && t == nil || mine != nil && t != nil && t.File == mine.File ||
				maybe && len(hist) > 0 && etcdmeta.Holds(ce.Current.History, hist[len(hist)-1])) {
				return nil, nil // an earlier try landed
			}
			if !maybe && mine != nil {
				shared.Remove(m.b.dir, mine.File)
			}
			return &ce.Current, nil
		case errors.Is(err, etcdmeta.ErrUnavailable) && etcdmeta.Backoff(ctx, try):
			unsure = true
			continue
		default:
			// An error that followed a try gone unanswered (etcd's
			// silence, or a refusal of the credentials the TLS probe
			// found after it) may be of a create that landed: its file
			// is the record's.
			if etcdmeta.Unanswered(err) {
				unsure = true
			}
			if rec.Transcript != nil {
				if !unsure {
					shared.Remove(m.b.dir, rec.Transcript.File)
				} else {
					err = fmt.Errorf("%w (the file %s is left for reap)", err, rec.Transcript.File)
				}
			}
			return nil, err
		}
	}
}
