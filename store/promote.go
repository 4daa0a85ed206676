package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
	"sessdb/store/models"
	"sessdb/store/transcript"
)

// Reading is a context measurement: tokens in use out of the model's
// window, and the model that measured it.
type Reading struct {
	Tokens int64  `json:"tokens"`
	Window int64  `json:"window"`
	Model  string `json:"model"`
}

// PromoteRequest is what the caller says about a completed run besides its
// transcript. The zero value promotes with an unknown pi version, the
// reading computed from the transcript, and no requirement on the run.
type PromoteRequest struct {
	// PiVersion is the pi version that wrote the transcript; "" records
	// "unknown", which the version gate refuses.
	PiVersion string
	// Tokens, when non-nil, replaces the context tokens the store computes
	// from the transcript (pi 0.58.3's own end-of-run reading).
	Tokens *int64
	// Window, when non-zero, is the model's context window; zero looks the
	// transcript's model up in Options.Models and then in pi's built-in
	// table. A reading with no window is no measurement.
	Window int64
	// Require is "" to record the run's shape only, or transcript.Answered to
	// refuse any other shape as run-incomplete.
	Require transcript.Shape
	// AllowRewrite promotes a staged file that does not begin with exactly
	// the bytes the job was given; the history records it as rewritten.
	AllowRewrite bool
}

// PromoteResult is the outcome of a Promote.
type PromoteResult struct {
	Key      string       `json:"key"`
	Promoted bool         `json:"promoted"`
	Reason   gates.Reason `json:"reason"`
	Bytes    int64        `json:"bytes"`
	Gen      uint64       `json:"gen"`
	// Run is the shape of what the job appended (transcript.Unchanged when
	// nothing), once the staged file was read.
	Run transcript.Shape `json:"run,omitempty"`
	// Repeat is true when the ticket had promoted already: the result is
	// the first promotion's, and nothing was written again.
	Repeat bool `json:"repeat,omitempty"`
	// SupersededBy is the generation the key holds instead of the ticket's
	// base, for a superseded promotion (0: the key holds no record).
	SupersededBy uint64 `json:"superseded_by,omitempty"`
	// Rewritten is true when an allowed rewrite was promoted.
	Rewritten bool `json:"rewritten,omitempty"`
	TornTail  bool `json:"torn_tail,omitempty"`
}

// Promote takes the transcript a completed run left in
// <sess.JobDir>/session/current.jsonl and makes it the key's transcript,
// once, and only onto the transcript the job's ticket was resolved from.
//
// Before anything is written: a ticket from another sessions root is
// ErrWrongRoot. A staged file that is missing or empty is absent, one that
// is a link, a FIFO or anything but a regular file is not-a-regular-file,
// one over the size cap is too-large; nothing is touched for any of them.
//
// Under the key's exclusive lock, in this order: a ticket that promoted
// already repeats its first result (Repeat, nothing written); a key whose
// transcript is no longer the ticket's base is superseded; a staged file
// that does not begin with the bytes the job was given is
// transcript-rewritten (unless AllowRewrite); a run whose shape is not the
// one required is run-incomplete. These refusals change nothing but the
// key's history, which records them once per ticket. A key whose lock is
// not had in time is locked: the run's transcript is discarded, never
// queued and never clobbering. A fault after the lock is promote-failed,
// returned together with its cause; the key's transcript is then the old
// one or the new one, never a mix.
//
// A staged transcript whose last line has no newline (pi stopped mid-append)
// is promoted with a newline added, so that pi's next append starts a line
// of its own instead of being glued to the torn one and dropped with it.
func (s *Store) Promote(sess Session, req PromoteRequest) (PromoteResult, error) {
	res := PromoteResult{Key: sess.Key}
	if !ValidKey(sess.Key) {
		return res, fmt.Errorf("promote %q: %w", sess.Key, ErrInvalidKey)
	}
	if req.Require != "" && req.Require != transcript.Answered {
		return res, fmt.Errorf("promote %s: require %q: only %q can be required", sess.Key, req.Require, transcript.Answered)
	}
	log := s.opts.Logger.With().Str("key", sess.Key).Logger()
	res, err := s.promote(sess, req, res)
	switch {
	case errors.Is(err, ErrWrongRoot):
		err = fmt.Errorf("promote %s: %w", sess.Key, err)
	case err != nil:
		res.Promoted, res.Reason = false, gates.PromoteFailed
		log.Error().Err(err).Msg("session_store_failed")
		err = fmt.Errorf("promote %s: %w", sess.Key, err)
	case res.Promoted:
		log.Info().Int64("bytes", res.Bytes).Uint64("gen", res.Gen).Str("run", string(res.Run)).Bool("repeat", res.Repeat).Bool("torn_tail", res.TornTail).Msg("session_promoted")
	default:
		log.Info().Str("reason", string(res.Reason)).Uint64("superseded_by", res.SupersededBy).Msg("session_promote_skipped")
	}
	return res, err
}

