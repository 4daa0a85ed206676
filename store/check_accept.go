package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/lockonly"
)

// AcceptedOutcome is the history outcome of an Accept: the operator
// recorded the transcript in place as the key's identity.
const AcceptedOutcome = "accepted"

// AcceptResult says what Accept recorded.
type AcceptResult struct {
	Gen    uint64   // the generation the transcript got (Already: has)
	Bytes  int64    // its size
	CRC32C Checksum // its CRC32C
	// Fresh is true when the key had no record to keep stamps from (its
	// damaged meta.db moved aside by a repair): the new record holds the
	// transcript's identity only.
	Fresh bool
	// Already is true when the record already described the transcript:
	// nothing was written.
	Already bool
}

// Accept records the transcript now in key's dir as the key's identity:
// the operator's decision that what is there is the conversation, after
// an edit out of band, a restore from backup, or a repair that moved a
// damaged meta.db aside. It takes the key's exclusive lock, rolls forward
// a promotion in flight first (its transcript is the committed one), and
// then commits, in one transaction: the transcript's size and CRC32C as
// the next generation (one above any the key's meta.db remembers, never
// one it used), the pending record cleared, and a history entry whose
// outcome is AcceptedOutcome and whose reason is the cold start it
// settles (transcript-replaced, or meta-moved-aside for a fresh record). The stamps (pi version, venue, resume
// chain, context) and the promotion time are kept from the record; a key
// whose meta.db a repair moved aside gets a fresh one holding the
// identity only, with the transcript's mtime as its promotion time: with
// no pi-version stamp it cold-starts until its next promotion stamps it
// (a fresh record starts at generation 1: the old file's are unknown).
//
// It writes nothing and returns ErrNotAccepted when the key dir was moved
// aside while Accept waited for its lock, when there is no regular,
// non-empty current.jsonl, when meta.db cannot be written (damaged, from
// a newer sessdb, fallen back to an older commit: check --repair moves it
// aside first), or when the key has no meta.db and none was moved aside
// (a legacy key's identity is its file). A record that already describes
// the transcript is left as it is (Already).
func (s *Store) Accept(key string) (res AcceptResult, err error) {
	return s.accept(context.Background(), key)
}

