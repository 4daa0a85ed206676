package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// Job describes the job a conversation would be handed to.
//
// Its stamps (PiVersion, Venue) are compared and stamped exactly as
// given: white space around one is part of the value here. The CLI trims
// it (JavaScript's set, as the legacy reader trims every sidecar); a
// caller that reads a stamp from a file or a variable trims it itself, or
// a key it stamps matches only jobs given the same blanks (a CLI job's
// first resolve of it is venue-changed or pi-version-changed), and
// migrate --to-legacy fails that key (migrate.ErrNotLegacy) until a
// promotion restamps it. A Model with white space around it fails the
// legacy check and is no model (the context bound does not apply), and so
// does one that is not valid UTF-8. Each field is at most MaxValueBytes
// long, and PiVersion, Venue and ID are valid UTF-8: Resolve refuses a
// longer one (ErrValueTooLong) and one that is not text (ErrValueNotUTF8),
// as the CLI refuses such a flag.
type Job struct {
	// PiVersion is the version of pi the job's image declares; "" means it
	// declares none, and such a job never resumes.
	PiVersion string
	// Venue is the backend the job runs on; "" means it could not be
	// resolved, and such a job never resumes. The legacy default is "local".
	Venue string
	// Model is the job's provider/model id; it is normalised as the legacy
	// store did (lowercased, checked) before it is compared or stamped.
	Model string
	// ID names the job in the audit history; it may be empty.
	ID string
}

// MaxValueBytes bounds each of a job's values: Job's four fields, a
// PromoteRequest's PiVersion, and the Session's Venue, Model and Job. It
// is the legacy SIDECAR_MAX_BYTES, the most a stamp's sidecar holds: a
// longer stamp could go into meta.db, but its key could never be migrated
// back (the legacy reader has no value for it), and the ticket that
// carries a job's values must stay one that ReadTicket reads
// (maxTicketBytes).
const MaxValueBytes = legacy.SidecarMaxBytes

// checkValues refuses the first of the job's values that is longer than
// MaxValueBytes (ErrValueTooLong), or, but for the model, not valid UTF-8
// (ErrValueNotUTF8), naming it and its length, never quoting it. The
// ticket is JSON: a value that is not text would come back from
// ReadTicket as another one, and its promotion would stamp that. A model
// that is not text is no model (the legacy check refuses every byte
// outside ASCII), as it was: the ticket never carries it.
func (j Job) checkValues() error {
	for _, v := range []struct {
		name, value string
		text        bool
	}{
		{"pi version", j.PiVersion, true}, {"venue", j.Venue, true}, {"model", j.Model, false}, {"job id", j.ID, true},
	} {
		if len(v.value) > MaxValueBytes {
			return fmt.Errorf("%s of %d bytes: %w", v.name, len(v.value), ErrValueTooLong)
		}
		if v.text && !utf8.ValidString(v.value) {
			return fmt.Errorf("%s of %d bytes: %w", v.name, len(v.value), ErrValueNotUTF8)
		}
	}
	return nil
}

// Resolve judges key for job and stages the result in
// <jobDir>/session/current.jsonl (dir 0700): the key's transcript when the
// ladder says resume and the copy matches the transcript's recorded
// identity, a 0-byte file otherwise. Every miss is a Session with Resume
// false and its reason, not an error. The Session is also written to
// <jobDir>/session.ticket for the Promote of the same job (ReadTicket).
//
// The key's shared lock is held from reading the sidecars to the end of the
// copy, so no promotion can land between the judgement and the copy.
//
// An invalid key (ErrInvalidKey), a job value longer than MaxValueBytes
// (ErrValueTooLong) or not valid UTF-8 (ErrValueNotUTF8; see Job), an
// empty jobDir (ErrNoJobDir), or a
// job dir that is the store's directory (the sessions root, a fleet's
// transcripts dir), lies inside one of its keys' directories (a key's
// own, or one moved aside by a reap or a quarantine), or holds it, or
// one that cannot be told apart from it (ErrJobDirInStore:
// the job's container is given <jobDir>/session, and a worker removes its
// job dir after the job), and a sessions root that leads to a path that
// is not valid UTF-8 (ErrRootNotUTF8: the ticket names the root as text),
// are refused before anything is touched, and so is a root whose path
// stops resolving between the two, and a job dir another resolve or
// promote is using at that moment (ErrJobDirBusy: the second of two
// resolves at once could leave its ticket beside the first's
// transcript). Any other error means a fault (an
// unusable job dir, an I/O error); the staged file is then removed, and
// no ticket is left in the job dir, not even an earlier resolve's, so
// nothing half-copied or stale is left for the container or for promote.
func (s *Store) Resolve(key string, job Job, jobDir string) (Session, error) {
	return s.ResolveContext(context.Background(), key, job, jobDir)
}

