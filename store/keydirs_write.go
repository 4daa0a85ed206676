package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/callerctx"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// openKeyDirForWrite makes the sessions root (noted for MadeRoot) and the key dir if need be
// (each name made durable, a new key dir's and the root's even if a rival
// made them) and opens the key dir without following a link: a link or
// non-directory there is fsat.ErrNotDir.
func (s *Store) openKeyDirForWrite(key string) (*os.File, error) {
	made, err := durable.MkdirAll(s.disk.disk(), s.root)
	if err != nil {
		return nil, err
	}
	if made {
		s.madeRoot.Store(true)
	}
	root, err := fsat.OpenDir(s.root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	created, err := s.disk.mkdir(root, key, 0o700)
	if err != nil {
		return nil, err
	}
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return nil, err
	}
	// The key dir's own name must survive a power cut too, or the first
	// promotion of a key could vanish with it. A dir found with no meta.db
	// in it may be a rival's first promotion that has not fsynced the root
	// yet: this promotion must not be acknowledged on that fsync. (A
	// legacy key pays it at its first promotion only.)
	if !created {
		_, err := fsat.LstatAt(kd, db.FileName)
		created = fsat.IsNotExist(err)
	}
	if created {
		if err := s.disk.syncDir(root); err != nil {
			kd.Close()
			return nil, err
		}
		// So may the root's own name, when a rival's first promotion
		// made the root just now: makeDirAll found it and synced nothing.
		// One more fsync per new key, where one per promotion would be
		// the hot path's.
		if err := s.syncParent(s.root); err != nil {
			kd.Close()
			return nil, err
		}
	}
	return kd, nil
}

// syncParent fsyncs the directory that holds path's name (see
// durable.SyncParent).
func (s *Store) syncParent(path string) error { return durable.SyncParent(s.disk.disk(), path) }

// MadeRoot reports whether a promotion of this Store made its sessions
// root (durable.MkdirAll: each name made durable, or a root a first
// promotion made would vanish in a power cut with it). A root another
// process made, even while this one was making it, is not this Store's.
func (s *Store) MadeRoot() bool { return s.madeRoot.Load() }

// keyState is what a key holds, as the writer sees it under the exclusive
// lock once any promotion in flight is settled.
type keyState struct {
	base   Base
	file   *unix.Stat_t   // the transcript in place, if a regular file
	record *db.Transcript // the identity the next pending entry keeps as Prev
}

// currentBase is the key's base under the writer's lock (see baseOf). A
// committed promotion whose temp was lost before its rename (gone, or
// damaged and swept) leaves a record that describes no file; if the
// transcript in place is the generation before it, that generation is what
// the key holds, as Resolve serves it.
func currentBase(ctx context.Context, kd *os.File, sc db.Sidecars) (keyState, error) {
	var ks keyState
	var err error
	if ks.file, err = transcriptInPlace(kd); err != nil {
		return ks, err
	}
	if ks.record, err = heldRecord(ctx, kd, sc, ks.file); err != nil {
		return ks, err
	}
	// The writer's base carries the file in place as well as the record,
	// so that a ticket based on the file (a legacy key, since migrated)
	// can be compared with it.
	ks.base = baseOf(ks.record, nil)
	if ks.file != nil && ks.file.Size > 0 {
		ks.base.File = fileID(ks.file)
	}
	return ks, nil
}

// fellBack reports whether meta.db runs on its older meta page because
// the other is damaged, and that older commit does not describe the
// transcript in place. A power cut during a commit leaves the same page
// damaged, but then the commit never returned, its rename never happened,
// and the older commit still describes what is in place: writing on is
// right. A damaged page that held an acknowledged commit is told apart by
// the transcript it renamed into place. A transcript that could not be
// read (no descriptor left for its open, an I/O error) tells nothing
// apart: that is the read's error, not a fallback.
func fellBack(ctx context.Context, kd *os.File, m db.MetaPages, cur keyState) (bool, error) {
	if m.Pages[0].Valid() && m.Pages[1].Valid() {
		return false, nil
	}
	rec := cur.record
	if rec == nil || cur.file == nil {
		// Nothing to compare: a first commit torn by a power cut leaves a
		// legacy key's transcript in place and no record, and must not
		// stop the key for good.
		return false, nil
	}
	if err := faults.At(faults.BaseTranscriptRead); err != nil {
		return false, err
	}
	ok, err := fileCheck(ctx, kd, TranscriptName, rec.Size, rec.CRC32C)
	return !ok && err == nil, err
}