func (s *Store) promote(sess Session, req PromoteRequest, res PromoteResult) (PromoteResult, error) {
	refuse := func(r gates.Reason) (PromoteResult, error) { res.Reason = r; return res, nil }

	// Step 0: the ticket must be this store's, before anything is written
	// anywhere (a ticket for another root would otherwise create its key
	// here).
	if err := s.checkRoot(sess); err != nil {
		return res, err
	}

	// Step 1: inspect the staged file, touching nothing, and read it once,
	// unlocked: whether it begins with what the job was given, pi's own
	// reading and model at its end, and the run's shape.
	staged, reason, err := s.openStaged(sess.JobDir)
	if err != nil {
		return res, err
	}
	if reason != "" {
		return refuse(reason)
	}
	defer staged.f.Close()
	content, err := readStaged(staged, sess)
	if err != nil {
		return res, err
	}
	res.Run = content.run

	// Step 2: the key's exclusive lock (creating meta.db if need be).
	kd, err := s.openKeyDirForWrite(sess.Key)
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
	var history []db.HistoryEntry
	if err := d.View(func(tx *db.Tx) (err error) {
		if prev, err = tx.Sidecars(); err != nil {
			return err
		}
		history, err = tx.History(0)
		return err
	}); err != nil {
		return res, err
	}
	// Step 3: finish what a crash left behind. The pending entry itself is
	// replaced by this promotion's commit.
	if _, err := s.rollForward(kd, d, prev.Pending, false); err != nil {
		return res, err
	}
	sweepTemps(kd)

	// Step 4: the job's contract, in the order the doc gives.
	cur, err := currentBase(kd, prev)
	if err != nil {
		return res, err
	}
	if fellBack(kd, d.MetaPages(), cur) {
		return res, fmt.Errorf("%s: %w", d.Path(), ErrMetaFellBack)
	}
	if sess.Ticket != "" {
		if e, ok := findPromotion(history, sess.Ticket); ok {
			res.Promoted, res.Repeat, res.Reason = true, true, gates.Promoted
			res.Bytes, res.Gen, res.Run, res.Rewritten, res.TornTail = e.Bytes, e.Gen, transcript.Shape(e.Run), e.Rewritten, e.TornTail
			return res, nil
		}
		if !sess.Base.same(cur.base, cur.file) {
			res.SupersededBy = cur.base.Gen
			return s.refuseRecorded(d, prev, history, sess, res, gates.Superseded)
		}
		if !content.prefixOK && !req.AllowRewrite {
			return s.refuseRecorded(d, prev, history, sess, res, gates.TranscriptRewritten)
		}
	}
	if req.Require != "" && content.run != req.Require {
		return s.refuseRecorded(d, prev, history, sess, res, gates.RunIncomplete)
	}
	rewritten := sess.Ticket != "" && !content.prefixOK

	// Step 5: the new transcript under a temp name, durable before the
	// commit that names it: its data by the file's fsync, its name by the
	// directory's. Without the second, a power cut after the commit can
	// lose the name, and the record would then describe neither the temp
	// (gone) nor the transcript still in place: the last acknowledged
	// promotion would never resume again (TestPowerCutAtEveryStep).
	tmp, size, sum, err := s.writeTemp(kd, staged)
	if err != nil {
		return res, err
	}
	if sum != content.sum {
		fsat.UnlinkAt(kd, tmp)
		return res, fmt.Errorf("copy %s: the staged file changed while it was promoted", staged.f.Name())
	}
	if err := s.disk.syncDir(kd); err != nil {
		return res, err
	}

	// Step 6: one transaction for the identity, every sidecar and the
	// history; bbolt fsyncs the commit. The generation grows from the
	// highest the key remembers, never from the base's: a promotion lost in
	// a crash keeps its number.
	next := s.nextSidecars(kd, sess, req, prev, content)
	gen := satAdd(lastGen(prev, history), 1)
	now := s.opts.Now()
	err = d.Update(func(tx *db.Tx) error {
		if err := tx.PutTranscript(db.Transcript{Gen: gen, Size: size, CRC32C: uint64(sum), PromotedAt: now.UnixNano()}); err != nil {
			return err
		}
		if err := tx.PutPending(&db.Pending{Tmp: tmp, Size: size, CRC32C: uint64(sum), Gen: gen, Prev: cur.record}); err != nil {
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
			Ticket: sess.Ticket, Run: string(content.run), Rewritten: rewritten, BaseGen: sess.Base.Gen,
		})
		return err
	})
	if err == nil {
		err = s.fault(faults.PromoteAfterCommit)
	}
	if err != nil {
		// Whether or not the commit landed, the next writer settles it:
		// rolled forward if it did, the temp swept if it did not.
		return res, err
	}

	// Step 7: the rename makes it the transcript; the directory fsync
	// makes the rename durable. Only then is it promoted.
	if err := s.disk.rename(kd, tmp, TranscriptName); err != nil {
		return res, err
	}
	if err := s.fault(faults.PromoteAfterRename); err != nil {
		return res, err
	}
	if err := s.disk.syncDir(kd); err != nil {
		return res, err
	}
	res.Promoted, res.Reason, res.Bytes, res.Gen, res.TornTail, res.Rewritten = true, gates.Promoted, size, gen, staged.torn, rewritten

	// The pending entry stays: its temp is gone, which settles it (see
	// pendingInFlight), and the next writer's commit replaces it. Clearing
	// it here would be a second commit, two more flushes, for bookkeeping.
	if err := s.fault(faults.PromoteAfterDirSync); err != nil {
		s.opts.Logger.Warn().Str("key", sess.Key).Err(err).Msg("session_fault_after_landing")
	}
	return res, nil
}

