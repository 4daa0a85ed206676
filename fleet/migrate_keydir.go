package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/callerctx"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/migrate"
	"sessdb/store"
	"sessdb/store/legacy"
)

// storeTempPrefix is the store's name for a promotion's temp (tmpPrefix in
// store/store.go, not exported): a temp so named is the store's to serve
// while a pending entry names it, to roll forward, and to sweep, so a
// FromEtcd killed at any step leaves nothing the store does not know.
const storeTempPrefix = ".current.jsonl.tmp-"

// legacyFiles reports whether kd holds a transcript or a legacy sidecar.
// A look that fails otherwise than "gone" (an I/O error, the kernel out of
// memory) is its error, never "none": taken for none, FromEtcd would make
// meta.db beside a legacy conversation, which the db then outranks, and
// ToEtcd (notRecorded) skip the key as holding nothing (as migrate's scan
// of a key dir, lstatListed). A file found is the legacy layout whatever
// the other looks gave.
func legacyFiles(kd *os.File) (bool, error) {
	var failed error
	for _, n := range append([]string{legacy.TranscriptName}, legacy.SidecarNames()...) {
		err := faults.At(faults.FleetMigrateLegacyLstat)
		if err != nil {
			err = &os.PathError{Op: "lstat", Path: fsat.Join(kd, n), Err: err}
		} else {
			_, err = fsat.LstatAt(kd, n)
		}
		switch {
		case err == nil:
			return true, nil
		case !fsat.IsNotExist(err) && failed == nil:
			failed = err
		}
	}
	return false, failed
}

// fileID reads name in kd: whether there is an entry, and for a regular
// file its size and CRC32C (anything else is size -1, which no generation
// has). ctx's end stops the read (checksum).
func fileID(ctx context.Context, kd *os.File, name string) (present bool, size int64, sum uint32, err error) {
	f, err := fsat.OpenAt(kd, name, unix.O_RDONLY, 0)
	switch {
	case fsat.IsNotExist(err):
		return false, 0, 0, nil
	case errors.Is(err, unix.ELOOP):
		return true, -1, 0, nil
	case err != nil:
		return false, 0, 0, err
	}
	defer f.Close()
	st, err := fsat.Fstat(f)
	if err != nil {
		return false, 0, 0, err
	}
	if !fsat.IsRegular(&st) {
		return true, -1, 0, nil
	}
	size, sum, err = checksum(ctx, f)
	return true, size, sum, err
}

// dropped names a stamp the key dir has and rec has not: meta.db has no
// way to delete one, so a rollback cannot write rec over it.
func dropped(sc db.Sidecars, rec etcdmeta.Record) string {
	switch {
	case sc.PiVersion != nil && rec.PiVersion == nil:
		return "pi-version"
	case sc.Venue != nil && rec.Venue == nil:
		return "venue"
	case sc.ResumeChain != nil && rec.ResumeChain == nil:
		return "resume-chain"
	}
	return ""
}

// sweepStoreTemps removes the promotion temps in kd and returns their
// names. It is called under meta.db's exclusive lock with no promotion in
// flight, when every such temp is debris. A temp is a regular file: a
// link, a FIFO or a directory at such a name is no promotion's and is
// left, as the store's sweeps leave it (check reports it). A dry run
// (remove false) only lists them.
func sweepStoreTemps(kd *os.File, remove bool) []string {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return nil
	}
	var removed []string
	disk := sharedfs.FS()
	for _, n := range names {
		if len(n) <= len(storeTempPrefix) || n[:len(storeTempPrefix)] != storeTempPrefix {
			continue
		}
		if st, err := fsat.LstatAt(kd, n); err == nil && fsat.IsRegular(&st) && (!remove || disk.Unlink(kd, n) == nil) {
			removed = append(removed, n)
		}
	}
	if remove && len(removed) > 0 {
		disk.SyncDir(kd)
	}
	return removed
}