// transcriptInPlace is the lstat of current.jsonl when it is a regular
// file, nil when nothing or anything else is there.
func transcriptInPlace(kd *os.File) (*unix.Stat_t, error) {
	st, err := fsat.LstatAt(kd, TranscriptName)
	switch {
	case err == nil && fsat.IsRegular(&st):
		return &st, nil
	case err == nil || fsat.IsNotExist(err):
		return nil, nil
	}
	return nil, err
}

// heldRecord is the identity of the transcript a key holds, once any
// promotion in flight is settled: its record's, unless a committed
// promotion's temp was lost before its rename. Then the key holds the
// generation before it where that is in place (lostPromotion), and
// nothing where nothing is in place and there was nothing before. A
// writer's Begin and a resolve's cold start take it as the key's base
// alike, so that a job cold-started on such a key promotes onto it, and
// the retry of the lost promotion's own ticket is no repeat.
//
// A read of the transcript in place that failed (no descriptor left, an
// I/O error) is its error: it says nothing of which generation is there.
func heldRecord(ctx context.Context, kd *os.File, sc db.Sidecars, st *unix.Stat_t) (*db.Transcript, error) {
	lost, err := lostPromotion(ctx, kd, sc, st)
	switch p := sc.Pending; {
	case err != nil:
		return nil, err
	case lost:
		return p.Prev, nil
	case p != nil && p.Prev == nil && st == nil && sc.Transcript != nil && sc.Transcript.Gen == p.Gen:
		return nil, nil
	}
	return sc.Transcript, nil
}

// lostPromotion reports whether the transcript in place (st) is the
// generation before the record's, which is what a committed promotion
// whose temp was lost before its rename leaves. Each promotion appends, so
// sizes tell the two apart without a read in all but the rarest case.
func lostPromotion(ctx context.Context, kd *os.File, sc db.Sidecars, st *unix.Stat_t) (bool, error) {
	p := sc.Pending
	if p == nil || p.Prev == nil || sc.Transcript == nil || st == nil || st.Size != p.Prev.Size {
		return false, nil
	}
	if err := faults.At(faults.BaseTranscriptRead); err != nil {
		return false, err
	}
	rec := sc.Transcript
	if st.Size == rec.Size {
		if ok, err := fileCheck(ctx, kd, TranscriptName, rec.Size, rec.CRC32C); ok || err != nil {
			return false, err
		}
	}
	return fileCheck(ctx, kd, TranscriptName, p.Prev.Size, p.Prev.CRC32C)
}

// writeTemp copies the staged transcript into a new temp file in the key
// dir, adding the missing final newline of a torn tail, and fsyncs it.
func (s *Store) writeTemp(kd *os.File, src io.ReaderAt, srcSize int64, torn bool) (name string, size int64, sum uint32, err error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", 0, 0, err
	}
	name = tmpPrefix + hex.EncodeToString(rnd[:])
	f, err := s.disk.createTemp(kd, name)
	if err != nil {
		return "", 0, 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			s.disk.remove(kd, name)
		}
	}()
	h := crc32.New(castagnoli)
	w := io.MultiWriter(f, h)
	size, err = io.Copy(w, io.NewSectionReader(src, 0, srcSize))
	if err == nil && size != srcSize {
		err = fmt.Errorf("copy to %s: the staged file shrank from %d to %d bytes", name, srcSize, size)
	}
	if err == nil && torn {
		_, err = w.Write([]byte{'\n'})
		size++
	}
	if err == nil {
		err = s.fault(faults.PromoteAfterTempWrite)
	}
	if err == nil {
		err = s.disk.syncFile(f)
	}
	if err == nil {
		err = s.fault(faults.PromoteAfterTempSync)
	}
	return name, size, h.Sum32(), err
}

