package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
	"sessdb/store/legacy"
	"sessdb/store/models"
	"sessdb/store/transcript"
)

// PromoteRequest is what the caller says about a completed run besides its
// transcript. The zero value promotes with an unknown pi version, the
// reading computed from the transcript, and no requirement on the run.
type PromoteRequest struct {
	// PiVersion is the pi version that wrote the transcript; "" records
	// "unknown", which the version gate refuses. It is stamped exactly as
	// given, white space around it included (see Job; the CLI trims it).
	// Longer than MaxValueBytes, it is an error, as is a ticket whose
	// venue, model or job id is: nothing is written.
	PiVersion string
	// Tokens, when non-nil, replaces the context tokens the store computes
	// from the transcript (pi 0.58.3's own end-of-run reading). A negative
	// count is an error: nothing is written.
	Tokens *int64
	// Window, when non-zero, is the model's context window; zero looks the
	// transcript's model up in Options.Models, or in pi's built-in table
	// where that is nil (a Windows given is the only table asked: the
	// Registry of models.Load or models.Parse holds the built-in models
	// too, a Windows of the caller's own may not). A reading with no
	// window is no measurement. A negative window is an error: nothing is
	// written.
	Window int64
	// Require is "" to record the run's shape only, or transcript.Answered to
	// refuse any other shape as run-incomplete, transcript.Unknown included:
	// a run sessdb could not read is not known to have answered.
	Require transcript.Shape
	// AllowRewrite promotes a staged file that does not begin with exactly
	// the bytes the job was given; the history records it as rewritten.
	AllowRewrite bool
	// TicketFromJobDir says the Session was just read from the job dir's
	// ticket (ReadTicket), as the CLI's promote reads it: under the staged
	// dir's lock the ticket is read again, and one that names another id,
	// or is gone or no ticket where a file is staged (with none staged,
	// the refusal is absent), is ErrJobDirBusy, nothing written (a
	// resolve ran in the job dir between the two reads, perhaps killed
	// before its own ticket, and the staged file is that resolve's: a
	// cold start's ticket, whose run has no prefix to check, would promote
	// another key's conversation into its own). A Session whose Key is not
	// the key of the ticket it names (a Key the worker's code changed) is
	// ErrBadTicket, nothing written: the run was resolved for the ticket's
	// key. A Session kept in memory across a later resolve in its dir is
	// judged as before without it, and its Key is not compared: there is
	// no ticket to compare it with.
	TicketFromJobDir bool
}

// PromoteResult is the outcome of a Promote. The CLI's promote object
// (docs/json.md) is built from it, under the same names; the zero value
// is no promotion.
type PromoteResult struct {
	// Key is the ticket's key.
	Key string `json:"key"`
	// Promoted is true when the run's transcript is the key's generation
	// Gen: promoted by this call, or by the first call with this ticket
	// (Repeat).
	Promoted bool `json:"promoted"`
	// Reason is gates.Promoted, or the refusal or fault that kept it out;
	// "" when Promote returned an error before it tried (a Session or
	// request it refuses, a ticket from another root, a store with no
	// backend: ErrNoBackend), the result's other fields zero but Key. A
	// PromoteContext whose ctx was done before the call is promote-failed,
	// not "": like any promote given up, a retry with the same Session
	// promotes the run.
	Reason gates.Reason `json:"reason"`
	// Bytes is the promoted transcript's size, a torn tail's newline
	// included; 0 when nothing was promoted.
	Bytes int64 `json:"bytes"`
	// Gen is the generation promoted; 0 when nothing was.
	Gen uint64 `json:"gen"`
	// Run is the shape of what the job appended (transcript.Unchanged when
	// nothing, transcript.Unanswered when no message, transcript.Unknown
	// when sessdb could not read it as pi does), once the staged file was
	// read.
	Run transcript.Shape `json:"run,omitempty"`
	// Repeat is true when the ticket had promoted already: the result is
	// the first promotion's, and nothing was written again.
	Repeat bool `json:"repeat,omitempty"`
	// SupersededBy is the generation the key holds instead of the ticket's
	// base, for a superseded promotion (0: the key holds no record).
	SupersededBy uint64 `json:"superseded_by,omitempty"`
	// Rewritten is true when an allowed rewrite was promoted.
	Rewritten bool `json:"rewritten,omitempty"`
	// TornTail is true when the staged file's last line had no newline
	// and one was added (see Promote).
	TornTail bool `json:"torn_tail,omitempty"`
}