// accept is Accept whose roll-forward's read of a promotion's temp ends
// with ctx (check --repair --accept's interrupt): nothing renamed or
// written then.
func (s *Store) accept(ctx context.Context, key string) (res AcceptResult, err error) {
	refuse := func(why string) (AcceptResult, error) {
		return res, fmt.Errorf("accept %s: %w: %s", key, ErrNotAccepted, why)
	}
	if !ValidKey(key) {
		return res, fmt.Errorf("accept %q: %w", key, ErrInvalidKey)
	}
	root, err := s.openRoot()
	if err != nil {
		return res, err
	}
	defer root.Close()
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return res, err
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, db.FileName)
	hadDB := err == nil
	if err != nil && !fsat.IsNotExist(err) {
		return res, err
	}
	aside := false
	if !hadDB {
		if aside, err = movedAside(kd); err != nil {
			return res, err
		}
	}
	switch {
	case hadDB && !fsat.IsRegular(&st):
		return refuse("meta.db is a " + fsat.Kind(&st))
	case !hadDB && !aside:
		return refuse("the key has no meta.db: a legacy key's identity is its file (sessdb migrate records it)")
	}

	before := lockonly.Look(kd)
	defer before.Close()
	d, sc, err := db.OpenSidecars(kd, s.writerOptions("accept", kd, key), true)
	var moved *movedAsideError
	switch {
	case errors.Is(err, db.ErrDamaged), errors.Is(err, db.ErrNewerSchema):
		return refuse(err.Error() + "; check --repair moves a damaged meta.db aside, and accept then gives the key a fresh record")
	case errors.As(err, &moved):
		// Moved aside while this waited for the lock, found by the open
		// (it would have made a meta.db the quarantine removed), as by
		// the look below.
		return refuse(err.Error())
	case err != nil:
		return res, err
	}
	defer d.Close()
	// Not hadDB alone: another process's promotion may have made meta.db
	// and committed into it since the look, and the open then waited for
	// and locked that file, the key's record.
	made := !hadDB && before.MadeByOpen(kd, d, sc)
	defer func() {
		if made && err != nil {
			// The meta.db made for the lock goes again: the key is as
			// it was.
			s.removeLockOnly(kd)
		}
	}()
	// Moved aside (check --repair --quarantine) while this waited for the
	// lock: what is there is no longer the key's.
	if err := stillAtKey("accept", s.root, kd, key); err != nil {
		return refuse(err.Error())
	}

	if m := d.MetaPages(); !m.Pages[0].Valid() || !m.Pages[1].Valid() {
		return refuse("a meta page of meta.db is invalid (check: meta-page-invalid); check --repair settles it first (writes the page again where the other describes the transcript, else moves meta.db aside)")
	}
	if settled, err := s.rollForward(ctx, kd, d, sc.Pending, true); err != nil {
		return res, err
	} else if settled {
		if err := d.View(func(tx *db.Tx) (err error) { sc, err = tx.Sidecars(); return err }); err != nil {
			return res, err
		}
	}
	var history []db.HistoryEntry
	if err := d.View(func(tx *db.Tx) (err error) { history, err = tx.History(0); return err }); err != nil {
		return res, err
	}
	res.Fresh = sc == (db.Sidecars{}) && len(history) == 0
	if res.Fresh && hadDB {
		// Listed again, under the lock: a repair may have moved one aside
		// while this waited for it.
		if aside, err = movedAside(kd); err != nil {
			return res, err
		}
	}
	if res.Fresh && hadDB && !aside {
		// A meta.db that holds nothing (a lock's, say) vouches for
		// nothing, and the key reads as legacy: as without one.
		return refuse("meta.db holds no record, and none was moved aside: the key reads as a legacy key, whose identity is its file")
	}
	size, sum, mtime, err := readIdentity(kd)
	if err != nil {
		return refuse(err.Error())
	}
	res.Bytes, res.CRC32C = size, Checksum(sum)
	if t := sc.Transcript; t != nil && t.Size == size && t.CRC32C == uint64(sum) {
		res.Gen, res.Already = t.Gen, true
		return res, nil
	}
	res.Gen = satAdd(highestGen(sc, history), 1)
	rec := db.Transcript{Gen: res.Gen, Size: size, CRC32C: uint64(sum), PromotedAt: db.RecordedAt(mtime)}
	var chain uint64
	if sc.Transcript != nil {
		rec.PromotedAt = sc.Transcript.PromotedAt
	}
	if sc.ResumeChain != nil {
		chain = *sc.ResumeChain
	}
	err = d.Update(func(tx *db.Tx) error {
		if err := tx.PutTranscript(rec); err != nil {
			return err
		}
		if err := tx.PutPending(nil); err != nil {
			return err
		}
		// The entry's reason is the cold start the accept settles.
		settles := gates.TranscriptReplaced
		if res.Fresh {
			settles = gates.MetaMovedAside
		}
		_, err := tx.AppendHistory(db.HistoryEntry{
			Gen: res.Gen, At: db.RecordedAt(s.opts.Now()), Outcome: AcceptedOutcome, Reason: string(settles), Bytes: size, Chain: chain,
		})
		return err
	})
	if err != nil {
		return res, err
	}
	s.opts.Logger.Info().Str("key", key).Uint64("gen", res.Gen).Int64("bytes", size).Bool("fresh", res.Fresh).Msg("session_accepted")
	return res, nil
}

// highestGen is the highest generation key's meta.db remembers anywhere:
// the record's, a pending promotion's, and every history entry's,
// refusals and acceptances included (promote's lastGen counts
// promotions only).
func highestGen(sc db.Sidecars, history []db.HistoryEntry) uint64 {
	g := lastGen(sc, history)
	if sc.Pending != nil {
		g = max(g, sc.Pending.Gen)
	}
	for _, e := range history {
		g = max(g, e.Gen)
	}
	return g
}