// rollForward finishes a promotion in flight (committed, not renamed): the
// temp it names is moved into place if it is still whole, and then, with
// clear, the pending entry is cleared by a commit of its own (Promote
// passes false, because its own commit replaces the entry). A temp that is
// not whole is left for the sweep, and its entry stays whatever clear
// says: it keeps the generation before it, which a resolve then falls
// back to where that is in place (else promotion-lost); cleared, the
// record would name only the lost generation, and the key would
// cold-start whatever is in place. It reports whether p was in flight. A
// read of the temp that ctx stopped is ctx's error: nothing is renamed or
// swept, and the next writer rolls it forward.
func (s *Store) rollForward(ctx context.Context, kd *os.File, d *db.DB, p *db.Pending, clear bool) (bool, error) {
	if !pendingInFlight(kd, p) {
		return false, nil
	}
	// A temp that could not be read is neither whole nor damaged: the
	// writer stops here, and nothing is swept, or a transient I/O error
	// would remove the only copy of a committed promotion.
	whole, err := s.tempWhole(ctx, kd, p)
	if err != nil {
		return true, fmt.Errorf("roll forward %s: %w", p.Tmp, err)
	}
	if whole {
		if err := s.disk.rename(kd, p.Tmp, TranscriptName); err != nil {
			return true, err
		}
		if err := s.disk.syncDir(kd); err != nil {
			return true, err
		}
		s.opts.Logger.Info().Str("tmp", p.Tmp).Uint64("gen", p.Gen).Msg("session_rolled_forward")
	}
	if !clear || !whole {
		return true, nil
	}
	return true, d.Update(func(tx *db.Tx) error { return tx.PutPending(nil) })
}

// tempWhole reports whether p's temp is whole: exactly what its commit
// recorded (one damaged or replaced since is swept, never renamed into
// place). It is for a writer about to act on the answer: a temp it could
// not read, or whose read ctx stopped, is an error, not a damaged temp.
func (s *Store) tempWhole(ctx context.Context, kd *os.File, p *db.Pending) (bool, error) {
	if err := s.fault(faults.RollForwardTempRead); err != nil {
		return false, err
	}
	return fileCheck(ctx, kd, p.Tmp, p.Size, p.CRC32C)
}

// pendingTempWhole is tempWhole for a reader (a resolve's base, check's
// pending-promotion finding): a temp it could not read, or whose read ctx
// stopped, is an error, not a damaged temp.
func pendingTempWhole(ctx context.Context, kd *os.File, p *db.Pending) (bool, error) {
	if err := faults.At(faults.PendingTempCheck); err != nil {
		return false, err
	}
	return fileCheck(ctx, kd, p.Tmp, p.Size, p.CRC32C)
}

// PendingTempWhole reports whether the temp of p, a promotion in flight
// in the key dir kd (opened with O_DIRECTORY|O_NOFOLLOW), is whole: a
// regular file holding exactly what its commit recorded, which a
// roll-forward renames into place (any other it removes, or leaves where
// it is not a regular file). It is for the dry runs of migrate and of
// the fleet's migrations, which plan what the roll-forward will leave: a
// read that failed, or that ctx stopped (it is looked at before every
// megabyte), is an error. A nil ctx is context.Background(); one that
// breaks Go's contract is held to it (callerctx.Of).
func PendingTempWhole(ctx context.Context, kd *os.File, p *db.Pending) (bool, error) {
	ctx = callerctx.Of(ctx)
	if err := faults.At(faults.PendingTempCheck); err != nil {
		return false, err
	}
	whole, err := fileCheck(ctx, kd, p.Tmp, p.Size, p.CRC32C)
	if err == nil {
		err = ctx.Err()
	}
	return whole && err == nil, err
}

// fileCheck reports whether name in kd is a regular file of size bytes
// with CRC32C sum, reading no more than size+1 bytes of it. It returns an
// error where name could not be read (an open, fstat or read that failed):
// that says nothing of the file. Nothing at the name, or anything but a
// regular file, does not match. A read ctx stopped is ctx's error
// (ReadCRC32C): it says nothing of the file either.
func fileCheck(ctx context.Context, kd *os.File, name string, size int64, sum uint64) (bool, error) {
	f, st, err := fsat.OpenRegularAt(kd, name)
	switch {
	case fsat.IsNotExist(err), errors.Is(err, fsat.ErrNotRegular):
		return false, nil
	case err != nil:
		return false, err
	}
	defer f.Close()
	if st.Size != size {
		return false, nil
	}
	return sameContent(ctx, f, size, sum)
}

// sameContent reports whether f holds exactly size bytes with CRC32C sum,
// reading no more than size+1 bytes of it. Its error is the read's, or
// ctx's where ctx stopped it.
func sameContent(ctx context.Context, f *os.File, size int64, sum uint64) (bool, error) {
	n, got, err := ReadCRC32C(ctx, f, size+1)
	if err != nil {
		return false, err
	}
	return n == size && uint64(got) == sum, nil
}

