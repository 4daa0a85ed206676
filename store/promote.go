package store

import (
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
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// Reading is a context measurement a run reported: tokens in use and the
// model's window. The store stamps it with the session's model.
type Reading struct {
	Tokens int64 `json:"tokens"`
	Window int64 `json:"window"`
}

// PromoteRequest is what a completed run reports besides its transcript.
type PromoteRequest struct {
	// PiVersion is the pi version that wrote the transcript; "" records
	// "unknown", which the version gate refuses.
	PiVersion string
	// Context is the run's context reading; nil means it reported none.
	Context *Reading
}

// PromoteResult is the outcome of a Promote.
type PromoteResult struct {
	Key      string       `json:"key"`
	Promoted bool         `json:"promoted"`
	Reason   gates.Reason `json:"reason"`
	Bytes    int64        `json:"bytes"`
	Gen      uint64       `json:"gen"`
	TornTail bool         `json:"torn_tail,omitempty"`
}

// Promote takes the transcript a completed run left in
// <sess.JobDir>/session/current.jsonl and makes it the key's transcript.
// Only the caller knows that the run completed; call Promote for completed
// runs only.
//
// A staged file that is missing or empty is absent, one that is a link, a
// FIFO or anything but a regular file is not-a-regular-file, one over the
// size cap is too-large; nothing is touched for any of them. A key whose
// lock is not had in time is locked: the run's transcript is discarded,
// never queued and never clobbering. A fault after the lock is
// promote-failed, returned together with its cause; the key's transcript is
// then the old one or the new one, never a mix.
//
// A staged transcript whose last line has no newline (pi stopped mid-append)
// is promoted with a newline added, so that pi's next append starts a line
// of its own instead of being glued to the torn one and dropped with it.
func (s *Store) Promote(sess Session, req PromoteRequest) (PromoteResult, error) {
	res := PromoteResult{Key: sess.Key}
	if !ValidKey(sess.Key) {
		return res, fmt.Errorf("promote %q: %w", sess.Key, ErrInvalidKey)
	}
	log := s.opts.Logger.With().Str("key", sess.Key).Logger()
	res, err := s.promote(sess, req, res)
	switch {
	case err != nil:
		res.Promoted, res.Reason = false, gates.PromoteFailed
		log.Error().Err(err).Msg("session_store_failed")
		err = fmt.Errorf("promote %s: %w", sess.Key, err)
	case res.Promoted:
		log.Info().Int64("bytes", res.Bytes).Uint64("gen", res.Gen).Bool("torn_tail", res.TornTail).Msg("session_promoted")
	default:
		log.Info().Str("reason", string(res.Reason)).Msg("session_promote_skipped")
	}
	return res, err
}

func (s *Store) promote(sess Session, req PromoteRequest, res PromoteResult) (PromoteResult, error) {
	refuse := func(r gates.Reason) (PromoteResult, error) { res.Reason = r; return res, nil }

	// Step 1: inspect the staged file, touching nothing.
	staged, reason, err := s.openStaged(sess.JobDir)
	if err != nil {
		return res, err
	}
	if reason != "" {
		return refuse(reason)
	}
	defer staged.f.Close()

	// Step 2: the key's exclusive lock (creating meta.db if need be).
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return res, err
	}
	root, err := fsat.OpenDir(s.root)
	if err != nil {
		return res, err
	}
	defer root.Close()
	created, err := fsat.MkdirNew(root, sess.Key, 0o700)
	if err != nil {
		return res, err
	}
	if created {
		// The key dir's own name must survive a power cut too, or the
		// first promotion of a key could vanish with it.
		if err := s.disk.syncDir(root); err != nil {
			return res, err
		}
	}
	kd, err := fsat.OpenDirAt(root, sess.Key)
	if errors.Is(err, fsat.ErrNotDir) {
		return refuse(gates.NotARegularFile)
	}
	if err != nil {
		return res, err
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, fsat.Join(kd, db.FileName), db.Options{LockTimeout: s.opts.LockTimeout, Now: s.opts.Now})
	if errors.Is(err, db.ErrLockTimeout) {
		return refuse(gates.Locked)
	}
	if err != nil {
		return res, err
	}
	defer d.Close()

	var prev db.Sidecars
	if err := d.View(func(tx *db.Tx) (err error) { prev, err = tx.Sidecars(); return err }); err != nil {
		return res, err
	}
	// Step 3: finish what a crash left behind. The pending entry itself is
	// replaced by this promotion's commit.
	if _, err := s.rollForward(kd, d, prev.Pending, false); err != nil {
		return res, err
	}
	sweepTemps(kd)

	// Step 4: the new transcript under a temp name, durable before the
	// commit that names it: its data by the file's fsync, its name by the
	// directory's. Without the second, a power cut after the commit can
	// lose the name, and the record would then describe neither the temp
	// (gone) nor the transcript still in place: the last acknowledged
	// promotion would never resume again (TestPowerCutAtEveryStep).
	tmp, size, sum, err := s.writeTemp(kd, staged)
	if err != nil {
		return res, err
	}
	if err := s.disk.syncDir(kd); err != nil {
		return res, err
	}

	// Step 5: one transaction for the identity, every sidecar and the
	// history; bbolt fsyncs the commit.
	next := s.nextSidecars(kd, sess, req, prev)
	var gen uint64 = 1
	if prev.Transcript != nil {
		gen = prev.Transcript.Gen + 1
	}
	now := s.opts.Now()
	err = d.Update(func(tx *db.Tx) error {
		if err := tx.PutTranscript(db.Transcript{Gen: gen, Size: size, CRC32C: uint64(sum), PromotedAt: now.UnixNano()}); err != nil {
			return err
		}
		if err := tx.PutPending(&db.Pending{Tmp: tmp, Size: size, CRC32C: uint64(sum), Gen: gen}); err != nil {
			return err
		}
		if err := tx.PutPiVersion(req.PiVersion); err != nil {
			return err
		}
		if err := tx.PutVenue(next.venue); err != nil {
			return err
		}
		if err := tx.PutResumeChain(next.chain); err != nil {
			return err
		}
		if err := tx.PutContext(next.context); err != nil {
			return err
		}
		_, err := tx.AppendHistory(db.HistoryEntry{
			Gen: gen, At: now.UnixNano(), Resumed: sess.Resume, Reason: string(sess.Reason),
			Bytes: size, Chain: next.chain, Job: sess.Job, TornTail: staged.torn,
		})
		return err
	})
	if err == nil {
		err = s.fault(FaultAfterCommit)
	}
	if err != nil {
		// Whether or not the commit landed, the next writer settles it:
		// rolled forward if it did, the temp swept if it did not.
		return res, err
	}

	// Step 6: the rename makes it the transcript; the directory fsync
	// makes the rename durable. Only then is it promoted.
	if err := s.disk.rename(kd, tmp, TranscriptName); err != nil {
		return res, err
	}
	if err := s.fault(FaultAfterRename); err != nil {
		return res, err
	}
	if err := s.disk.syncDir(kd); err != nil {
		return res, err
	}
	res.Promoted, res.Reason, res.Bytes, res.Gen, res.TornTail = true, gates.Promoted, size, gen, staged.torn

	// The pending entry stays: its temp is gone, which settles it (see
	// pendingInFlight), and the next writer's commit replaces it. Clearing
	// it here would be a second commit, two more flushes, for bookkeeping.
	if err := s.fault(FaultAfterDirSync); err != nil {
		s.opts.Logger.Warn().Str("key", sess.Key).Err(err).Msg("session_fault_after_landing")
	}
	return res, nil
}

