package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/store/transcript"
)

// stagedFile is the staged file opened for a promotion: the descriptor
// every later read goes through (never the name again, which the
// container can swap), its size at open, and whether its tail is torn.
type stagedFile struct {
	f    *os.File
	size int64
	torn bool // the last byte is not a newline
	// dir is the staged dir, its flock (lockStaging) held until the
	// promote returns (close): no resolve replaces the run while it is
	// promoted, so one that fails leaves it for its retry.
	dir *os.File
}

// close releases the staged file and the staged dir's lock.
func (sf stagedFile) close() {
	sf.f.Close()
	fsat.CloseFlocked(sf.dir)
}

// openStaged opens <jobDir>/session/current.jsonl without following a link
// and without blocking on a FIFO, and names the reason it cannot be
// promoted, if any; the staged file it returns holds the staged dir's
// lock until it is closed. With recheck (PromoteRequest.TicketFromJobDir),
// the job dir's ticket must still name ticket, the id of the one read
// before ("" for a ticket from before the job contract, which no resolve
// since writes), and key, the key it was read with.
func (s *Store) openStaged(jobDir string, recheck bool, ticket, key string) (stagedFile, gates.Reason, error) {
	var sf stagedFile
	// Only a job dir or staged dir that is not there is absent: any other
	// failure to open one (no descriptor left, a permission, an I/O
	// error) is a fault, or promote would say "nothing to promote" of a
	// run it never looked at, and the worker could discard it.
	jd, err := fsat.OpenDir(jobDir)
	switch {
	case fsat.IsNotExist(err), errors.Is(err, unix.ENOTDIR):
		return sf, gates.Absent, nil
	case err != nil:
		return sf, "", err
	}
	defer jd.Close()
	sd, err := fsat.OpenDirAt(jd, StagedDirName)
	switch {
	case errors.Is(err, fsat.ErrNotDir):
		return sf, gates.NotARegularFile, nil
	case fsat.IsNotExist(err):
		return sf, gates.Absent, nil
	case err != nil:
		return sf, "", err
	}
	keep := false
	defer func() {
		if !keep {
			fsat.CloseFlocked(sd)
		}
	}()
	// Not while a resolve stages another transcript here.
	if err := lockStaging(sd); err != nil {
		return sf, "", err
	}
	// Nor after another resolve into the job dir since this Session's
	// ticket was read from it (the CLI reads it first, unlocked): the
	// staged file is then that resolve's, another key's conversation or a
	// cold start, and a cold start's run, with no prefix to check,
	// promoted it into this Session's key. A ticket gone, or no ticket,
	// since it was read says so too: a resolve removes the ticket before
	// it stages, and one killed before its own ticket (its lock gone with
	// it) leaves its copy, another key's conversation whole or in part,
	// and no ticket; but where nothing is staged (a resolve that failed
	// cleanly removes its copy too) there is nothing to promote into the
	// wrong key, and the staged file is absent, as it is, not busy: no
	// retry finds a ticket to read. A read that fails otherwise is a
	// fault. A ticket from before the job contract has no id, but every
	// resolve since writes one: one that names an id now was written
	// since.
	var gone error
	if recheck {
		read := "ticket " + ticket
		if ticket == "" {
			read = "ticket (one from before the job contract, with no id)"
		}
		now, err := readTicketAt(jd, fsat.Join(jd, TicketName))
		switch {
		case err == nil && now.Ticket != ticket:
			return sf, "", fmt.Errorf("%w: it was resolved again (ticket %s) since this Session's %s was read, and its staged file is that resolve's", ErrJobDirBusy, now.Ticket, read)
		case err == nil && now.Key != key:
			// The ticket the Session says it was read from, and a Key
			// the worker's code changed since: the run was resolved for
			// the ticket's key, and promoted into another it would
			// become that key's conversation (a cold one's run, with no
			// base to lose, makes a key no job resolved).
			return sf, "", fmt.Errorf("%w: the Session's key is not the key of the job dir's %s", ErrBadTicket, read)
		case fsat.IsNotExist(err), errors.Is(err, ErrBadTicket):
			gone = fmt.Errorf("%w: its ticket is gone or is no ticket since this Session's %s was read (a resolve there since, killed before its own ticket, leaves its staged file and none)", ErrJobDirBusy, read)
		case err != nil:
			return sf, "", err
		}
	}
	// Only a regular file is opened: a device node's open runs its driver.
	f, st, err := fsat.OpenRegularAt(sd, TranscriptName)
	switch {
	case fsat.IsNotExist(err):
		return sf, gates.Absent, nil
	case gone != nil:
		if err == nil {
			f.Close()
		}
		return sf, "", gone
	case errors.Is(err, fsat.ErrNotRegular):
		return sf, gates.NotARegularFile, nil
	case err != nil:
		return sf, "", err
	}
	reason := gates.Reason("")
	switch {
	case st.Nlink != 1:
		// A hard link is another name for some file the container could
		// see; promoting it would copy that file into the store.
		reason = gates.NotARegularFile
	case st.Size == 0:
		reason = gates.Absent
	}
	if reason != "" {
		f.Close()
		return sf, reason, nil
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
	sf.dir, keep = sd, true
	return sf, "", nil
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
// so what was judged here is what is promoted. A ctx that ends stops it
// before its next read, with ctx's error (in a wrapped one).
func readStaged(ctx context.Context, sf stagedFile, sess Session) (stagedContent, error) {
	var c stagedContent
	split := &crcSplit{at: sess.Bytes}
	src := io.TeeReader(io.NewSectionReader(readerAtIn(ctx, sf.f), 0, sf.size), split)
	end, endErr := transcript.ReadEnd(src)
	if endErr != nil {
		// A transcript sessdb cannot read as pi does (a line past the
		// scanner's bound, which pi loads; a branch with a cycle, on which
		// pi loops) has no reading and no shape sessdb can tell; it is
		// still the job's work, and promoted as such, its run unknown. The
		// rest of the file must pass through the checksum all the same.
		if _, derr := io.Copy(io.Discard, src); derr != nil {
			return c, fmt.Errorf("read %s: %w", sf.f.Name(), derr)
		}
		end = transcript.End{}
	}
	if split.off != sf.size {
		return c, fmt.Errorf("read %s: %d of %d bytes", sf.f.Name(), split.off, sf.size)
	}
	// The open judged the tail by its own read of the last byte: one the
	// container changed since would leave the torn flag, and the newline
	// the copy adds, at odds with the bytes checksummed here and copied.
	if sf.size > 0 && (split.last != '\n') != sf.torn {
		return c, fmt.Errorf("read %s: its last byte changed since it was opened: the staged file changed while it was promoted", sf.f.Name())
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
	case endErr != nil:
		// Not unanswered, which says the run stopped before its answer:
		// it may well have answered, and sessdb cannot tell.
		c.run = transcript.Unknown
	case c.prefixOK && end.Last.Line > 0 && end.Last.Offset < sess.Bytes:
		// The run appended entries but no message (pi's thinking level
		// or model change, written at its start before a crash or a
		// kill): the message the branch ends in is one the job was
		// given, a job before's, and this run answered nothing.
		c.run = transcript.Unanswered
	default:
		c.run = end.Last.Shape()
	}
	return c, nil
}

// crcSplit is a writer that checksums everything written to it, and
// remembers the checksum of the first at bytes and the last byte.
type crcSplit struct {
	at, off     int64
	sum, prefix uint32
	last        byte
}

// Write checksums b. The write that crosses offset at is split there, so
// that prefix is the checksum of exactly the first at bytes however the
// reader chunks its writes; a write that ends at at is caught below.
func (c *crcSplit) Write(b []byte) (int, error) {
	n := len(b)
	if n > 0 {
		c.last = b[n-1]
	}
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
