package store

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"sessdb/gates"
	"sessdb/internal/callerctx"
	"sessdb/store/legacy"
)

// The operator's walks over another Backend (package fleet's dump and
// check) report a key with this package's report types, judged and
// verified exactly as a key dir is: these two functions are the key dir's
// own rules, with the key's facts passed in.

// Judge is the verdict dump reports for a key whose observation is obs:
// for job, or with job nil for every job at once (see VerdictReport: a
// verdict that depends on the job is Undetermined, with what a job
// matching the key's stamps would get). afterCopy is the cold start a
// resolve's copy is already known to end in, "" when none is: the
// reason its backend's Accept gives a copy of what the key holds (a size
// that differs from the record, or a checksum a verify found to differ,
// is transcript-replaced; a key dir's damaged pending temp with neither
// it nor the generation before it in place is promotion-lost). A verdict
// that would resume is then afterCopy, as the copy's check would make
// it. It is pure.
func Judge(obs gates.Observation, b gates.Bounds, job *Job, now time.Time, afterCopy gates.Reason) *VerdictReport {
	judge := func(j gates.Job) string {
		out := gates.Evaluate(obs, b, j, now)
		if out.Resume && afterCopy != "" {
			return string(afterCopy)
		}
		return string(out.Reason)
	}
	if job != nil {
		return &VerdictReport{Reason: judge(gates.Job{PiVersion: job.PiVersion, Venue: job.Venue, Model: legacy.NormaliseModel(job.Model)})}
	}
	// The rungs before the venue rung (1-5, 4a and 4b) read only the key
	// and the bounds; the venue, pi-version and context rungs compare with
	// the job. So the key is judged for the job that matches its stamps: a
	// miss before the venue rung is every job's verdict; a venue-changed
	// there means no job can match the stamp, which is every job's
	// verdict too; anything else depends on the job, and is Undetermined
	// with what the matching job would get.
	m := matchingJob(obs)
	matched := judge(m)
	switch gates.Reason(matched) {
	case gates.Absent, gates.NotARegularFile, gates.TooLarge, gates.MetaUnreadable, gates.MetaMovedAside, gates.Expired, gates.VenueChanged:
		return &VerdictReport{Reason: matched}
	}
	needs := []string{"venue", "pi-version"}
	if m.Model != "" {
		other := m
		other.Model = "(another model)" // no normalised model id has parentheses
		if judge(other) != matched {
			needs = append(needs, "model")
		}
	}
	return &VerdictReport{Reason: Undetermined, Needs: needs, IfMatched: matched}
}

// VerifyRecorded reads src, a transcript of size bytes (as fstat saw it)
// whose record says recSize bytes with CRC32C recCRC, and compares the
// two, as dump --verify and check do for a key dir: it reads no further
// than recSize plus the one byte that tells a longer file, and nothing at
// all of a record over maxBytes (when maxBytes is set), which a resolve
// refuses as too-large unread. Its error is ctx's alone, when ctx ended
// the read: ctx is looked at between chunks of a megabyte. A nil ctx is
// context.Background(); one that breaks Go's contract is held to it
// (callerctx.Of), as ReadCRC32C holds it.
func VerifyRecorded(ctx context.Context, src io.ReaderAt, size, recSize int64, recCRC uint64, maxBytes int64) (*VerifyReport, error) {
	ctx = callerctx.Of(ctx)
	if maxBytes > 0 && recSize > maxBytes {
		if size != recSize {
			return &VerifyReport{Result: VerifyMismatch, Detail: fmt.Sprintf("%d bytes, the record says %d", size, recSize)}, nil
		}
		return &VerifyReport{Result: VerifyTooLarge, Detail: fmt.Sprintf("%d bytes, over the max-bytes bound %d: not read (resolve: too-large)", recSize, maxBytes)}, nil
	}
	if recSize < 0 {
		return &VerifyReport{Result: VerifyMismatch, Detail: fmt.Sprintf("%d bytes, the record says %d", size, recSize)}, nil
	}
	limit := recSize
	if limit < math.MaxInt64 {
		limit++
	}
	n, sum, err := readCRC(ctx, src, limit)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	r := &VerifyReport{Bytes: n, CRC32C: uint64(sum)}
	got := n
	if n == limit {
		got = max(size, n) // stopped at the bound: longer than the record
	}
	switch {
	case err != nil:
		r.Result, r.Detail = VerifyUnreadable, err.Error()
	case got != recSize:
		r.Result, r.Detail = VerifyMismatch, fmt.Sprintf("%d bytes, the record says %d", got, recSize)
	case recCRC != r.CRC32C:
		r.Result, r.Detail = VerifyMismatch, fmt.Sprintf("CRC32C %08x, the record says %08x", r.CRC32C, recCRC)
	default:
		r.Result = VerifyOK
	}
	return r, nil
}
