package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/readerr"
	"sessdb/store"
	"sessdb/store/transcript"
)

// View reads key's record at one revision and opens the generation it
// names (see the package doc). Every miss is in the view's Observe; an
// error is a fault: wrong credentials, an invalid key, an I/O error other
// than the generation being gone.
func (b *Backend) View(key string, bounds gates.Bounds) (store.KeyView, error) {
	return b.ViewContext(context.Background(), key, bounds)
}

// ViewContext is View, its etcd requests ended once ctx is done (each
// still within the request timeout): the view then fails with an error
// that wraps ctx's, not the store-unavailable cold start, which would be
// the caller's cancel taken for etcd's silence (store.ContextBackend).
// The view it returns keeps ctx for the one request it may make later,
// the record read again by its Lost: a resolve given up there returns its
// caller's cancel (the store throws away what Lost judged once ctx is
// done), never after the whole request timeout.
func (b *Backend) ViewContext(ctx context.Context, key string, _ gates.Bounds) (store.KeyView, error) {
	if err := b.opened(); err != nil {
		return nil, err
	}
	// nil is context.Background(); a ctx of the caller's own type that
	// breaks the contract is held to it (callerctx), before
	// context.WithTimeout would panic on it.
	ctx = callerctx.Of(ctx)
	var v *view
	err := lookAgainIfMoved(func() (lost bool, err error) {
		v, err = b.view(ctx, key)
		return err == nil && v.reason == gates.TranscriptReplaced, err
	}, func() bool {
		st, err := b.readIn(ctx, key, b.meta.GetRecord)
		if err != nil || st.Rev == v.rev {
			return false
		}
		v.Close()
		return true
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// lookAgainIfMoved calls look (View's, inspectKey's read of a key's
// record and of the generation it names), and again while look found that
// generation gone (lost) and moved, the record read again, says it moved
// on meanwhile: at most three looks, the last one's answer kept. A
// generation gone where the record moved on (a reap deletes it, then the
// files; a promotion replaces it) is the key as the record says now, as a
// resolve after it would find it, not a file changed out of band; under
// the same record, the file is gone under it. moved keeps what it read
// for its caller's next look.
func lookAgainIfMoved(look func() (lost bool, err error), moved func() bool) error {
	for try := 0; ; try++ {
		lost, err := look()
		if err != nil || !lost || try == 2 || !moved() {
			return err
		}
	}
}

// view is one look of View at key.
func (b *Backend) view(ctx context.Context, key string) (*view, error) {
	v := &view{b: b, key: key, ctx: ctx}
	st, err := b.readIn(ctx, key, b.meta.GetRecord)
	switch {
	case stopped(ctx, err) != nil:
		return nil, err
	case errors.Is(err, etcdmeta.ErrUnavailable):
		b.log.Warn().Str("key", key).Err(err).Msg("session_store_unavailable")
		v.reason = gates.StoreUnavailable
		return v, nil
	case errors.Is(err, etcdmeta.ErrDamaged), errors.Is(err, etcdmeta.ErrNewerSchema):
		b.log.Warn().Str("key", key).Err(err).Msg("session_record_unreadable")
		v.reason = gates.MetaUnreadable
		return v, nil
	case err != nil:
		return nil, err
	}
	t := st.Record.Transcript
	if t == nil {
		// No record, or one that names no transcript (sessdb writes none
		// such): nothing to resume, unless the dir is another fleet's
		// (a misspelt prefix holds no record), which the writers refuse.
		if st.Rev == 0 {
			if err := b.markedForAnother(ctx); err != nil {
				return nil, err
			}
		}
		v.reason = gates.Absent
		return v, nil
	}
	if !namesOwnFile(key, t) {
		// A name is foreign input: one that is not this key's file for
		// this generation is a damaged record, never a path to follow.
		b.log.Warn().Str("key", key).Str("file", t.File).Msg("session_record_unreadable")
		v.reason = gates.MetaUnreadable
		return v, nil
	}
	v.rec, v.rev = st.Record, st.Rev
	if err := b.at(hookOpen, key); err != nil {
		return nil, err
	}
	if err := v.open(); err != nil {
		v.Close() // the generation, opened before a read of it failed
		return nil, err
	}
	return v, nil
}

// namesOwnFile reports whether t, key's record's transcript, names a file
// of key's for its own generation, with a size a file can have and a
// CRC32C of 32 bits: a name is foreign input, never a path to follow
// before it passes.
func namesOwnFile(key string, t *etcdmeta.Transcript) bool { return recordFault(key, t) == "" }

// recordFault says why t, key's record's transcript, describes no file a
// resolve can take (namesOwnFile), "" when it does: a record that decodes
// with such a transcript is damage (meta-unreadable, never written over),
// not a file changed under its record. Past its file's name, the rule is
// db.Transcript.Fault's: generation 0, a negative size, a CRC32C wider
// than 32 bits, none of which any sessdb writes.
func recordFault(key string, t *etcdmeta.Transcript) string {
	if k, gen, ok := shared.ParseName(t.File); !ok || k != key || gen != t.Gen {
		return fmt.Sprintf("the record names %q, not a file of this key's generation %d", t.File, t.Gen)
	}
	// The rest is the key-dir store's rule for its records, one copy.
	if err := (db.Transcript{Gen: t.Gen, Size: t.Size, CRC32C: t.CRC32C}).Fault(); err != nil {
		return "the record's " + strings.TrimPrefix(err.Error(), "its ")
	}
	return ""
}

// statGeneration is the fstat of a generation just opened; a variable so
// that a test can stand in for NFS's ESTALE there, which no test can make
// without root.
var statGeneration = (*os.File).Stat

// view is one key as a resolve sees it.
type view struct {
	b   *Backend
	key string
	// ctx is the resolve's, for Lost's read (see ViewContext).
	ctx    context.Context
	rec    etcdmeta.Record
	rev    etcdmeta.Rev
	f      *os.File
	obs    gates.Observation
	reason gates.Reason
}

// open opens the generation the record names and fills the observation:
// the file's own facts and first line, the record's stamps.
func (v *view) open() error {
	t := v.rec.Transcript
	f, err := shared.Open(v.b.dir, t.File)
	switch {
	case err != nil && !errors.Is(err, shared.ErrNotRegular) && v.dirUnavailable():
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ESTALE):
		v.b.log.Warn().Str("key", v.key).Str("file", t.File).Err(err).Msg("session_generation_gone")
		v.reason = gates.TranscriptReplaced
		return nil
	case errors.Is(err, shared.ErrNotRegular):
		v.obs.Transcript = gates.Transcript{Exists: true} // a link, a FIFO: never followed or read
	case err != nil:
		return err
	default:
		fi, err := statGeneration(f)
		if err != nil {
			// A call on the file failing after its open: the file gone
			// under it (NFS's ESTALE: another host removed it), as at its
			// first line below, or a fault.
			f.Close()
			return v.failed(err)
		}
		v.f = f
		v.obs.Transcript = gates.Transcript{Exists: true, Regular: true, Size: fi.Size(), ModTime: fsat.InfoModTime(fi)}
		h, _, err := v.b.readHeader(v.key, f, fi.Size())
		if unreadable(err) {
			// Judged by the ladder, a first line not read would be
			// unparseable, a damaged file: it is the copy's failure
			// (Lost), met early.
			return v.failed(err)
		}
		v.obs.Header = h
	}
	recordInto(&v.obs, v.rec)
	return nil
}

// failed judges a call on the generation the record names that failed
// with err after its open (its fstat, the read of its first line): the
// transcripts dir unavailable (store-unavailable), the generation gone
// (transcript-replaced), or else err itself, a fault (see generationGone).
func (v *view) failed(err error) error {
	if v.dirUnavailable() {
		return nil
	}
	if !v.generationGone(err) {
		return err
	}
	v.reason = gates.TranscriptReplaced
	return nil
}

// generationGone reports whether the generation the record names is gone,
// once a call on it failed with err: the call said so (ENOENT; ESTALE,
// which NFS gives once another host removed the file), or nothing is at
// its name now; it logs the generation gone. A call that failed on a file
// still there (a soft mount's EIO after its timeout, the process out of
// descriptors or memory) says nothing about the key: taken for gone, it
// was transcript-replaced with the key's base, and the job's cold run was
// promoted over a conversation that is whole. It is a fault, as dump
// reports it (Inspect) and as a failed read of a key dir's transcript is.
func (v *view) generationGone(err error) bool {
	t := v.rec.Transcript
	if !gone(err) && !goneNow(v.b.dir, t.File) {
		return false
	}
	v.b.log.Warn().Str("key", v.key).Str("file", t.File).Err(err).Msg("session_generation_gone")
	return true
}

// dirUnavailable reports, once the generation was found gone or its reads
// failed, whether the transcripts dir itself is (gone, not a directory,
// stale: the export went away): then nothing about the key could be read,
// the store-unavailable cold start, its cause logged here, the one line
// of it. Its ticket has no base (the store gives a store-unavailable
// none): the key's conversation may be whole on the export, and the
// job's cold run, promoted once the dir is back, is superseded by it
// instead of replacing it, as after etcd's silence.
func (v *view) dirUnavailable() bool {
	err := shared.DirErr(v.b.dir)
	if err == nil {
		return false
	}
	v.b.log.Warn().Str("key", v.key).Err(err).Msg("session_store_unavailable")
	v.reason = gates.StoreUnavailable
	return true
}

// readHeader reads the first line of a generation file of size bytes: what
// the ladder judges of it, and the header as parsed (with its error, when
// there is none to parse). A read that fails (NFS's ESTALE once another
// host removed the file, EIO) is a *readError, which unreadable tells
// from a first line that does not parse.
func (b *Backend) readHeader(key string, f *os.File, size int64) (gates.Header, transcript.Header, error) {
	if err := b.at(hookHeader, key); err != nil {
		// The tests' stand-in for a file another host removed after the
		// open: every read of it fails, as ESTALE makes them on NFS.
		f.Close()
	}
	var g gates.Header
	if size <= 0 {
		return g, transcript.Header{}, transcript.ErrEmpty
	}
	if err := faults.At(faults.TranscriptHeaderRead); err != nil {
		return g, transcript.Header{}, &readError{err}
	}
	r := &readerr.Reader{R: io.NewSectionReader(f, 0, size)}
	h, err := transcript.ReadHeader(r)
	if r.Err != nil {
		return g, h, &readError{r.Err}
	}
	if err == nil {
		g.IsSession = h.IsSession()
		if h.TimestampIsString {
			g.Timestamp, g.TimestampOK = transcript.ParseTimestamp(h.Timestamp)
		}
	}
	return g, h, err
}

// readError is a generation file's read that failed, as opposed to what
// was read not parsing.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// unreadable reports whether readHeader's err is a read that failed.
func unreadable(err error) bool {
	var re *readError
	return errors.As(err, &re)
}

// recordInto fills what the ladder reads from the record into obs: the
// last promotion (lastPromotion, of its file as obs.Transcript found it:
// its mtime is known for a regular file alone), the stamps, the chain and
// the reading.
func recordInto(obs *gates.Observation, r etcdmeta.Record) {
	if t := r.Transcript; t != nil {
		obs.LastPromotion = lastPromotion(t, obs.Transcript.ModTime, obs.Transcript.Regular)
	}
	obs.Venue, obs.PiVersion = stampOf(r.Venue), stampOf(r.PiVersion)
	if r.ResumeChain != nil {
		obs.ResumeChain = *r.ResumeChain
	}
	if c := r.Context; c != nil {
		obs.Context = &gates.Context{Tokens: c.Tokens, Window: c.Window, Model: c.Model}
	}
}

func (v *view) Observe() (gates.Observation, gates.Reason) { return v.obs, v.reason }

func (v *view) Base() store.Base { return baseOf(v.rec, v.rev) }

// Source is the generation's file; nothing past the record's size and the
// byte that tells a longer file is worth copying.
func (v *view) Source() (*os.File, int64) {
	if err := v.b.at(hookSource, v.key); err != nil {
		// The tests' stand-in for a file another host removed under the
		// copy: every read of it fails, as ESTALE makes them on NFS.
		v.f.Close()
	}
	return v.f, v.rec.Transcript.Size + 1
}

// Accept: the copy must be exactly the generation the record describes.
func (v *view) Accept(size int64, sum uint32) store.Acceptance {
	t := v.rec.Transcript
	if size == t.Size && uint64(sum) == t.CRC32C {
		return store.Acceptance{Resume: true, Base: baseOf(v.rec, v.rev)}
	}
	return store.Acceptance{Reason: gates.TranscriptReplaced}
}

// Lost: a generation gone under the copy cannot be delivered as its
// record describes (see the package doc); a read that failed on a file
// still there is a fault (generationGone).
//
// A generation gone under the copy because a reap removed the key (it
// deletes the record, then the files) is absent, with no base, as at the
// open (View): transcript-replaced with the reaped generation as its
// base, the job's run was superseded by a key that holds nothing, and
// lost. A record that moved on to another generation keeps the base the
// copy was judged on: the job's cold run is superseded by the newer one,
// never promoted over a conversation it did not see.
//
// The record is read again within the resolve's ctx: given up there, the
// read fails, and the store returns the caller's cancel, not this verdict.
func (v *view) Lost(err error) gates.Reason {
	if v.dirUnavailable() {
		return gates.StoreUnavailable
	}
	if !v.generationGone(err) {
		return ""
	}
	if st, err := v.b.readIn(v.ctx, v.key, v.b.meta.GetRecord); err == nil && st.Rev != v.rev && st.Record.Transcript == nil {
		v.rec, v.rev = st.Record, st.Rev // Base: none
		return gates.Absent
	}
	return gates.TranscriptReplaced
}

func (v *view) Close() error {
	if v.f != nil {
		v.f.Close()
	}
	return nil
}
