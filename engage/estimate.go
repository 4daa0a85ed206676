package engage

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"os"

	"sessdb/internal/fsat"
	"sessdb/store/transcript"
)

// Estimate is pi's usage-backed context estimate of one context, as pi
// 0.58.3 computes it (estimateContextTokens, and getContextUsage's null
// rule): transcript.Estimate, whose fields it shares, with the controller's
// view of it added.
type Estimate transcript.Estimate

// Reading is the estimate as the controller sees it: unknown where pi
// reports null.
func (e Estimate) Reading() Reading {
	if e.Unknown {
		return Reading{}
	}
	return Reading{Tokens: e.Tokens, Known: true, frac: e.Fractional}
}

// Transcript is what one streaming pass over a pi transcript learns: the
// header, the line counts, the tree of entries and the estimate at the leaf.
// It keeps a record per entry (ids, sizes, usage), about 100 bytes when the
// ids are pi's 8 characters, and the distinct model names, but none of the
// text of the messages: a transcript ten times larger costs ten times the
// entries, never the bytes of its messages. Long ids and model names are
// kept as they are; what a hand-made file of very short entries costs is
// in the package doc. It does not change after Read and is safe for
// concurrent use.
type Transcript struct {
	Header  transcript.Header // the session header, the first line
	Version int64             // the format version pi reads it as (1 and 2 are migrated)
	Stats   transcript.Stats  // what the scan read and what it dropped
	Leaf    string            // id of the leaf, the last entry in file order ("" when it has none)
	Branch  int               // entries on the branch from the leaf to its root
	Final   Estimate          // the estimate at the leaf: what pi reports on resume

	b *transcript.Branch // the one implementation of the branch and the estimate
}

// ReadFile reads the transcript at path, which must be a regular file (a
// link to one is followed): anything else (a FIFO, a device, a directory)
// is ErrNotRegular, refused before it is read, so that a FIFO never blocks
// the open or the read, and /dev/zero is never read without end. A file
// rewritten while it is read is ErrChanged (one appended to is not).
// Errors are *os.PathError-style "op path: err" and wrap a
// *transcript.InvalidError for a file that is not a pi transcript.
func ReadFile(path string) (*Transcript, error) {
	f, _, err := fsat.OpenRegular(path)
	if errors.Is(err, fsat.ErrNotRegular) {
		return nil, &os.PathError{Op: "read transcript", Path: path, Err: ErrNotRegular}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// pi appends to a transcript, and what a read meets of an append is a
	// consistent prefix; but it rewrites a file it migrates, and a read
	// across that mixes two files. A rewrite shrinks the file under the
	// read or changes its first line (the header), so both are compared
	// once the read is done: the first line whole (a version 1 header
	// holds paths, and pi's migration changes only its end), and at least
	// the first 4 KiB.
	h := &head{r: f, sum: sha256.New()}
	t, err := Read(h)
	if readFileHook != nil {
		readFileHook()
	}
	if err == nil && rewritten(f, h, t.Stats.Bytes) {
		err = ErrChanged
	}
	if err != nil {
		return nil, &os.PathError{Op: "read transcript", Path: path, Err: err}
	}
	return t, nil
}

// Read streams a transcript from r.
func Read(r io.Reader) (*Transcript, error) {
	b, err := transcript.Load(r)
	if err != nil {
		return nil, err
	}
	return &Transcript{
		Header: b.Header, Version: b.Version, Stats: b.Stats,
		Leaf: b.Leaf, Branch: b.Len, Final: Estimate(b.Final), b: b,
	}, nil
}

// rewritten reports whether f, of which read bytes were read through h,
// is now shorter than that or starts otherwise than h saw.
func rewritten(f *os.File, h *head, read int64) bool {
	st, err := f.Stat()
	if err != nil || st.Size() < read {
		return err == nil
	}
	now := sha256.New()
	n, _ := io.Copy(now, io.NewSectionReader(f, 0, h.n))
	return n != h.n || !bytes.Equal(now.Sum(nil), h.sum.Sum(nil))
}

// headMin is how much of a file's start head hashes at least, whatever the
// length of its first line.
const headMin = 4096

// head reads through r and hashes what it reads of the file's start: the
// first line and at least headMin bytes (all of it when shorter).
type head struct {
	r    io.Reader
	sum  hash.Hash
	n    int64 // bytes hashed, from the start
	line int64 // the first line's length with its '\n', 0 until one is read
}

func (h *head) Read(p []byte) (int, error) {
	k, err := h.r.Read(p)
	b := p[:k]
	if h.line == 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			h.line = h.n + int64(i) + 1
		}
	}
	if end := max(h.line, headMin); h.line == 0 || h.n < end {
		if h.line != 0 {
			b = b[:min(int64(len(b)), end-h.n)]
		}
		h.sum.Write(b)
		h.n += int64(len(b))
	}
	return k, err
}

// readFileHook, when set (by tests), runs once ReadFile has read the file.
var readFileHook func()