// ResolveContext is Resolve, given up once ctx is done: while it waits for
// the key's lock (KeyDirs) or for the backend (a fleet's etcd requests,
// with a Backend that takes a context: ContextBackend), and between the
// chunks of its copy. A resolve given up so returns an error that wraps
// ctx's (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded), with no staged file and no ticket left in the
// job dir, an earlier resolve's included, as after a fault: the caller's
// cancel, not a verdict (the ladder's judgement, if it ran, is not
// returned). A ctx done before the call touches nothing; the arguments are
// checked first. Once the ticket is written the Session is returned,
// whatever ctx says. A nil ctx is context.Background(), which never ends.
// A ctx of the caller's own type that breaks Go's contract is held to it
// (as PromoteContext's is): a Done closed while Err is nil is
// context.Canceled, a panic in its Err or Done is the call given up (an
// error that wraps context.Canceled and says the panic), and its Deadline
// replaces none of the store's own bounds (Done and Err end the call;
// LockTimeout and a fleet's request timeout bound it as ever; a fleet
// only tries an etcd that did not answer no more once it has passed).
func (s *Store) ResolveContext(ctx context.Context, key string, job Job, jobDir string) (Session, error) {
	ctx = callerctx.Of(ctx)
	if s.backend == nil {
		return Session{}, fmt.Errorf("resolve %q: %w", key, ErrNoBackend)
	}
	if !ValidKey(key) {
		return Session{}, fmt.Errorf("resolve %q: %w", key, ErrInvalidKey)
	}
	if err := job.checkValues(); err != nil {
		return Session{}, fmt.Errorf("resolve %s: %w", key, err)
	}
	// Not a fault of the disk's: a caller's Job or path mixed up. The
	// mkdir it meets otherwise says only "mkdir : no such file or
	// directory".
	if jobDir == "" {
		return Session{}, fmt.Errorf("resolve %s: %w", key, ErrNoJobDir)
	}
	// Nothing touched yet: a caller that gave up before the call is told
	// so, and nothing is logged, as for the arguments refused above.
	if err := ctx.Err(); err != nil {
		return Session{}, fmt.Errorf("resolve %s: %w", key, err)
	}
	at := stepJobDir
	sess, err := s.resolve(ctx, key, job, jobDir, &at)
	switch {
	case err != nil && ctx.Err() != nil:
		// A fault met once ctx had ended (the job dir's, before the copy
		// began) is said, not wrapped, as resolve does after the copy:
		// the error is the cancel's.
		if cerr := ctx.Err(); !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (and %v)", cerr, err)
		}
		s.opts.Logger.Info().Str("key", key).Str("step", string(at)).Err(err).Msg("session_resolve_cancelled")
		return Session{}, fmt.Errorf("resolve %s: %w", key, err)
	case err != nil:
		s.opts.Logger.Error().Str("key", key).Err(err).Msg("session_store_failed")
		return Session{}, fmt.Errorf("resolve %s: %w", key, err)
	}
	s.opts.Logger.Info().Str("key", key).Bool("resume", sess.Resume).Str("reason", string(sess.Reason)).Int64("bytes", sess.Bytes).Msg("session_resolved")
	return sess, nil
}