// readIdentity reads kd's current.jsonl whole, without following a link,
// and returns its size, CRC32C and mtime. A file that is missing, not
// regular, empty, or changed while it was read is an error, as is a look
// at its name after the read that failed (named as such).
func readIdentity(kd *os.File) (int64, uint32, time.Time, error) {
	f, err := fsat.OpenAt(kd, TranscriptName, unix.O_RDONLY, 0)
	switch {
	case fsat.IsNotExist(err):
		return 0, 0, time.Time{}, errors.New("there is no current.jsonl")
	case errors.Is(err, unix.ELOOP):
		return 0, 0, time.Time{}, errors.New("current.jsonl is a symbolic link")
	case err != nil:
		return 0, 0, time.Time{}, err
	}
	defer f.Close()
	before, err := fsat.Fstat(f)
	switch {
	case err != nil:
		return 0, 0, time.Time{}, err
	case !fsat.IsRegular(&before):
		return 0, 0, time.Time{}, fmt.Errorf("current.jsonl is a %s", fsat.Kind(&before))
	case before.Size == 0:
		return 0, 0, time.Time{}, errors.New("current.jsonl is empty (resolve: absent)")
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, io.NewSectionReader(f, 0, before.Size+1))
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	after, err := fsat.Fstat(f)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	err = faults.At(faults.AcceptIdentityLstat)
	var now unix.Stat_t
	if err == nil {
		now, err = fsat.LstatAt(kd, TranscriptName)
	}
	switch {
	case fsat.IsNotExist(err):
		return 0, 0, time.Time{}, errors.New("current.jsonl was removed or renamed while it was read; run it again")
	case err != nil:
		// Not looked at: that says nothing of a change, only of the look
		// (the error without its path: the message names the file).
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return 0, 0, time.Time{}, fmt.Errorf("current.jsonl was read, but its lstat after the read failed (%v), so whether it changed meanwhile is not known; run it again", err)
	case n != before.Size || after.Size != before.Size || after.Mtim != before.Mtim || now.Ino != before.Ino || now.Dev != before.Dev:
		return 0, 0, time.Time{}, errors.New("current.jsonl changed while it was read; run it again")
	}
	return n, h.Sum32(), fsat.ModTime(&before), nil
}

// acceptFinding runs Accept for check --repair --accept and says what it
// did as a finding of kind KindAccepted; a transcript-mismatch the accept
// settles says so too.
func (s *Store) acceptFinding(ctx context.Context, key string, found []Finding) *Finding {
	f := &Finding{
		Path: key + "/" + TranscriptName, Key: key, Kind: KindAccepted, Severity: SeverityNotice,
		Detail: "the operator's decision (check --accept): the transcript in place is the key's conversation",
	}
	res, err := s.accept(ctx, key)
	switch cerr := ctx.Err(); {
	case err != nil && cerr != nil && errors.Is(err, cerr):
		f.notRepaired(fmt.Errorf("check interrupted (%w) as the accept's roll-forward read the promotion's temp: nothing renamed or recorded; run check --repair --accept %s again", cerr, key))
		return f
	case err != nil:
		f.notRepaired(err)
		return f
	case res.Already:
		f.Repair = fmt.Sprintf("nothing written: the record already describes current.jsonl (gen %d, %d bytes, CRC32C %s)", res.Gen, res.Bytes, res.CRC32C)
	case res.Fresh:
		f.Repair = fmt.Sprintf("recorded current.jsonl (%d bytes, CRC32C %s) as gen %d in a fresh meta.db, history outcome %s; it has no stamps, so the key cold-starts (pi-version-changed) until its next promotion stamps it", res.Bytes, res.CRC32C, res.Gen, AcceptedOutcome)
	default:
		f.Repair = fmt.Sprintf("recorded current.jsonl (%d bytes, CRC32C %s) as gen %d, history outcome %s; the stamps and the promotion time kept from the record", res.Bytes, res.CRC32C, res.Gen, AcceptedOutcome)
	}
	f.Repaired = true
	for i := range found {
		if found[i].Kind == KindTranscriptMismatch {
			found[i].Repair, found[i].Repaired = fmt.Sprintf("accepted as the key's transcript, gen %d (check --accept)", res.Gen), true
		}
	}
	return f
}
