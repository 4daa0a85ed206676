package migrate

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

// WriteLegacySidecars writes sc into the key dir dir in the legacy
// file-per-sidecar formats (legacy-store.md §1.3), as `sessdb migrate
// --to-legacy` does before it removes meta.db:
//
//	pi-version    the version verbatim, no newline; an empty file when nil or ""
//	venue         the name verbatim (a "(pending)" stamp too); removed when nil
//	resume-chain  decimal; removed when nil
//	context       "<tokens> <window>[ <model>]"; removed when nil or not a
//	              measurement (window <= 0 or tokens < 0: the gate ignores it)
//
// Every file is written under its legacy temp name (<name>.incoming, whatever
// was at that name removed first, never written through), fsynced, read back
// with the legacy reader and checked to mean to the ladder what sc means;
// only when all four check out are they renamed into place. If
// sc.Transcript is non-nil and current.jsonl is a regular file, its mtime
// is set to the recorded promotion time (the legacy clock for expired).
// The directory is fsynced last.
//
// dir is a key directory the caller opened with O_DIRECTORY|O_NOFOLLOW.
// Nothing is locked: callers serialise writers of one dir (ToLegacy holds
// the key's meta.db lock). sc.Pending is ignored. On error every file in
// place is whole (an old one or a new one) and the temps are removed; a
// value the legacy format cannot say so that it reads back the same (a
// model stamp with a space in it, a chain beyond 2^53 that is not a double)
// is ErrNotLegacy, returned before anything is renamed.
func WriteLegacySidecars(dir *os.File, sc db.Sidecars) error {
	files, _, err := legacyFiles(dir, valuesOf(sc))
	if err != nil {
		return err
	}
	var at *time.Time
	if sc.Transcript != nil {
		t := time.Unix(0, sc.Transcript.PromotedAt)
		at = &t
	}
	return writeLegacy(durable.Disk{}, dir, files, at)
}

// legacyFile is one sidecar to write (content non-nil) or remove.
type legacyFile struct {
	name    string
	content *string
	// means reports whether what the legacy reader read back from the
	// file (ReadSidecar's value and ok) means what the db said.
	means func(value string, ok bool) bool
}

// notLegacy is the error for a value the legacy reader reads back as got
// (no value at all unless ok). Both are quoted in at most 64 bytes: a
// meta.db's stamp is as long as whoever wrote it made it.
func notLegacy(value, got string, ok bool) error {
	back := "no value"
	if ok {
		back = quote([]byte(got))
	}
	return fmt.Errorf("%s reads back as %s: %w", quote([]byte(value)), back, ErrNotLegacy)
}

// legacyFiles turns values into the four legacy files of dir, and notes a
// context that is no measurement, which is not written. A value the
// legacy format cannot carry is ErrNotLegacy, before anything is written.
func legacyFiles(dir *os.File, v Values) ([]legacyFile, []Oddity, error) {
	var odd []Oddity
	stamp := func(name, s string) (legacyFile, error) {
		means := func(got string, ok bool) bool {
			if s == "" { // "" matches nothing in the db; neither do no value and "" here
				return !ok || got == ""
			}
			return ok && got == s
		}
		// Judged here as well as on the temp read back, so that a dry
		// run's plan fails the key the run would (a stamp with white
		// space around it, or over the sidecar cap).
		if got, ok := legacy.SidecarValue([]byte(s)); !means(got, ok) {
			return legacyFile{}, &os.PathError{Op: "write", Path: fsat.Join(dir, name), Err: notLegacy(s, got, ok)}
		}
		return legacyFile{name, &s, means}, nil
	}
	pi, err := stamp(legacy.PiVersionName, v.PiVersion)
	if err != nil {
		return nil, nil, err
	}
	files := []legacyFile{pi}
	if v.Venue != nil {
		venue, err := stamp(legacy.VenueName, *v.Venue)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, venue)
	} else {
		files = append(files, legacyFile{name: legacy.VenueName})
	}

	chain := legacyFile{name: legacy.ResumeChainName}
	if v.ResumeChain != nil {
		n := *v.ResumeChain
		s, ok := jsDecimal(n, math.MaxUint64, func(s string) bool { return legacy.ParseResumeChain(s) == n })
		if !ok {
			return nil, nil, &os.PathError{Op: "write", Path: fsat.Join(dir, legacy.ResumeChainName), Err: fmt.Errorf("%d: %w", n, ErrNotLegacy)}
		}
		chain.content = &s
		chain.means = func(got string, ok bool) bool { return ok && legacy.ParseResumeChain(got) == n }
	}
	files = append(files, chain)

	ctx := legacyFile{name: legacy.ContextName}
	if c := v.Context; c != nil && (c.Window <= 0 || c.Tokens < 0) {
		odd = append(odd, Oddity{legacy.ContextName, fmt.Sprintf("tokens %d, window %d", c.Tokens, c.Window), "no measurement for the gate: not written"})
	} else if c != nil {
		want := *c
		same := func(line string) bool {
			got, ok := legacy.ParseContext(line)
			return ok && got.Tokens == want.Tokens && got.Window == want.Window && got.Model == want.Model
		}
		tok, ok1 := jsDecimal(uint64(c.Tokens), math.MaxInt64, nil)
		win, ok2 := jsDecimal(uint64(c.Window), math.MaxInt64, nil)
		line := formatContextParts(tok, win, c.Model)
		ctx.means = func(got string, ok bool) bool { return ok && same(got) }
		// Judged as the reader reads the file (decoded, trimmed, capped),
		// as the stamps are: the line's own bytes would pass a model that
		// is not UTF-8, which reads back as U+FFFD, and a dry run's plan
		// would migrate a key its run fails on the read back.
		if !ok1 || !ok2 || !ctx.means(legacy.SidecarValue([]byte(line))) {
			return nil, nil, &os.PathError{Op: "write", Path: fsat.Join(dir, legacy.ContextName), Err: fmt.Errorf("%s: %w", quote([]byte(line)), ErrNotLegacy)}
		}
		ctx.content = &line
	}
	files = append(files, ctx)
	return files, odd, nil
}