// resolve is the read path (DESIGN.md) for one job, every step in order:
// the job dir made ready, the judgement and copy, the ticket. Resolve adds
// the key to its error and logs the outcome; at is kept at the step under
// way, for the log line of a resolve given up.
func (s *Store) resolve(ctx context.Context, key string, job Job, jobDir string, at *cancelStep) (Session, error) {
	sess := Session{Key: key, Venue: job.Venue, Model: legacy.NormaliseModel(job.Model), Job: job.ID, JobDir: jobDir}

	// Step 0: the job dir, apart from the store's files before anything is
	// made (a relative root whose working directory is gone, which the
	// store's ID cannot name, is refused here too). Then the staged dir,
	// locked (another resolve or promote there at once is ErrJobDirBusy,
	// nothing removed); an earlier resolve's ticket goes next, so that a
	// fault from here on leaves no ticket at all; then a fresh staged
	// file, a cold start unless the copy fills it. A Dir of "" is no
	// directory (a fleet.Backend that fleet.Open did not make, whose ID
	// says so next): "" is not the working directory, which the job dir
	// would otherwise be refused for.
	if b, ok := s.backend.(dirBackend); ok && b.Dir() != "" {
		if err := jobDirApart(jobDir, b.Dir()); err != nil {
			return Session{}, err
		}
	}
	// The store's ID, which the ticket names, before anything is made:
	// a root that leads to a name that is not UTF-8 has none
	// (ErrRootNotUTF8). A root whose path stopped resolving since the
	// check above (a part's mode changed between the two) is refused
	// here too, like one the check could not resolve: an earlier
	// resolve's ticket is left as it is.
	var err error
	if sess.Root, err = s.backend.ID(); err != nil {
		return Session{}, err
	}
	// The Session names its job dir absolute, as it names its root: a
	// promote made from another working directory (a Session kept as
	// JSON, a process that changed directory since) looks where the run
	// is, not for a relative path under the working directory then. Not
	// cleaned: "link/.." is where the kernel takes it, the link's target's
	// parent (see fsat.ResolvedPath).
	if !filepath.IsAbs(jobDir) {
		wd, err := os.Getwd()
		if err != nil {
			return Session{}, fmt.Errorf("job dir %s: the working directory: %w", jobDir, err)
		}
		sess.JobDir = wd + string(filepath.Separator) + jobDir
	}
	jd, err := openJobDir(jobDir)
	if err != nil {
		return Session{}, err
	}
	defer jd.Close()
	// The staged dir is held from here on: another resolve or promote in
	// the same job dir at once is ErrJobDirBusy, before this one removes
	// anything.
	sd, err := stagedDir(jd)
	if err != nil {
		if rerr := removeTicket(jd); rerr != nil {
			return Session{}, rerr
		}
		return Session{}, err
	}
	defer fsat.CloseFlocked(sd)
	if err := lockStaging(sd); err != nil {
		return Session{}, err
	}
	if err := removeTicket(jd); err != nil {
		return Session{}, err
	}
	staged, err := createStaged(sd)
	if err != nil {
		return Session{}, err
	}
	sess.Ticket, err = newTicketID()
	if err == nil {
		err = s.judgeAndCopy(ctx, key, job, staged, &sess, at)
	}
	if cerr := staged.Close(); err == nil && cerr != nil {
		err = cerr
	}
	// A caller that gave up gets no verdict: one reached after the cancel
	// may be its doing (the lock's wait or etcd's request cut short, read
	// as locked or store-unavailable), and a fault met after it is said
	// but not wrapped: the error is the cancel's. The staged file goes,
	// and no ticket is written.
	if err == nil {
		*at = stepTicket
	}
	if cerr := ctx.Err(); cerr != nil && (err == nil || !errors.Is(err, cerr)) {
		if err == nil {
			err = cerr
		} else {
			err = fmt.Errorf("%w (and %v)", cerr, err)
		}
	}
	// Step 6: the ticket, for the promote of the same job.
	if err == nil {
		err = writeTicket(jd, sess)
	}
	if err != nil {
		// sd is the staged dir itself, opened without following a link:
		// this unlink cannot reach another key's transcript.
		fsat.UnlinkAt(sd, TranscriptName)
		return Session{}, err
	}
	return sess, nil
}

// maxCopies bounds the copies one resolve makes: the key's transcript,
// and at most two fallbacks a crash can call for.
const maxCopies = 3