// Promote takes the transcript a completed run left in
// <sess.JobDir>/session/current.jsonl and makes it the key's transcript,
// once, and only onto the transcript the job's ticket was resolved from.
//
// Before anything is written: a request with a Require other than
// Answered, or a negative Window or Tokens, is ErrBadRequest; a Session
// ReadTicket would refuse (a
// verdict no resolve gives, a value over MaxValueBytes or not valid UTF-8)
// is ErrBadTicket, ErrValueTooLong or ErrValueNotUTF8, one with no JobDir
// (Resolve and ReadTicket always set it) ErrBadTicket, and so is one
// read with TicketFromJobDir whose Key is not its ticket's; a ticket from
// another sessions root is ErrWrongRoot, a job dir another resolve or
// promote is using at that moment (a retry of this Session sent while
// the first try still runs, too) is ErrJobDirBusy, returned with
// promote-failed: retry once the other is done. A
// staged file that is missing or empty is absent, one that is a link, a
// FIFO or anything but a regular file is not-a-regular-file, one over the
// size cap is too-large; nothing is touched for any of them.
//
// Under the key's exclusive lock, in this order: a ticket that promoted
// already repeats its first result (Repeat, nothing written) for the same
// transcript, and is superseded by its own promotion for another (a
// promotion the key no longer holds, its temp lost before the rename, is
// none to repeat: the run is promoted again, or superseded where another
// job promoted onto the generation before it since; so is the record's
// own generation whose file the key no longer holds as recorded, which is
// promoted again, and any promotion before an operator's accept, which is
// judged on its base); a key whose transcript is no longer the ticket's
// base is superseded; a staged file
// that does not begin with the bytes the job was given is
// transcript-rewritten (unless AllowRewrite); a run whose shape is not the
// one required is run-incomplete. These refusals change nothing but the
// key's history, which records them once per ticket. A key whose lock is
// not had in time is locked: nothing is written, never queued and never
// clobbering; the run's transcript stays in the job dir, and a retry with
// the same Session promotes it (or is superseded). A fault after the lock
// is promote-failed, returned together with its cause; the key's
// transcript is then the old one or the new one, never a mix.
//
// A staged transcript whose last line has no newline (pi stopped mid-append)
// is promoted with a newline added, so that pi's next append starts a line
// of its own instead of being glued to the torn one and dropped with it.
func (s *Store) Promote(sess Session, req PromoteRequest) (PromoteResult, error) {
	return s.PromoteContext(context.Background(), sess, req)
}