// checkRoot refuses a ticket issued by a store with another root. Two
// spellings of one directory (a link, a bind mount) are the same root.
func (s *Store) checkRoot(sess Session) error {
	if sess.Ticket == "" {
		return nil // a ticket from before the job contract names no root
	}
	mine, err := s.absRoot()
	if err != nil {
		return err
	}
	if mine == sess.Root {
		return nil
	}
	a, aerr := os.Stat(mine)
	b, berr := os.Stat(sess.Root)
	if aerr == nil && berr == nil && os.SameFile(a, b) {
		return nil
	}
	return fmt.Errorf("%w: the ticket names %s, this store is %s", ErrWrongRoot, sess.Root, mine)
}

// openKeyDirForWrite makes the sessions root and the key dir if need be
// (the key dir's name made durable) and opens the key dir without
// following a link: a link or non-directory there is fsat.ErrNotDir.
func (s *Store) openKeyDirForWrite(key string) (*os.File, error) {
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return nil, err
	}
	root, err := fsat.OpenDir(s.root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	created, err := fsat.MkdirNew(root, key, 0o700)
	if err != nil {
		return nil, err
	}
	if created {
		// The key dir's own name must survive a power cut too, or the
		// first promotion of a key could vanish with it.
		if err := s.disk.syncDir(root); err != nil {
			return nil, err
		}
	}
	return fsat.OpenDirAt(root, key)
}

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
func currentBase(kd *os.File, sc db.Sidecars) (keyState, error) {
	var ks keyState
	st, err := fsat.LstatAt(kd, TranscriptName)
	switch {
	case err == nil && fsat.IsRegular(&st):
		ks.file = &st
	case err == nil || fsat.IsNotExist(err):
	default:
		return ks, err
	}
	ks.record = sc.Transcript
	if lostPromotion(kd, sc, ks.file) {
		ks.record = sc.Pending.Prev
	}
	ks.base = baseOf(ks.record, ks.file)
	return ks, nil
}