// judgeAndCopy is the read path's steps 1 to 5 (DESIGN.md) on the store's
// backend: the key's view, the ladder, and the copy checked against what
// the key holds.
func (s *Store) judgeAndCopy(ctx context.Context, key string, job Job, staged *os.File, sess *Session, at *cancelStep) error {
	cold := func(r gates.Reason) error {
		sess.Resume, sess.Reason, sess.Bytes, sess.CRC32C = false, r, 0, 0
		if r == gates.StoreUnavailable {
			// Nothing of the key could be read (etcd silent, a fleet's
			// transcripts dir gone): the key may hold a conversation
			// whole, which the job's cold run must never replace. With
			// no base, its promote is superseded by whatever the key
			// holds, as a locked key's is.
			sess.Base = Base{}
		}
		return nil
	}

	// Steps 1 to 3: the key dir (never through a link), its meta.db under
	// the shared lock or its legacy files, and the observation. The view
	// holds the lock until it is closed, so no promotion can land between
	// the judgement and the copy.
	*at = stepKey
	v, err := s.view(ctx, key)
	if err != nil {
		return err
	}
	defer v.Close()
	*at = stepCopy
	// The base is the ticket's whatever the verdict (but
	// store-unavailable: see cold): a cold start's job promotes onto what
	// the key holds.
	sess.Base = v.Base()
	obs, reason := v.Observe()
	if reason != "" {
		return cold(reason)
	}

	// Step 4: the ladder; the first miss wins and names itself.
	gjob, now := gates.Job{PiVersion: job.PiVersion, Venue: job.Venue, Model: sess.Model}, s.opts.Now()
	verdict := gates.Evaluate(obs, s.opts.Bounds, gjob, now)
	if err := s.fault(faults.ResolveAfterGates); err != nil {
		return err
	}
	if !verdict.Resume {
		if name, ok := judgedUnread(verdict, obs, s.opts.Bounds, gjob, now); ok {
			// The rung judged a stamp whose file could not be read: the
			// legacy reader's verdict, but the key could not be read, so
			// the job's cold run must not replace what it holds. The
			// line names the file, under the root as check names it,
			// and why its read failed.
			var err error
			if sv, ok := v.(stampNotRead); ok {
				err = sv.StampNotRead(name)
			}
			s.opts.Logger.Warn().Str("key", key).Str("reason", string(verdict.Reason)).Str("file", key+"/"+name).Err(err).Msg("session_stamp_unread")
			sess.Base = Base{}
		}
		return cold(verdict.Reason)
	}

	// Step 5: the copy, checksummed as it goes, must be what the key
	// holds; a view can offer another file (a crash's fallback) instead,
	// a bounded number of times.
	for copies := 1; ; copies++ {
		if copies > maxCopies {
			return fmt.Errorf("copy %s: still no match after %d copies", key, maxCopies)
		}
		src, limit := v.Source()
		tail := &lastByte{w: staged}
		size, sum, err := copyCounted(ctx, tail, src, limit)
		var lost *sourceError
		if errors.As(err, &lost) {
			if r := v.Lost(lost.err); r != "" {
				// Read again: a view can find the key moved on under
				// the copy (a fleet's key reaped: absent, no base).
				sess.Base = v.Base()
				return coldAfterCopy(staged, r, cold)
			}
		}
		if err != nil {
			return err
		}
		if err := s.fault(faults.ResolveAfterCopy); err != nil {
			return err
		}
		a := v.Accept(size, sum)
		switch {
		case a.Err != nil:
			return a.Err
		case a.Resume:
			if size > 0 && tail.b != '\n' {
				// A transcript whose last line has no newline (a legacy
				// worker's, cut by a write that failed): pi would glue
				// its first append onto that line and drop both on its
				// next load, and with the run's first entry gone, the
				// entry after it names a parent that is not there: the
				// whole history falls out of the context. The job gets
				// it with the newline promote adds to a torn tail; the
				// ticket describes what was staged, its base the key.
				if _, err := staged.Write([]byte{'\n'}); err != nil {
					return err
				}
				size, sum = size+1, crc32.Update(sum, castagnoli, []byte{'\n'})
			}
			sess.Resume, sess.Reason, sess.Bytes, sess.CRC32C, sess.Base = true, gates.Resumed, size, Checksum(sum), a.Base
			return nil
		case a.Retry:
			if err := resetStaged(staged); err != nil {
				return err
			}
		default:
			if a.Unbased {
				sess.Base = Base{}
			}
			return coldAfterCopy(staged, a.Reason, cold)
		}
	}
}

// judgedUnread reports whether the rung that refused a key with verdict v
// judged a stamp whose file is there but could not be read (an I/O error:
// gates.Stamp.NotRead), and that stamp decided it: read as the job's own
// value, the ladder would say otherwise; file is the stamp's file name.
// Where the job declares no venue (or no pi version) the rung refuses
// whatever the stamp holds, so a read that failed changed nothing, and the
// cold start keeps its base, as with the stamp read.
func judgedUnread(v gates.Verdict, obs gates.Observation, b gates.Bounds, job gates.Job, now time.Time) (file string, ok bool) {
	switch {
	case v.Reason == gates.VenueChanged && obs.Venue.NotRead:
		obs.Venue, file = gates.Stamp{State: gates.StampPresent, Value: job.Venue}, legacy.VenueName
	case v.Reason == gates.PiVersionChanged && obs.PiVersion.NotRead:
		obs.PiVersion, file = gates.Stamp{State: gates.StampPresent, Value: job.PiVersion}, legacy.PiVersionName
	default:
		return "", false
	}
	return file, gates.Evaluate(obs, b, job, now).Reason != v.Reason
}

// stampNotRead is a KeyView that can say why a stamp it observed as not
// read (gates.Stamp.NotRead) was not: the read's error of its file, by
// the file's name (a key dir's legacy stamps; a fleet has none).
type stampNotRead interface {
	StampNotRead(name string) error
}

// lastByte is a writer that remembers the last byte written through it.
type lastByte struct {
	w io.Writer
	b byte
}

// Write writes p to the underlying writer.
func (l *lastByte) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.b = p[n-1]
	}
	return n, err
}