// jsDecimal writes n so that the legacy reader's integer rule reads it back:
// its decimal, unless that is not how JavaScript prints the double it
// rounds to; the saturated value sat (what legacy parsing gives for any
// huge number) is written as 1e20 in digits, which parses back to it. ok
// is false when neither works (or check, if given, refuses).
func jsDecimal(n, sat uint64, check func(string) bool) (string, bool) {
	cands := []string{strconv.FormatUint(n, 10)}
	if n == sat {
		cands = append(cands, "100000000000000000000")
	}
	for _, s := range cands {
		if check != nil && check(s) {
			return s, true
		}
		if check == nil {
			// The legacy reader parsed integers as JavaScript does, into a
			// double: 15 digits always survive that; a longer decimal
			// only if it is how the double prints.
			if f, err := strconv.ParseFloat(s, 64); err == nil && (len(s) <= 15 || strconv.FormatFloat(f, 'f', -1, 64) == s) {
				return s, true
			}
		}
	}
	return "", false
}

// formatContextParts is the legacy writer's context line, from its
// numbers as they will be written: "<tokens> <window>[ <model>]".
func formatContextParts(tokens, window, model string) string {
	s := tokens + " " + window
	if model != "" {
		s += " " + model
	}
	return s
}

// writeLegacy writes files through temps, then renames or removes each,
// sets the transcript's mtime to at (when at is non-nil), and fsyncs dir,
// passing each of ToLegacy's fault points. Every write goes through disk.
func writeLegacy(disk durable.FS, dir *os.File, files []legacyFile, at *time.Time) error {
	return writeLegacyDone(disk, dir, files, at, nil)
}

// writeLegacyDone is writeLegacy calling done, when non-nil, with each
// file's name once it is renamed into place or removed: on an error, what
// changed in dir and what did not.
func writeLegacyDone(disk durable.FS, dir *os.File, files []legacyFile, at *time.Time, done func(legacyFile)) (err error) {
	fault := faults.At
	var temps []string
	defer func() {
		for _, t := range temps {
			disk.Remove(dir, t)
		}
	}()
	for _, f := range files {
		if f.content == nil {
			continue
		}
		tmp := f.name + legacy.TempSuffix
		temps = append(temps, tmp)
		if err := writeTemp(disk, dir, tmp, *f.content); err != nil {
			return err
		}
		// Read back as ReadSidecar reads (SidecarValue of the bytes), but
		// a read that failed (no descriptor left, an I/O error) is that
		// read's error, not a value the legacy reader would not read back.
		b, err := fsat.ReadSmallFile(dir, tmp, legacy.SidecarMaxBytes)
		if err != nil {
			return err
		}
		if got, ok := legacy.SidecarValue(b); !f.means(got, ok) {
			return &os.PathError{Op: "write", Path: fsat.Join(dir, f.name), Err: notLegacy(*f.content, got, ok)}
		}
	}
	if err := fault(faults.ToLegacyTemps); err != nil {
		return err
	}
	for _, f := range files {
		if f.content == nil {
			err = disk.Remove(dir, f.name)
		} else {
			err = renameOver(disk, dir, f.name+legacy.TempSuffix, f.name)
		}
		if err == nil && done != nil {
			done(f)
		}
		if err == nil {
			err = fault(faults.ToLegacyRenamed)
		}
		if err != nil {
			return err
		}
	}
	temps = nil
	if at != nil {
		// Opened, not read: the mtime is the file's, whatever its bytes
		// (ToLegacy's plan judged them), and a file of any size costs
		// nothing to stamp.
		f, _, _, err := openTranscript(dir)
		if err != nil {
			return err
		}
		if f != nil {
			err = setMtime(disk, dir, f, *at)
			f.Close()
			if err != nil {
				return err
			}
		}
		if err := fault(faults.ToLegacyMtime); err != nil {
			return err
		}
	}
	if err := disk.SyncDir(dir); err != nil {
		return err
	}
	return fault(faults.ToLegacySynced)
}

// writeTemp creates name afresh (O_EXCL|O_NOFOLLOW after removing whatever
// was there, so a planted link is replaced, never written through), writes
// content and fsyncs it.
func writeTemp(disk durable.FS, dir *os.File, name, content string) error {
	if err := disk.Remove(dir, name); err != nil {
		return err
	}
	f, err := disk.CreateTemp(dir, name)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = disk.SyncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// renameOver renames from over to; an empty directory at to (which the
// legacy reader read as no value) is removed first.
func renameOver(disk durable.FS, dir *os.File, from, to string) error {
	err := disk.Rename(dir, from, to)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		if rerr := disk.Remove(dir, to); rerr != nil {
			return rerr
		}
		err = disk.Rename(dir, from, to)
	}
	return err
}