type stagedFile struct {
	f    *os.File
	size int64
	torn bool // the last byte is not a newline
}

// openStaged opens <jobDir>/session/current.jsonl without following a link
// and without blocking on a FIFO, and names the reason it cannot be
// promoted, if any.
func (s *Store) openStaged(jobDir string) (stagedFile, gates.Reason, error) {
	var sf stagedFile
	jd, err := fsat.OpenDir(jobDir)
	if err != nil {
		return sf, gates.Absent, nil
	}
	defer jd.Close()
	sd, err := fsat.OpenDirAt(jd, StagedDirName)
	if err != nil {
		if errors.Is(err, fsat.ErrNotDir) {
			return sf, gates.NotARegularFile, nil
		}
		return sf, gates.Absent, nil
	}
	defer sd.Close()
	// lstat first: a device node is refused without being opened, since
	// opening one runs its driver. The fstat after the open must then
	// show the same regular file, or something was swapped in between.
	lst, err := fsat.LstatAt(sd, TranscriptName)
	switch {
	case fsat.IsNotExist(err):
		return sf, gates.Absent, nil
	case err != nil:
		return sf, "", err
	case !fsat.IsRegular(&lst):
		return sf, gates.NotARegularFile, nil
	}
	f, err := fsat.OpenAt(sd, TranscriptName, unix.O_RDONLY, 0)
	switch {
	case err == nil:
	case errors.Is(err, unix.ELOOP):
		return sf, gates.NotARegularFile, nil
	case fsat.IsNotExist(err):
		return sf, gates.Absent, nil
	default:
		return sf, "", err
	}
	st, err := fsat.Fstat(f)
	reason := gates.Reason("")
	switch {
	case err != nil:
	case !fsat.IsRegular(&st) || st.Dev != lst.Dev || st.Ino != lst.Ino:
		reason = gates.NotARegularFile
	case st.Nlink != 1:
		// A hard link is another name for some file the container could
		// see; promoting it would copy that file into the store.
		reason = gates.NotARegularFile
	case st.Size == 0:
		reason = gates.Absent
	}
	if err != nil || reason != "" {
		f.Close()
		return sf, reason, err
	}
	sf = stagedFile{f: f, size: st.Size}
	var last [1]byte
	if _, err := f.ReadAt(last[:], st.Size-1); err != nil {
		f.Close()
		return sf, "", err
	}
	sf.torn = last[0] != '\n'
	total := sf.size
	if sf.torn {
		total++
	}
	if max := s.opts.Bounds.MaxBytes; max > 0 && total > max {
		f.Close()
		return sf, gates.TooLarge, nil
	}
	return sf, "", nil
}

