package store

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
	"sessdb/store/transcript"
)

// Job describes the job a conversation would be handed to.
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
// An error means a fault (an unusable job dir, an I/O error); the staged
// file is then removed, and no ticket is left in the job dir, not even an
// earlier resolve's, so nothing half-copied or stale is left for the
// container or for promote.
func (s *Store) Resolve(key string, job Job, jobDir string) (Session, error) {
	if !ValidKey(key) {
		return Session{}, fmt.Errorf("resolve %q: %w", key, ErrInvalidKey)
	}
	sess, err := s.resolve(key, job, jobDir)
	if err != nil {
		s.opts.Logger.Error().Str("key", key).Err(err).Msg("session_store_failed")
		return Session{}, fmt.Errorf("resolve %s: %w", key, err)
	}
	s.opts.Logger.Info().Str("key", key).Bool("resume", sess.Resume).Str("reason", string(sess.Reason)).Int64("bytes", sess.Bytes).Msg("session_resolved")
	return sess, nil
}

func (s *Store) resolve(key string, job Job, jobDir string) (Session, error) {
	root, err := s.absRoot()
	if err != nil {
		return Session{}, err
	}
	ticket, err := newTicketID()
	if err != nil {
		return Session{}, err
	}
	sess := Session{Ticket: ticket, Root: root, Key: key, Venue: job.Venue, Model: legacy.NormaliseModel(job.Model), Job: job.ID, JobDir: jobDir}

	// The job dir: an earlier resolve's ticket goes first, so that a fault
	// from here on leaves no ticket at all; then a fresh staged file.
	jd, err := openJobDir(jobDir)
	if err != nil {
		return Session{}, err
	}
	defer jd.Close()
	if err := removeTicket(jd); err != nil {
		return Session{}, err
	}
	sd, err := stagedDir(jd)
	if err != nil {
		return Session{}, err
	}
	defer sd.Close()
	staged, err := createStaged(sd)
	if err != nil {
		return Session{}, err
	}
	err = s.resolveInto(key, job, sess.Model, staged, &sess)
	if cerr := staged.Close(); err == nil && cerr != nil {
		err = cerr
	}
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

// absRoot is the sessions root as a ticket records it: absolute and clean.
func (s *Store) absRoot() (string, error) { return filepath.Abs(s.root) }

func (s *Store) resolveInto(key string, job Job, model string, staged *os.File, sess *Session) error {
	cold := func(r gates.Reason) error {
		sess.Resume, sess.Reason, sess.Bytes, sess.CRC32C = false, r, 0, 0
		return nil
	}

	k, err := s.openKey(key, false)
	if err != nil {
		return err
	}
	if k.missing {
		return cold(gates.Absent)
	}
	if k.notDir {
		return cold(gates.NotARegularFile)
	}
	defer k.close()
	if k.locked {
		return cold(gates.Locked)
	}
	sess.Base = k.base()
	v := gates.Evaluate(k.obs, s.opts.Bounds, gates.Job{PiVersion: job.PiVersion, Venue: job.Venue, Model: model}, s.opts.Now())
	if err := s.fault(faults.ResolveAfterGates); err != nil {
		return err
	}
	if !v.Resume {
		return cold(v.Reason)
	}

	size, sum, err := copyCounted(staged, k.transcript, k.expectSize+1)
	if err != nil {
		return err
	}
	if err := s.fault(faults.ResolveAfterCopy); err != nil {
		return err
	}
	// A legacy key is not locked: the legacy store's venue re-check still
	// applies, ahead of the identity check, as its order was the contract.
	if k.layout == LayoutLegacy && legacy.ReadVenue(k.dir) != k.obs.Venue {
		return coldAfterCopy(staged, gates.VenueChanged, cold)
	}
	switch {
	case k.matches(size, sum):
	case !k.fromTemp && k.matchesPrev(size, sum):
		// A committed promotion's temp is gone, and what is in place is
		// the generation before it: that is what the key holds.
		sess.Base = baseOf(k.pending.Prev, nil)
	case k.fromTemp:
		// The committed promotion's temp is damaged: the transcript in
		// place may still be the generation before it.
		if err := resetStaged(staged); err != nil {
			return err
		}
		if err := k.reopenInPlace(); err != nil {
			return err
		}
		if k.transcript == nil {
			return cold(gates.PromotionLost)
		}
		if size, sum, err = copyCounted(staged, k.transcript, k.expectSize+1); err != nil {
			return err
		}
		if !k.matchesPrev(size, sum) {
			return coldAfterCopy(staged, gates.PromotionLost, cold)
		}
		sess.Base = baseOf(k.pending.Prev, nil)
	default:
		return coldAfterCopy(staged, gates.TranscriptReplaced, cold)
	}
	sess.Resume, sess.Reason, sess.Bytes, sess.CRC32C = true, gates.Resumed, size, Checksum(sum)
	if k.layout == LayoutLegacy {
		// A legacy key's identity is its file; the delivered bytes are
		// known now, so the base can say exactly what was handed over.
		sess.Base.Size, sess.Base.CRC32C = size, Checksum(sum)
	}
	return nil
}

// resetStaged empties the staged file for another copy or a cold start.
func resetStaged(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// coldAfterCopy empties the staged file a copy filled, and cold-starts.
func coldAfterCopy(staged *os.File, r gates.Reason, cold func(gates.Reason) error) error {
	if err := resetStaged(staged); err != nil {
		return err
	}
	return cold(r)
}

// copyCounted copies at most limit bytes from src (from offset 0) to dst,
// and returns how many it copied and their CRC32C. A transcript of
// mapThreshold bytes or more is read through a mapping (copyMapped).
func copyCounted(dst io.Writer, src *os.File, limit int64) (int64, uint32, error) {
	if st, err := fsat.Fstat(src); err == nil && st.Size >= mapThreshold {
		if n, sum, err, mapped := copyMapped(dst, src, min(st.Size, limit)); mapped {
			return n, sum, err
		}
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(dst, h), io.NewSectionReader(src, 0, limit))
	if err != nil {
		return n, 0, fmt.Errorf("copy %s: %w", src.Name(), err)
	}
	return n, h.Sum32(), nil
}

// mapThreshold is the transcript size from which copyCounted maps the
// file: the checksum and the write then read the page cache in place,
// where reading the file first copies every byte into a buffer
// (internal/bench BenchmarkCopyCRC: 8 MiB in 2.1 ms mapped, 2.4 ms
// through a buffer; at 64 KiB the mapping's setup costs more than the
// copy it saves).
const mapThreshold = 1 << 20

// mapChunk is how much of the mapping is checksummed and then written at a
// time: small enough that the write reads what the checksum just brought
// into the CPU's cache.
const mapChunk = 256 << 10

// copyMapped copies the first size bytes of src to dst through a read-only
// mapping. mapped is false when the file could not be mapped (the caller
// then reads it). The store only ever replaces a transcript by rename, but
// a file cut short out of band under the mapping would make reading past
// its new end fault (SIGBUS): that fault is recovered, and the copy ends
// short, as a read would have, for the identity check to refuse.
func copyMapped(dst io.Writer, src *os.File, size int64) (n int64, sum uint32, err error, mapped bool) {
	if size <= 0 || size != int64(int(size)) {
		return 0, 0, nil, false
	}
	m, merr := unix.Mmap(int(src.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if merr != nil {
		return 0, 0, nil, false
	}
	defer unix.Munmap(m)
	unix.Madvise(m, unix.MADV_SEQUENTIAL)
	prev := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			if _, isFault := r.(interface{ Addr() uintptr }); !isFault {
				panic(r)
			}
			err, mapped = nil, true // cut short: n bytes were copied
		}
	}()
	for off := 0; off < len(m); off += mapChunk {
		b := m[off:min(off+mapChunk, len(m))]
		next := crc32.Update(sum, castagnoli, b)
		w, werr := dst.Write(b)
		n += int64(w)
		if errors.Is(werr, unix.EFAULT) { // cut short between the checksum and the write
			return n, sum, nil, true
		}
		if werr != nil {
			return n, sum, fmt.Errorf("copy %s: %w", src.Name(), werr), true
		}
		sum = next
	}
	return n, sum, nil, true
}

// key is one key dir opened for reading: the observation the ladder needs,
// and what the copy is checked against.
type keyDir struct {
	dir        *os.File
	meta       *db.DB // nil for the legacy layout or an unreadable db
	transcript *os.File
	tst        unix.Stat_t
	layout     Layout
	obs        gates.Observation
	identity   *db.Transcript // the db's record of current.jsonl
	expectSize int64
	missing    bool // no key dir
	notDir     bool // the key dir is a link or not a directory
	locked     bool // the shared lock was not had in time
	sidecars   db.Sidecars
	pending    *db.Pending // resolve only: a promotion committed, renamed or not
	fromTemp   bool        // resolve only: the transcript opened is pending's temp
	metaErr    error
	header     transcript.Header
	headerErr  error
}

// openKey opens key's dir, its meta.db (shared lock) and its transcript,
// and gathers the ladder's observation. forDump reads every legacy
// sidecar, bound or not.
func (s *Store) openKey(key string, forDump bool) (*keyDir, error) {
	k := &keyDir{}
	root, err := fsat.OpenDir(s.root)
	if err != nil {
		if fsat.IsNotExist(err) {
			k.missing = true
			return k, nil
		}
		return nil, err
	}
	defer root.Close()
	k.dir, err = fsat.OpenDirAt(root, key)
	if err != nil {
		switch {
		case fsat.IsNotExist(err):
			k.missing = true
			return k, nil
		case errors.Is(err, fsat.ErrNotDir):
			k.notDir = true
			return k, nil
		}
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			k.close()
		}
	}()
	if !forDump {
		if err := s.fault(faults.ResolveAfterKeyDirOpen); err != nil {
			return nil, err
		}
	}

	// The lock comes first: with it held no promotion can rename a new
	// transcript in between opening the file and reading its identity.
	k.meta, err = db.OpenReader(k.dir, fsat.Join(k.dir, db.FileName), db.Options{LockTimeout: s.opts.LockTimeout, Now: s.opts.Now})
	switch {
	case err == nil:
		k.layout = LayoutDB
	case errors.Is(err, fs.ErrNotExist):
		k.layout = LayoutLegacy
	case errors.Is(err, db.ErrLockTimeout):
		k.locked = true
		ok = true
		return k, nil
	case errors.Is(err, db.ErrDamaged), errors.Is(err, db.ErrNewerSchema):
		k.layout = LayoutDB
		k.metaErr = err
		k.obs.MetaUnreadable = true
	default:
		return nil, err
	}
	if k.meta != nil {
		err := k.meta.View(func(tx *db.Tx) error {
			sc, err := tx.Sidecars()
			// dump and check report a promotion in flight; one that landed
			// is none. Resolve never reads pending, and pays no lookup for it.
			if forDump && !pendingInFlight(k.dir, sc.Pending) {
				sc.Pending = nil
			}
			k.sidecars = sc
			return err
		})
		if err != nil {
			if !errors.Is(err, db.ErrDamaged) {
				return nil, err
			}
			k.metaErr = err
			k.obs.MetaUnreadable = true
		}
	}

	// A promotion committed but not yet renamed into place (a crash, or a
	// power cut, between the two) is served from its temp, which is whole
	// whenever the commit is: the conversation resumes at exactly the state
	// that was committed, and nothing is written here.
	name := TranscriptName
	if p := k.sidecars.Pending; !forDump && p != nil && !k.obs.MetaUnreadable {
		k.pending = p
		if pendingInFlight(k.dir, p) {
			name, k.fromTemp = p.Tmp, true
		}
	}
	if err := k.openTranscript(name); err != nil {
		return nil, err
	}
	switch {
	case k.obs.MetaUnreadable:
	case k.meta != nil && k.sidecars == (db.Sidecars{}):
		// A meta.db with no record at all vouches for nothing: it is a
		// first promotion, a migration or a reap's lock caught before its
		// commit. The legacy files, if any, still decide, as they will for
		// the promotion or migration that follows (it seeds from them).
		k.layout = LayoutLegacy
		k.observeLegacy(s.opts.Bounds, forDump)
	case k.meta != nil:
		k.observeDB()
	default:
		k.observeLegacy(s.opts.Bounds, forDump)
	}
	ok = true
	return k, nil
}

func (k *keyDir) openTranscript(name string) error {
	f, err := fsat.OpenAt(k.dir, name, unix.O_RDONLY, 0)
	switch {
	case err == nil:
	case fsat.IsNotExist(err):
		return nil
	case errors.Is(err, unix.ELOOP):
		k.obs.Transcript = gates.Transcript{Exists: true}
		return nil
	default:
		return err
	}
	st, err := fsat.Fstat(f)
	if err != nil {
		f.Close()
		return err
	}
	k.obs.Transcript = gates.Transcript{
		Exists:  true,
		Regular: fsat.IsRegular(&st),
		Size:    st.Size,
		ModTime: time.Unix(st.Mtim.Unix()),
	}
	if !k.obs.Transcript.Regular {
		f.Close()
		return nil
	}
	k.transcript, k.tst, k.expectSize = f, st, st.Size
	if st.Size > 0 {
		h, err := transcript.ReadHeader(io.NewSectionReader(f, 0, st.Size))
		k.header, k.headerErr = h, err
		if err == nil {
			k.obs.Header.IsSession = h.IsSession()
			if h.TimestampIsString {
				k.obs.Header.Timestamp, k.obs.Header.TimestampOK = transcript.ParseTimestamp(h.Timestamp)
			}
		}
	}
	return nil
}

func (k *keyDir) observeDB() {
	sc := k.sidecars
	if sc.Transcript != nil {
		k.identity = sc.Transcript
		k.obs.LastPromotion = time.Unix(0, sc.Transcript.PromotedAt)
		k.expectSize = sc.Transcript.Size
		if p := k.pending; p != nil && p.Prev != nil {
			k.expectSize = max(k.expectSize, p.Prev.Size)
		}
	}
	k.obs.Venue = stampOf(sc.Venue)
	k.obs.PiVersion = stampOf(sc.PiVersion)
	if sc.ResumeChain != nil {
		k.obs.ResumeChain = *sc.ResumeChain
	}
	if sc.Context != nil {
		k.obs.Context = &gates.Context{Tokens: sc.Context.Tokens, Window: sc.Context.Window, Model: sc.Context.Model}
	}
}

// observeLegacy reads the legacy sidecar files with the legacy rules. As
// in the legacy store, a bound's sidecar is read only when its bound is set
// (dump reads them all: it reports, it does not judge).
func (k *keyDir) observeLegacy(b gates.Bounds, all bool) {
	k.obs.Venue = legacy.ReadVenue(k.dir)
	k.obs.PiVersion = legacy.ReadPiVersion(k.dir)
	if b.MaxResumeChain > 0 || all {
		k.obs.ResumeChain = legacy.ReadResumeChain(k.dir)
	}
	if b.MaxContextPct > 0 || all {
		k.obs.Context = legacy.ReadContext(k.dir)
	}
}

func stampOf(p *string) gates.Stamp {
	if p == nil {
		return gates.Stamp{State: gates.StampAbsent}
	}
	return gates.Stamp{State: gates.StampPresent, Value: *p}
}

// matches reports whether a copy of size bytes with CRC32C sum is the
// transcript the key's sidecars describe. A db key must match its record;
// a db key with no record describes no transcript at all. A legacy key has
// no record: the copy must match the file as it was when judged, and the
// name must still refer to that file (the legacy store's identity re-check,
// since nothing locks a legacy key).
func (k *keyDir) matches(size int64, sum uint32) bool {
	if k.layout == LayoutDB {
		return k.identity != nil && k.identity.Size == size && k.identity.CRC32C == uint64(sum)
	}
	if size != k.tst.Size {
		return false
	}
	st, err := fsat.LstatAt(k.dir, TranscriptName)
	return err == nil && st.Dev == k.tst.Dev && st.Ino == k.tst.Ino && st.Size == k.tst.Size && st.Mtim == k.tst.Mtim
}

// matchesPrev reports whether a copy of size bytes with CRC32C sum is the
// generation before a committed promotion: what is in place when that
// promotion's temp was lost before its rename.
func (k *keyDir) matchesPrev(size int64, sum uint32) bool {
	if k.pending == nil || k.pending.Prev == nil {
		return false
	}
	p := k.pending.Prev
	return p.Size == size && p.CRC32C == uint64(sum)
}

// reopenInPlace replaces the pending temp that was opened as the
// transcript with current.jsonl, under the same lock.
func (k *keyDir) reopenInPlace() error {
	if k.transcript != nil {
		k.transcript.Close()
		k.transcript = nil
	}
	if err := k.openTranscript(TranscriptName); err != nil {
		return err
	}
	if p := k.pending.Prev; p != nil {
		k.expectSize = p.Size // no more is read than the generation it could be
	}
	return nil
}

func (k *keyDir) close() {
	if k.transcript != nil {
		k.transcript.Close()
	}
	if k.meta != nil {
		k.meta.Close()
	}
	if k.dir != nil {
		k.dir.Close()
	}
}

// base is what the key holds, as a ticket records it (see baseOf).
func (k *keyDir) base() Base {
	if k.transcript == nil {
		return baseOf(k.identity, nil)
	}
	return baseOf(k.identity, &k.tst)
}