// fellBack reports whether meta.db runs on its older meta page because
// the other is damaged, and that older commit does not describe the
// transcript in place. A power cut during a commit leaves the same page
// damaged, but then the commit never returned, its rename never happened,
// and the older commit still describes what is in place: writing on is
// right. A damaged page that held an acknowledged commit is told apart by
// the transcript it renamed into place.
func fellBack(kd *os.File, m db.MetaPages, cur keyState) bool {
	if m.Pages[0].Valid() && m.Pages[1].Valid() {
		return false
	}
	rec := cur.record
	if rec == nil || cur.file == nil {
		// Nothing to compare: a first commit torn by a power cut leaves a
		// legacy key's transcript in place and no record, and must not
		// stop the key for good.
		return false
	}
	return !fileMatches(kd, TranscriptName, rec.Size, rec.CRC32C)
}

// lostPromotion reports whether the transcript in place (st) is the
// generation before the record's, which is what a committed promotion
// whose temp was lost before its rename leaves. Each promotion appends, so
// sizes tell the two apart without a read in all but the rarest case.
func lostPromotion(kd *os.File, sc db.Sidecars, st *unix.Stat_t) bool {
	p := sc.Pending
	if p == nil || p.Prev == nil || sc.Transcript == nil || st == nil || st.Size != p.Prev.Size {
		return false
	}
	rec := sc.Transcript
	if st.Size == rec.Size && fileMatches(kd, TranscriptName, rec.Size, rec.CRC32C) {
		return false
	}
	return fileMatches(kd, TranscriptName, p.Prev.Size, p.Prev.CRC32C)
}

// lastGen is the highest generation the key's meta.db remembers: the
// record's, or a promotion's in the history if that is higher (a record
// damaged into a smaller value that still decodes must not make a
// generation go backwards, or repeat one the history already names).
func lastGen(sc db.Sidecars, history []db.HistoryEntry) uint64 {
	var g uint64
	if sc.Transcript != nil {
		g = sc.Transcript.Gen
	}
	for _, e := range history {
		if e.Outcome == "" {
			g = max(g, e.Gen)
		}
	}
	return g
}

// findPromotion returns the history entry of the promotion made with
// ticket, if the ring still holds it.
func findPromotion(history []db.HistoryEntry, ticket string) (db.HistoryEntry, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		if e := history[i]; e.Ticket == ticket && e.Outcome == "" {
			return e, true
		}
	}
	return db.HistoryEntry{}, false
}