// writeTemp copies the staged transcript into a new temp file in the key
// dir, adding the missing final newline of a torn tail, and fsyncs it.
func (s *Store) writeTemp(kd *os.File, staged stagedFile) (name string, size int64, sum uint32, err error) {
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
			fsat.UnlinkAt(kd, name)
		}
	}()
	h := crc32.New(castagnoli)
	w := io.MultiWriter(f, h)
	size, err = io.Copy(w, io.NewSectionReader(staged.f, 0, staged.size))
	if err == nil && size != staged.size {
		err = fmt.Errorf("copy %s: staged file shrank from %d to %d bytes", staged.f.Name(), staged.size, size)
	}
	if err == nil && staged.torn {
		_, err = w.Write([]byte{'\n'})
		size++
	}
	if err == nil {
		err = s.fault(FaultAfterTempWrite)
	}
	if err == nil {
		err = s.disk.syncFile(f)
	}
	if err == nil {
		err = s.fault(FaultAfterTempSync)
	}
	return name, size, h.Sum32(), err
}

type nextState struct {
	venue   string
	chain   uint64
	context *db.Context
}

// nextSidecars applies the legacy sidecar rules. The chain counts the
// host's deliveries: one more when the host handed the key's transcript to
// this run, 0 after a cold start. A cold run's own reading describes the
// conversation it promoted, so it is kept; with no reading, a cold start
// clears the old one (it was about another conversation) and a resumed run
// keeps it. A key that has no record yet but legacy files (its first
// promotion since a partial migration) continues from the legacy values.
func (s *Store) nextSidecars(kd *os.File, sess Session, req PromoteRequest, prev db.Sidecars) nextState {
	n := nextState{venue: sess.Venue}
	if n.venue == "" {
		// A job whose venue is unknown never resumes; its promotion leaves
		// a stamp that matches no venue, as the legacy store did.
		n.venue = legacy.PendingVenue
	}
	var chain uint64
	prevContext := prev.Context
	if prev.Transcript == nil {
		chain = legacy.ReadResumeChain(kd)
		if c := legacy.ReadContext(kd); c != nil {
			prevContext = &db.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
		}
	} else if prev.ResumeChain != nil {
		chain = *prev.ResumeChain
	}
	if sess.Resume {
		n.chain = chain + 1
	}
	switch {
	case req.Context != nil:
		n.context = &db.Context{Tokens: req.Context.Tokens, Window: req.Context.Window, Model: sess.Model}
	case sess.Resume:
		n.context = prevContext
	}
	return n
}