// writeKey writes rec into the key dir kd, whose meta.db lock is held, as
// the store promotes: src to a temp (fsynced, the directory fsynced), one
// transaction with hist appended, the record and a pending entry naming
// the temp (prev, the generation it replaces), then the rename to
// current.jsonl and the directory fsync. A kill before the commit leaves a
// temp the next writer sweeps; after it, a promotion in flight that every
// reader serves and the next writer rolls forward. done names what is in
// place on an error: meta.db once the commit landed, current.jsonl once
// renamed; nothing before the commit. sent says the commit was tried: a
// failed one may have landed all the same (bbolt's fsync failing after
// its write), and meta.db is then not known to hold nothing.
func (m *migration) writeKey(ctx context.Context, kd *os.File, lock *db.DB, rec etcdmeta.Record, hist []etcdmeta.HistoryEntry, src *genFile, prev *db.Transcript) (done []string, sent bool, err error) {
	disk := sharedfs.FS()
	tmp := ""
	if src != nil {
		if tmp, err = writeTemp(ctx, disk, kd, src); err != nil {
			return nil, false, err
		}
	}
	// From here on the commit is tried: every return says sent.
	err = lock.Update(func(tx *db.Tx) error {
		sc := sidecarsOf(rec)
		if tmp != "" {
			// The temp's own identity, which is the record's unless the
			// fleet's file did not match it: the roll-forward then still
			// moves the file into place, and the record cold-starts it.
			sc.Pending = &db.Pending{Tmp: tmp, Size: src.size, CRC32C: uint64(src.sum), Gen: sc.Transcript.Gen, Prev: prev}
		}
		// The record before the history: a key that moved the generation
		// before a lost promotion (what the store served) holds a record
		// below its history's newest gen, which PutTranscript refuses to
		// go back to from a history, but not to begin with.
		if err := tx.PutSidecars(sc); err != nil {
			return err
		}
		for _, e := range historyOf(hist) {
			if _, err := tx.AppendHistory(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// Committed or not, the next writer settles it, as a promotion's.
		return nil, true, err
	}
	done = []string{db.FileName}
	if err := faults.At(faults.FromEtcdCommitted); err != nil || tmp == "" {
		return done, true, err
	}
	if err := disk.Rename(kd, tmp, store.TranscriptName); err != nil {
		return done, true, err
	}
	done = []string{store.TranscriptName, db.FileName}
	if err := faults.At(faults.FromEtcdRenamed); err != nil {
		return done, true, err
	}
	if err := disk.SyncDir(kd); err != nil {
		return done, true, err
	}
	return done, true, faults.At(faults.FromEtcdSynced)
}

// writeTemp copies src into a new promotion temp in kd, fsyncs it and the
// directory, and returns its name; on error nothing is left. ctx's end
// stops the copy (looked at before every read of src) with ctx's error.
func writeTemp(ctx context.Context, disk durable.FS, kd *os.File, src *genFile) (name string, err error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	name = storeTempPrefix + hex.EncodeToString(rnd[:])
	f, err := disk.CreateTemp(kd, name)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			disk.Unlink(kd, name)
		}
	}()
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(f, h), callerctx.Reader(ctx, io.NewSectionReader(src.f, 0, 1<<62)))
	if err == nil && (n != src.size || h.Sum32() != src.sum) {
		err = fmt.Errorf("copy %s: %w", src.f.Name(), errChanged)
	}
	if err == nil {
		err = disk.SyncFile(f)
	}
	if err == nil {
		err = faults.At(faults.FromEtcdTemp)
	}
	if err == nil {
		// The temp's name must be durable before a commit names it.
		err = disk.SyncDir(kd)
	}
	return name, err
}

// dryRunTranscript is the file a dry run reads as the key dir's
// transcript when meta.db records p, a promotion in flight whose temp is
// a regular file: the temp, where it is whole (the run's roll-forward
// renames it into place); else current.jsonl, which the run reads once its
// roll-forward has removed the damaged temp (the record left pending, so
// the generation before it is served where it is in place). The oddity
// says which. Either is a write in the key dir (a rename, an unlink),
// which the run makes before it judges the key: a key dir this process
// may not write in (the mode, an ACL, a read-only mount) fails the key
// there, whatever the run would have judged it after, and so here, in
// the run's words (migrate.RollForwardRefused).
func dryRunTranscript(ctx context.Context, kd *os.File, p *db.Pending, r *MigrateReport) (string, error) {
	whole, err := store.PendingTempWhole(ctx, kd, p)
	if err == nil {
		err = migrate.RollForwardRefused(kd, p, whole)
	}
	switch {
	case err != nil:
		return "", err
	case whole:
		if err := migrate.RollForwardBlocked(kd, p); err != nil {
			return "", err // the run's roll-forward fails so
		}
		odd(r, db.FileName, fmt.Sprintf("a pending promotion (gen %d)", p.Gen), "would be rolled forward first")
		return p.Tmp, nil
	}
	odd(r, db.FileName, fmt.Sprintf("a pending promotion (gen %d) whose temp is not what its commit recorded", p.Gen), "its temp would be removed by the roll-forward first, the record left pending")
	return store.TranscriptName, nil
}

// tempRemoved corrects r's oddity at rolled, a run's "rolled forward
// first" of p, where the roll-forward found p's temp not what its commit
// recorded: sc, meta.db's sidecars read again under the lock after it,
// still record p, and its temp is gone (removed, the record left
// pending), so the run moves the generation before it, as its dry run
// (dryRunTranscript) says it would. A temp still there is left to the
// caller's errNotSettled.
func tempRemoved(r *MigrateReport, rolled int, kd *os.File, p *db.Pending, sc db.Sidecars) {
	q := sc.Pending
	if q == nil || q.Gen != p.Gen || q.Tmp != p.Tmp || store.PendingInFlight(kd, q) {
		return
	}
	r.Oddities[rolled] = migrate.Oddity{File: db.FileName, Found: fmt.Sprintf("a pending promotion (gen %d) whose temp was not what its commit recorded", p.Gen), ReadAs: "its temp removed by the roll-forward first, the record left pending"}
}