// sweepTemps removes promotion temps, and reports whether it removed
// any: the removals are durable only once kd is fsynced. Only a holder of
// the key's exclusive lock writes a temp, and a promotion in flight has
// just been rolled forward, so every temp found here is debris, whatever
// its age. A temp is a regular file: a link, a FIFO or a directory at such
// a name is no promotion's, and is left, as removeTemps leaves it (check
// reports it, link or not-a-regular-file, as a problem --repair leaves).
func (s *Store) sweepTemps(kd *os.File) (removed bool) {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return false
	}
	for _, n := range names {
		if !strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		if st, err := fsat.LstatAt(kd, n); err == nil && fsat.IsRegular(&st) && s.disk.remove(kd, n) == nil {
			removed = true
		}
	}
	return removed
}

// RollForward finishes a promotion of key that committed but was not
// renamed into place (the process died between the two), and removes
// promotion temps no record names. A promotion whose temp no longer
// matches its record is not finished: its temp is removed and its record
// left pending, so that a resolve serves the generation before it if
// that is in place. It takes the key's exclusive lock; a
// key with no meta.db has nothing to roll forward and is left untouched.
// It reports whether a pending promotion was settled.
func (s *Store) RollForward(key string) (bool, error) {
	return s.RollForwardContext(context.Background(), key)
}

// RollForwardContext is RollForward, its read of a promotion's temp (a
// file of gigabytes, possibly) stopped once ctx is done: it then returns
// ctx's error with nothing renamed or swept, and the next writer rolls
// the promotion forward. The lock's wait is RollForward's. A nil ctx is
// context.Background(); one that breaks Go's contract is held to it
// (callerctx.Of).
func (s *Store) RollForwardContext(ctx context.Context, key string) (bool, error) {
	settled, _, err := s.rollForwardExamined(callerctx.Of(ctx), key, nil)
	return settled, err
}

// rollForwardExamined is RollForward for a repair that may go on to move
// meta.db aside on the proof of a look that saw the file as examined: it
// also returns the file as the roll-forward left it, read under the same
// lock, if the file was still as examined before it (nil otherwise, and
// for a nil examined). The proof then stands for that file, the repair's
// own commit included, and for no other. ctx's end stops the read of the
// temp (check --repair's interrupt): nothing is renamed or swept.
func (s *Store) rollForwardExamined(ctx context.Context, key string, examined *unix.Stat_t) (bool, *unix.Stat_t, error) {
	if !ValidKey(key) {
		return false, nil, fmt.Errorf("roll forward %q: %w", key, ErrInvalidKey)
	}
	root, err := s.openRoot()
	if err != nil {
		return false, nil, err
	}
	defer root.Close()
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return false, nil, err
	}
	defer kd.Close()
	if _, err := fsat.LstatAt(kd, db.FileName); err != nil {
		if fsat.IsNotExist(err) {
			return false, nil, nil
		}
		return false, nil, err
	}
	d, sc, err := db.OpenSidecars(kd, s.writerOptions("roll forward", kd, key), true)
	if err != nil {
		return false, nil, err
	}
	defer d.Close()
	// Moved aside (check --repair --quarantine) while this waited for the
	// lock: nothing in the dir moved aside is to change.
	if err := stillAtKey("roll forward", s.root, kd, key); err != nil {
		return false, nil, err
	}
	same := examined != nil && unchangedSince(kd, examined)
	settled, err := s.rollForward(ctx, kd, d, sc.Pending, true)
	if err != nil {
		return false, nil, err
	}
	// check --repair reports the temps removed once this returns: a power
	// cut must not bring back a damaged temp it said it removed.
	if s.sweepTemps(kd) {
		if err := s.disk.syncDir(kd); err != nil {
			return settled, nil, err
		}
	}
	var after *unix.Stat_t
	if st, err := fsat.LstatAt(kd, db.FileName); same && err == nil {
		after = &st
	}
	return settled, after, nil
}

// unchangedSince reports whether kd's meta.db is still the file examined
// saw, unwritten since: the same inode, size, modification and change
// times.
func unchangedSince(kd *os.File, examined *unix.Stat_t) bool {
	now, err := fsat.LstatAt(kd, db.FileName)
	return err == nil && now.Dev == examined.Dev && now.Ino == examined.Ino &&
		now.Size == examined.Size && now.Mtim == examined.Mtim && now.Ctim == examined.Ctim
}