// pendingInFlight reports whether p is a promotion still in flight:
// committed, with its temp still at its name. A promotion that lands keeps
// its pending entry until the next writer's commit replaces it (DESIGN,
// promote step 6: pending is cleared "at the next open"), so an entry whose
// temp is gone is settled. Only a crash between the commit and the rename
// leaves a temp at the name: temp names are random, and the sweep removes
// every temp no entry in flight names. A name that is not a promotion
// temp's is never looked up.
func pendingInFlight(kd *os.File, p *db.Pending) bool {
	if p == nil || !strings.HasPrefix(p.Tmp, tmpPrefix) || strings.ContainsRune(p.Tmp, '/') {
		return false
	}
	_, err := fsat.LstatAt(kd, p.Tmp)
	return !fsat.IsNotExist(err)
}

// PendingInFlight is pendingInFlight for a caller holding the key's lock
// (migrate): kd is the key dir, opened with O_DIRECTORY|O_NOFOLLOW.
func PendingInFlight(kd *os.File, p *db.Pending) bool { return pendingInFlight(kd, p) }

// rollForward finishes a promotion in flight (committed, not renamed): the
// temp it names is moved into place if it is still whole; if it is not, the
// sweep removes it and the transcript check of the next resolve cold-starts
// the key. With clear, the pending entry is then cleared by a commit of its
// own; Promote passes false, because its own commit replaces the entry. It
// reports whether p was in flight.
func (s *Store) rollForward(kd *os.File, d *db.DB, p *db.Pending, clear bool) (bool, error) {
	if !pendingInFlight(kd, p) {
		return false, nil
	}
	if tempMatches(kd, p) {
		if err := s.disk.rename(kd, p.Tmp, TranscriptName); err != nil {
			return true, err
		}
		if err := s.disk.syncDir(kd); err != nil {
			return true, err
		}
		s.opts.Logger.Info().Str("tmp", p.Tmp).Uint64("gen", p.Gen).Msg("session_rolled_forward")
	}
	if !clear {
		return true, nil
	}
	return true, d.Update(func(tx *db.Tx) error { return tx.PutPending(nil) })
}

func tempMatches(kd *os.File, p *db.Pending) bool {
	f, err := fsat.OpenAt(kd, p.Tmp, unix.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := fsat.Fstat(f)
	if err != nil || !fsat.IsRegular(&st) || st.Size != p.Size {
		return false
	}
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, st.Size)); err != nil {
		return false
	}
	return uint64(h.Sum32()) == p.CRC32C
}

// sweepTemps removes promotion temps. Only a holder of the key's exclusive
// lock writes a temp, and a promotion in flight has just been rolled
// forward, so every temp found here is debris, whatever its age.
func sweepTemps(kd *os.File) {
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			fsat.UnlinkAt(kd, n)
		}
	}
}

// RollForward finishes a promotion of key that committed but was not
// renamed into place (the process died between the two), and removes
// promotion temps no record names. It takes the key's exclusive lock; a
// key with no meta.db has nothing to roll forward and is left untouched.
// It reports whether a pending promotion was settled.
func (s *Store) RollForward(key string) (bool, error) {
	if !ValidKey(key) {
		return false, fmt.Errorf("roll forward %q: %w", key, ErrInvalidKey)
	}
	root, err := fsat.OpenDir(s.root)
	if err != nil {
		return false, err
	}
	defer root.Close()
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return false, err
	}
	defer kd.Close()
	if _, err := fsat.LstatAt(kd, db.FileName); err != nil {
		if fsat.IsNotExist(err) {
			return false, nil
		}
		return false, err
	}
	d, err := db.OpenWriter(kd, fsat.Join(kd, db.FileName), db.Options{LockTimeout: s.opts.LockTimeout, Now: s.opts.Now})
	if err != nil {
		return false, err
	}
	defer d.Close()
	var sc db.Sidecars
	if err := d.View(func(tx *db.Tx) (err error) { sc, err = tx.Sidecars(); return err }); err != nil {
		return false, err
	}
	settled, err := s.rollForward(kd, d, sc.Pending, true)
	if err != nil {
		return false, err
	}
	sweepTemps(kd)
	return settled, nil
}