// PromoteContext is Promote, given up once ctx is done before its commit:
// while it waits for the key's lock (KeyDirs) or for the backend (a
// fleet's etcd requests, with a Backend that takes a context:
// ContextBackend), and between the chunks of its reads and its copy of the
// staged file, and of a retry's read of the record's file (HoldsRecord,
// with a KeyTxn that takes a context: ContextKeyTxn). A promote given up
// so is promote-failed, returned with an error that wraps ctx's
// (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded): nothing of the key changed, the run's
// transcript is where the job left it, and a retry with the same Session
// promotes it, as after any promote-failed. A ctx done before the call
// touches nothing; the arguments are checked first. From the commit on,
// ctx is not consulted: a promotion is never half done, or left unsaid,
// because its caller gave up, and one that committed is returned
// promoted whatever ctx says. A refusal (superseded, transcript-rewritten,
// run-incomplete) is returned once recorded in the key's history: ctx is
// looked at once more before the record, and a cancel seen there, or one
// that ends the record's wait (a fleet's etcd requests), is promote-failed
// like any other, the run kept for the retry, which decides again (a
// fleet's record already sent may still land: the retry finds it, and the
// refusal is recorded once). A nil ctx is context.Background(), which
// never ends. A ctx of the caller's own type that breaks Go's contract is
// held to it as ResolveContext says: a Done closed while Err is nil, or a
// panic in its Err or Done, is a promote given up (promote-failed, with
// an error that wraps context.Canceled).
func (s *Store) PromoteContext(ctx context.Context, sess Session, req PromoteRequest) (PromoteResult, error) {
	ctx = callerctx.Of(ctx)
	res := PromoteResult{Key: sess.Key}
	if s.backend == nil {
		return res, fmt.Errorf("promote %q: %w", sess.Key, ErrNoBackend)
	}
	if !ValidKey(sess.Key) {
		return res, fmt.Errorf("promote %q: %w", sess.Key, ErrInvalidKey)
	}
	// As the CLI refuses them (ErrBadRequest says why).
	if req.Require != "" && req.Require != transcript.Answered {
		return res, fmt.Errorf("promote %s: require %q: only %q can be required: %w", sess.Key, req.Require, transcript.Answered, ErrBadRequest)
	}
	if req.Window < 0 {
		return res, fmt.Errorf("promote %s: window %d: must not be negative: %w", sess.Key, req.Window, ErrBadRequest)
	}
	if req.Tokens != nil && *req.Tokens < 0 {
		return res, fmt.Errorf("promote %s: tokens %d: must not be negative: %w", sess.Key, *req.Tokens, ErrBadRequest)
	}
	// The ticket's values are the job's (Resolve refused longer ones, and
	// ones that are not text); a Session built or edited by hand, and the
	// request's pi version, are held to the same bounds.
	if err := (Job{PiVersion: req.PiVersion, Venue: sess.Venue, Model: sess.Model, ID: sess.Job}).checkValues(); err != nil {
		return res, fmt.Errorf("promote %s: %w", sess.Key, err)
	}
	// ReadTicket's checks, for a Session that did not come from it: the
	// history would record an edited verdict as the resolve's.
	if err := sess.validate(); err != nil {
		return res, fmt.Errorf("promote %s: %w: %s", sess.Key, ErrBadTicket, err)
	}
	// Resolve and ReadTicket always set it: with none, the run would be
	// looked for nowhere, and the promote answer absent of a run that is
	// whole in its job dir.
	if sess.JobDir == "" {
		return res, fmt.Errorf("promote %s: %w: %w", sess.Key, ErrBadTicket, ErrNoJobDir)
	}
	log := s.opts.Logger.With().Str("key", sess.Key).Logger()
	// Nothing touched yet: the caller gave up before the call.
	if err := ctx.Err(); err != nil {
		res.Reason = gates.PromoteFailed
		return res, fmt.Errorf("promote %s: %w", sess.Key, err)
	}
	at := stepStaged
	res, err := s.promote(ctx, sess, req, res, &at)
	switch {
	case errors.Is(err, ErrWrongRoot), errors.Is(err, ErrBadTicket), errors.Is(err, ErrNoBackend):
		// A Session refused, or a backend that says it is none (a
		// fleet.Backend fleet.Open did not make), nothing tried: no
		// promote-failed, whose retry with the same Session would
		// promote. A store on such a backend answers as one on none.
		err = fmt.Errorf("promote %s: %w", sess.Key, err)
	case err != nil && ctx.Err() != nil && !errors.As(err, new(*uncancelled)):
		// Given up before the commit (a commit's fault is a fault
		// whatever ctx says: it never consults it), a refusal's record
		// included. Another fault met on the way is said, not wrapped:
		// the error is the cancel's.
		res.Promoted, res.Reason = false, gates.PromoteFailed
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (and %v)", ctx.Err(), err)
		}
		log.Info().Str("step", string(at)).Err(err).Msg("session_promote_cancelled")
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

// promote is the write path (DESIGN.md), every step in order. A refusal
// is a result with its reason and a nil error; an error is a fault, which
// Promote reports as promote-failed. at is kept at the step under way, for
// the log line of a promote given up.
func (s *Store) promote(ctx context.Context, sess Session, req PromoteRequest, res PromoteResult, at *cancelStep) (PromoteResult, error) {
	refuse := func(r gates.Reason) (PromoteResult, error) { res.Reason = r; return res, nil }

	// Step 0: the ticket must be this store's, before anything is written
	// anywhere (a ticket for another root would otherwise create its key
	// here).
	if err := s.CheckRoot(sess); err != nil {
		return res, err
	}

	// Step 1: inspect the staged file, touching nothing, and read it once,
	// unlocked: whether it begins with what the job was given, pi's own
	// reading and model at its end, and the run's shape.
	staged, reason, err := s.openStaged(sess.JobDir, req.TicketFromJobDir, sess.Ticket, sess.Key)
	if err != nil {
		return res, err
	}
	if reason != "" {
		return refuse(reason)
	}
	defer staged.close()
	content, err := readStaged(ctx, staged, sess)
	if err != nil {
		return res, err
	}
	res.Run = content.run

	// Steps 2 to 5, again if another promotion commits in between (a
	// backend without a lock says so at the commit): the key, the contract,
	// the new transcript, the commit.
	for attempt := 1; ; attempt++ {
		res, err = s.promoteOnce(ctx, sess, req, res, staged, content, at)
		if !errors.Is(err, ErrConflict) || attempt == 2 {
			return res, err
		}
	}
}

// promoteOnce is promote's steps 2 to 5 on the store's backend.
func (s *Store) promoteOnce(ctx context.Context, sess Session, req PromoteRequest, res PromoteResult, staged stagedFile, content stagedContent, at *cancelStep) (PromoteResult, error) {
	// Step 2: the key, held for writing (its exclusive lock, with what a
	// crash left behind settled), and what it holds now.
	*at = stepKey
	txn, err := s.begin(ctx, sess.Key, sess.Base)
	switch {
	case errors.Is(err, ErrKeyDirNotADirectory):
		res.Reason = gates.NotARegularFile
		return res, nil
	case errors.Is(err, ErrKeyLocked):
		res.Reason = gates.Locked
		return res, nil
	case err != nil:
		return res, err
	}
	defer txn.Close()
	*at = stepContract
	prev, history, cur := txn.State()

	// Step 3: the job's contract, in the order the doc gives: a repeat, a
	// moved base, a rewritten prefix, a required shape.
	// A refusal is returned once recorded. The last look at ctx is before
	// its record: given up there, nothing is recorded, and the retry
	// decides again. The record's own waits (a fleet's etcd) end with ctx
	// too, where the backend takes it (ContextBackend); a key dir's is
	// one write to meta.db, under the lock already held.
	refused := func(r gates.Reason) (PromoteResult, error) {
		res.Reason = r
		*at = stepRefusal
		if err := s.fault(faults.PromoteRefusalDecided); err != nil {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		return res, s.refuse(txn, history, sess, res, cur.Gen)
	}
	if sess.Ticket != "" {
		// A promotion of this ticket that the key no longer holds (its
		// generation is above the key's: committed, then its temp lost
		// before the rename; or a job since promoted onto the generation
		// before it, which the key was back at) is no result to repeat;
		// the retry promotes the run again onto the base the key is back
		// at, or is superseded by what was promoted there.
		e, ok := findPromotion(history, sess.Ticket)
		// The record names this very run, and the key does not hold it:
		// the promotion's temp was lost before its rename and the file in
		// place is neither its nor the generation before it (that would be
		// the key's base), or its file was replaced or damaged since. The
		// retry is then the only copy of the record's generation, and is
		// promoted again onto the record, as a job resolved there now
		// would be. Read only for a retry of the record's generation
		// that the key, as Begin settled it, takes to be in place (cur):
		// a promotion lost before its rename left the key at the
		// generation before, which says "not held" with no read to fail.
		same, stranded := ok && sameRun(e, prev, staged, content), false
		if same && prev.Transcript != nil && e.Gen == prev.Transcript.Gen && e.Gen == cur.Gen {
			holds, err := holdsRecord(ctx, txn)
			if err != nil {
				return res, err
			}
			stranded = !holds
		}
		if ok && e.Gen <= cur.Gen && !stranded {
			if !same {
				// Another transcript under a ticket that promoted: not a
				// retry, and the key holds this ticket's own promotion,
				// not its base.
				res.SupersededBy = cur.Gen
				return refused(gates.Superseded)
			}
			res.Promoted, res.Repeat, res.Reason = true, true, gates.Promoted
			res.Bytes, res.Gen, res.Run, res.Rewritten, res.TornTail = e.Bytes, e.Gen, transcript.Shape(e.Run), e.Rewritten, e.TornTail
			return res, nil
		}
		// A cold start's run holds nothing of the key's, so onto a key
		// that holds nothing now it replaces nothing, as a ticket
		// resolved on an absent key does not: a job resolved expired
		// whose key the next reap removed before its promote was
		// superseded by nothing, the key left empty and the job's new
		// conversation in its job dir. A resumed run is still
		// superseded there: it would bring back a conversation removed
		// since.
		if !stranded && !sess.Base.same(cur) && (sess.Resume || !(Base{}).same(cur)) {
			res.SupersededBy = cur.Gen
			return refused(gates.Superseded)
		}
		if !content.prefixOK && !req.AllowRewrite {
			return refused(gates.TranscriptRewritten)
		}
	} else if !sess.oldBase(cur) {
		res.SupersededBy = cur.Gen
		return refused(gates.Superseded)
	}
	if req.Require != "" && content.run != req.Require {
		return refused(gates.RunIncomplete)
	}
	rewritten := sess.Ticket != "" && !content.prefixOK

	// Step 4: the new transcript, durable but not yet the key's. Its
	// generation grows from the highest the key remembers, never from the
	// base's: a promotion lost in a crash keeps its number.
	gen := satAdd(lastGen(prev, history), 1)
	*at = stepStage
	st, err := txn.Stage(gen, readerAtIn(ctx, staged.f), staged.size, staged.torn)
	if err != nil {
		return res, err
	}
	if st.CRC32C != content.sum {
		return res, fmt.Errorf("copy %s: the staged file changed while it was promoted", staged.f.Name())
	}
	// The last look at ctx: from the commit on, the promotion is carried
	// through whatever its caller says. Given up here, Close removes what
	// Stage wrote, and nothing of the key changed.
	*at = stepCommit
	if err := ctx.Err(); err != nil {
		return res, err
	}

	// Step 5: the commit, one atomic step for the identity, every sidecar
	// and the history; only then is it promoted.
	rec, dropped := s.nextRecord(sess, req, prev, content)
	now := s.opts.Now()
	rec.Transcript = &db.Transcript{Gen: gen, Size: st.Size, CRC32C: uint64(st.CRC32C), PromotedAt: db.RecordedAt(now)}
	rec.PiVersion = &req.PiVersion
	entry := db.HistoryEntry{
		Gen: gen, At: db.RecordedAt(now), Resumed: sess.Resume, Reason: string(sess.Reason),
		Bytes: st.Size, Chain: *rec.ResumeChain, Job: sess.Job, TornTail: staged.torn,
		Ticket: sess.Ticket, Run: string(content.run), Rewritten: rewritten, BaseGen: sess.Base.Gen,
		CRC32C: uint64(st.CRC32C),
	}
	err = notCancelled(txn.Commit(st, rec, entry))
	if dropped != nil && !errors.Is(err, ErrConflict) {
		// Said, because nothing else would: the promotion's answer is the
		// same, and the context bound never judges the conversation. Said
		// of a commit that failed too, but for a lost compare (Promote
		// looks again): a failed one may have landed (a rename that failed
		// after it), and its retry is then a repeat, which says nothing.
		s.opts.Logger.Warn().Str("key", sess.Key).Str("model", dropped.model).Int64("tokens", dropped.tokens).Msg("session_reading_dropped")
	}
	if err != nil {
		return res, err
	}
	res.Promoted, res.Reason, res.Bytes, res.Gen, res.TornTail, res.Rewritten = true, gates.Promoted, st.Size, gen, staged.torn, rewritten
	return res, nil
}

// CheckRoot refuses a ticket issued by a store with another root
// (ErrWrongRoot), as Promote does before it writes anything: a caller that
// writes before the promotion (the CLI, whose fleet claims its transcripts
// dir first) asks it first. Two spellings of one directory (a link, a bind
// mount) are the same root; a ticket from before the job contract names
// none, and is this store's. A store with no backend (ErrNoBackend) has
// no root for any ticket.
func (s *Store) CheckRoot(sess Session) error {
	if s.backend == nil {
		return ErrNoBackend
	}
	if sess.Ticket == "" {
		// A ticket from before the job contract names no root; but a
		// backend that says it is none (a fleet.Backend fleet.Open did
		// not make: no dir, and an ID of ErrNoBackend) has no root for it
		// either, as a store on none. Only such a one is asked its ID: a
		// sessions root's resolves its path, which a promote of such a
		// ticket has no need of.
		if b, ok := s.backend.(dirBackend); ok && b.Dir() == "" {
			if _, err := s.backend.ID(); errors.Is(err, ErrNoBackend) {
				return err
			}
		}
		return nil
	}
	same, err := s.backend.SameID(sess.Root)
	if err != nil || same {
		return err
	}
	mine, err := s.backend.ID()
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: the ticket names %s, this store is %s", ErrWrongRoot, sess.Root, mine)
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
	// Every entry counts: a promotion's names the generation it made, an
	// operator's acceptance the one it recorded, and a refusal the one the
	// key held, never more.
	for _, e := range history {
		g = max(g, e.Gen)
	}
	return g
}

// findPromotion returns the history entry of the promotion made with
// ticket, if the ring still holds it, the key has not been back below it
// since, and no operator's accept has made another file the key's since
// (an accept is recorded only for a file in place that its record did not
// describe: the key then held nothing of the run). A committed promotion
// whose temp was lost before its rename leaves the key at the generation
// before it; a job promoted from there
// records that base, below the lost generation, and the key's generations
// from then on hold nothing of the lost run, though their numbers are
// higher. A promotion whose ticket had no base (a locked resolve's, onto a
// key that held nothing) records 0, as low. One with no ticket (from
// before the job contract) names no base it was checked against, and
// tells nothing.
func findPromotion(history []db.HistoryEntry, ticket string) (db.HistoryEntry, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		e := history[i]
		if !e.RecordedBy(ticket, "") {
			continue
		}
		for _, later := range history[i+1:] {
			if later.Outcome == "" && later.Ticket != "" && later.BaseGen < e.Gen {
				return db.HistoryEntry{}, false
			}
			if later.Outcome == AcceptedOutcome {
				return db.HistoryEntry{}, false
			}
		}
		return e, true
	}
	return db.HistoryEntry{}, false
}

// sameRun reports whether the staged file is the transcript the ticket's
// promotion e made, so that promoting it again is a retry that may repeat
// e's result: a job that ran pi again after its promote, or a job dir
// reused without a resolve, must not be told that its new work is the
// key's. The size is compared always; the CRC32C e recorded, or where it
// recorded none (an entry from before it did) the record's while that
// still describes e's generation.
func sameRun(e db.HistoryEntry, rec db.Sidecars, staged stagedFile, content stagedContent) bool {
	size := staged.size
	if staged.torn {
		size++ // the newline e's promotion added
	}
	if e.Bytes != size {
		return false
	}
	if e.CRC32C != 0 {
		return e.CRC32C == uint64(content.sum)
	}
	if t := rec.Transcript; t != nil && t.Gen == e.Gen {
		return t.CRC32C == uint64(content.sum)
	}
	return true
}

// refuse records the refusal res names in the key's history, at gen, the
// generation the key holds, once per ticket and reason (RefusalRecorded).
func (s *Store) refuse(txn KeyTxn, history []db.HistoryEntry, sess Session, res PromoteResult, gen uint64) error {
	if RefusalRecorded(history, sess.Ticket, string(res.Reason)) {
		return nil
	}
	return txn.Refuse(db.HistoryEntry{
		Gen: gen, At: db.RecordedAt(s.opts.Now()), Outcome: string(res.Reason),
		Resumed: sess.Resume, Reason: string(sess.Reason), Bytes: sess.Bytes,
		Job: sess.Job, Ticket: sess.Ticket, Run: string(res.Run), BaseGen: sess.Base.Gen,
	})
}

// RefusalRecorded reports whether history already holds a refusal of
// ticket for outcome (a gates.Reason). A refusal is recorded once per
// ticket and reason, so that a runner that retries cannot push real
// promotions out of the ring; one with no ticket is no job's retry to
// tell, and is recorded each time. A KeyTxn whose State held no history
// (fleet's, taken on a base it did not read) asks it in Refuse, of the
// history it reads there.
func RefusalRecorded(history []db.HistoryEntry, ticket, outcome string) bool {
	return slices.ContainsFunc(history, func(e db.HistoryEntry) bool { return e.RecordedBy(ticket, outcome) })
}

// nextRecord applies the sidecar rules to what the key held (prev) and
// what the run left (content): the venue, the resume chain and the
// context reading of the next record. The chain counts the host's
// deliveries: one more when the host handed the key's transcript to this
// run, 0 after a cold start; it saturates instead of wrapping, so a bound
// never stops refusing.
//
// The reading is pi's own at the end of the run, computed on the promoted
// transcript, with the caller's overrides (see PromoteRequest). An unknown
// reading (a compaction with no fresh usage since) or an unknown window is
// no measurement, and clears the previous one: it described a context that
// no longer exists. A cold run's own reading is kept (the legacy store
// deleted it, so a conversation promoted full resumed once more).
//
// dropped is a reading pi knows that the record leaves out for want of
// its model's window (nil when there is none), for promote to log once
// the commit has landed.
func (s *Store) nextRecord(sess Session, req PromoteRequest, prev db.Sidecars, content stagedContent) (rec db.Sidecars, dropped *droppedReading) {
	venue := sess.Venue
	if venue == "" {
		// A job whose venue is unknown never resumes; its promotion leaves
		// a stamp that matches no venue, as the legacy store did.
		venue = legacy.PendingVenue
	}
	var chain uint64
	if sess.Resume && prev.ResumeChain != nil {
		chain = satAdd(*prev.ResumeChain, 1)
	} else if sess.Resume {
		chain = 1
	}
	rec = db.Sidecars{Venue: &venue, ResumeChain: &chain}
	tokens, known := content.end.Tokens, content.end.Known
	if req.Tokens != nil {
		tokens, known = *req.Tokens, true
	}
	model := content.end.Model
	window := req.Window
	if window == 0 {
		window, _ = s.windows().Window(model)
	}
	switch {
	case known && window > 0:
		// Stamped in the form the job's model takes at resolve (and the
		// legacy store's stamp took), which the context rung compares
		// with: pi writes the id as its provider spells it
		// (huggingface/Qwen/...), and the window is looked up so.
		rec.Context = &db.Context{Tokens: tokens, Window: window, Model: legacy.NormaliseModel(model)}
	case known && model != "":
		// A model pi knows from a models.json the store was not given is
		// the usual cause. A transcript that records no model (a prompt
		// never answered) has no window anywhere: nothing to say.
		dropped = &droppedReading{model: model, tokens: tokens}
	}
	return rec, dropped
}

// droppedReading is a run's reading that its record leaves out, its
// model's window unknown.
type droppedReading struct {
	model  string
	tokens int64
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

// uncancelled is the error of a step that never consults the caller's
// context (a commit): a fault, even once the context has ended, never the
// caller's cancel.
type uncancelled struct{ err error }

func (e *uncancelled) Error() string { return e.err.Error() }
func (e *uncancelled) Unwrap() error { return e.err }

// notCancelled marks err, if any, as uncancelled.
func notCancelled(err error) error {
	if err == nil {
		return nil
	}
	return &uncancelled{err}
}