// refuseRecorded refuses the promotion with reason and records the refusal
// in the key's history, once per ticket and reason, so that a runner that
// retries cannot push real promotions out of the ring. A key with no record
// yet (a legacy key, a first promotion) keeps no history: the refusal is
// logged only.
func (s *Store) refuseRecorded(d *db.DB, prev db.Sidecars, history []db.HistoryEntry, sess Session, res PromoteResult, reason gates.Reason) (PromoteResult, error) {
	res.Reason = reason
	if prev.Transcript == nil {
		return res, nil
	}
	for _, e := range history {
		if sess.Ticket != "" && e.Ticket == sess.Ticket && e.Outcome == string(reason) {
			return res, nil
		}
	}
	err := d.Update(func(tx *db.Tx) error {
		_, err := tx.AppendHistory(db.HistoryEntry{
			Gen: prev.Transcript.Gen, At: s.opts.Now().UnixNano(), Outcome: string(reason),
			Resumed: sess.Resume, Reason: string(sess.Reason), Bytes: sess.Bytes,
			Job: sess.Job, Ticket: sess.Ticket, Run: string(res.Run), BaseGen: sess.Base.Gen,
		})
		return err
	})
	return res, err
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

type nextState struct {
	venue   string
	chain   uint64
	context *db.Context
}

// nextSidecars applies the sidecar rules. The chain counts the host's
// deliveries: one more when the host handed the key's transcript to this
// run, 0 after a cold start; it saturates instead of wrapping, so a bound
// never stops refusing. A key that has no record yet but legacy files (its
// first promotion since a partial migration) continues from the legacy
// chain.
//
// The reading is pi's own at the end of the run, computed on the promoted
// transcript, with the caller's overrides (see PromoteRequest). An unknown
// reading (a compaction with no fresh usage since) or an unknown window is
// no measurement, and clears the previous one: it described a context that
// no longer exists. A cold run's own reading is kept (the legacy store
// deleted it, so a conversation promoted full resumed once more).
func (s *Store) nextSidecars(kd *os.File, sess Session, req PromoteRequest, prev db.Sidecars, content stagedContent) nextState {
	n := nextState{venue: sess.Venue}
	if n.venue == "" {
		// A job whose venue is unknown never resumes; its promotion leaves
		// a stamp that matches no venue, as the legacy store did.
		n.venue = legacy.PendingVenue
	}
	var chain uint64
	if prev.Transcript == nil {
		chain = legacy.ReadResumeChain(kd)
	} else if prev.ResumeChain != nil {
		chain = *prev.ResumeChain
	}
	if sess.Resume {
		n.chain = satAdd(chain, 1)
	}
	tokens, known := content.end.Tokens, content.end.Known
	if req.Tokens != nil {
		tokens, known = *req.Tokens, true
	}
	model := content.end.Model
	window := req.Window
	if window == 0 {
		window, _ = s.windows().Window(model)
	}
	if known && window > 0 {
		n.context = &db.Context{Tokens: tokens, Window: window, Model: model}
	}
	return n
}

// windows is where a model's context window is looked up.
func (s *Store) windows() Windows {
	if s.opts.Models == nil {
		return models.Builtin()
	}
	return s.opts.Models
}

// satAdd is a+b, or the largest uint64 where that would wrap.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
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

func tempMatches(kd *os.File, p *db.Pending) bool { return fileMatches(kd, p.Tmp, p.Size, p.CRC32C) }

// fileMatches reports whether name in kd is a regular file of size bytes
// with CRC32C sum, reading no more than size+1 bytes of it.
func fileMatches(kd *os.File, name string, size int64, sum uint64) bool {
	f, err := fsat.OpenAt(kd, name, unix.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := fsat.Fstat(f)
	if err != nil || !fsat.IsRegular(&st) || st.Size != size {
		return false
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, io.NewSectionReader(f, 0, size+1))
	return err == nil && n == size && uint64(h.Sum32()) == sum
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

// stagedContent is what one read of the staged file learns, before the
// key is locked.
type stagedContent struct {
	sum      uint32 // CRC32C of what is promoted: the staged file, and a torn tail's newline
	prefixOK bool   // it begins with exactly the bytes the job was given
	end      transcript.End
	run      transcript.Shape
}

// readStaged reads the staged file once, to its size at open: its
// checksum, the checksum of its first sess.Bytes bytes, and pi's end of
// run. The copy into the key dir checksums the file again and must agree,
// so what was judged here is what is promoted.
func readStaged(sf stagedFile, sess Session) (stagedContent, error) {
	var c stagedContent
	split := &crcSplit{at: sess.Bytes}
	src := io.TeeReader(io.NewSectionReader(sf.f, 0, sf.size), split)
	end, err := transcript.ReadEnd(src)
	if err != nil {
		// A transcript pi itself could not load (a branch with a cycle, a
		// line past the scanner's bound) has no reading and no shape; it is
		// still the job's work, and promoted as such. The rest of the file
		// must pass through the checksum all the same.
		if _, derr := io.Copy(io.Discard, src); derr != nil {
			return c, fmt.Errorf("read %s: %w", sf.f.Name(), derr)
		}
		end = transcript.End{}
	}
	if split.off != sf.size {
		return c, fmt.Errorf("read %s: %d of %d bytes", sf.f.Name(), split.off, sf.size)
	}
	c.sum, c.end = split.sum, end
	if sf.torn {
		c.sum = crc32.Update(c.sum, castagnoli, []byte{'\n'}) // the copy adds it
	}
	// A ticket from before the job contract carries no checksum of what
	// it delivered; its prefix cannot be checked.
	c.prefixOK = sess.Ticket == "" || sf.size >= sess.Bytes && split.prefix == uint32(sess.CRC32C)
	switch {
	case c.prefixOK && sf.size == sess.Bytes:
		c.run = transcript.Unchanged
	default:
		c.run = end.Last.Shape()
	}
	return c, nil
}

// crcSplit is a writer that checksums everything written to it, and
// remembers the checksum of the first at bytes.
type crcSplit struct {
	at, off     int64
	sum, prefix uint32
}

func (c *crcSplit) Write(b []byte) (int, error) {
	n := len(b)
	if c.off <= c.at && c.at < c.off+int64(n) {
		k := c.at - c.off
		c.sum = crc32.Update(c.sum, castagnoli, b[:k])
		c.prefix = c.sum
		b = b[k:]
	}
	c.sum = crc32.Update(c.sum, castagnoli, b)
	c.off += int64(n)
	if c.off == c.at {
		c.prefix = c.sum
	}
	return n, nil
}
