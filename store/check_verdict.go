package store

import (
	"context"
	"fmt"

	"sessdb/gates"
	"sessdb/store/legacy"
)

// VerdictReport is the verdict the ladder would give a key now.
type VerdictReport struct {
	// Reason is the reason a resolve would report, or Undetermined when it
	// depends on the job and no job was given.
	Reason string `json:"reason"`
	// Needs lists the job facts an undetermined verdict depends on:
	// "venue", "pi-version", and "model" when the context rung would judge
	// the key differently for another model.
	Needs []string `json:"needs"`
	// IfMatched is, for an undetermined verdict, the verdict of a job
	// whose venue, pi version and model match the key's stamps as far as
	// any job can. A job that differs gets venue-changed or
	// pi-version-changed instead (or, for another model, may pass the
	// context rung).
	IfMatched string `json:"if_matched"`
}

// Undetermined is the verdict shown when it depends on a job profile that
// was not given. It is never a guess: every verdict that does not depend on
// the job (absent, too-large, meta-unreadable, expired, a venue stamp no
// job can match, ...) is shown as itself.
const Undetermined = "?"

// served is what a resolve of a key dir would come to now, as dump and
// check find it (Store.judgeServed).
type served struct {
	verdict *VerdictReport
	// verify, with a read, is the last file the copy would read, held
	// against what Accept held it to (keyView.follow).
	verify *VerifyReport
	// inPlace is the look at current.jsonl, when the copy read it.
	inPlace *look
	// pendingErr is why a committed promotion's temp, still at its name,
	// could not be opened (a resolve fails on it: a fault).
	pendingErr error
}

// judgeServed judges k for job (nil: every job, see Judge) as a resolve
// would now: it serves a committed promotion's temp as the resolve's
// view does (servePending), judges the ladder's observation of what is
// served, and follows the copy through the view's own Accept, fallbacks
// included (keyView.follow). With read, each file the copy would read is
// read (dump --verify, check); without, only sizes are known, so a
// same-size edit shows only at the copy. k must be open under the shared
// lock, with its lock had; its transcript is then the last file the copy
// would read. Its error is ctx's, when ctx ended a read.
func (s *Store) judgeServed(ctx context.Context, k *keyDir, job *Job, read bool) (served, error) {
	var out served
	if k.meta != nil {
		out.pendingErr = k.servePending(ctx, false)
	}
	// The ladder judges the file a resolve's copy starts from; a fallback
	// after it is not judged again (judgeAndCopy).
	obs := k.obs
	v := &keyView{k: k}
	f, err := v.follow(ctx, read, s.opts.Bounds.MaxBytes)
	if err != nil {
		return served{}, err
	}
	if k.tempLost {
		// The copy gave up on a committed promotion's temp as not what
		// its commit recorded: a resolve, which reads the temp whole
		// before its ladder, judges what is in place instead, or names
		// the promotion lost where nothing regular is (Observe).
		obs = k.obs
	}
	out.verdict = Judge(obs, s.opts.Bounds, job, s.opts.Now(), f.reason)
	if _, r := v.Observe(); r != "" {
		out.verdict = &VerdictReport{Reason: string(r)}
	}
	out.verify, out.inPlace = f.verify, f.inPlace
	return out, nil
}

// followed is what keyView.follow found.
type followed struct {
	// reason is the copy's cold start: "" when Accept would take it, or
	// when there is nothing regular to copy (the ladder refuses that
	// first) or a read failed (a resolve's copy fails: a fault).
	reason  gates.Reason
	verify  *VerifyReport // with read
	inPlace *look         // the look at current.jsonl, when the copy read it
}

// follow takes a resolve's copy step by step, without copying
// (judgeAndCopy's step 5): each Source the view offers is looked at (with
// read, read as far as the copy would read it; else known by its size)
// and given to accept, the decision Accept makes of a real copy. So the
// fallbacks are the resolve's own: a committed promotion's temp that does
// not match its record falls back to the file in place, which is the
// generation before it (resumed) or not (promotion-lost), and the file in
// place of a promotion whose temp is gone may be that generation too.
//
// With read, verify is the last file read held against what Accept held
// it to: the record, or the generation before a pending promotion (ok,
// and its Detail says so).
func (v *keyView) follow(ctx context.Context, read bool, maxBytes int64) (followed, error) {
	var f followed
	k := v.k
	var given string // the temp the copy gave up on, and why
	for copies := 1; copies <= maxCopies; copies++ {
		if src, _ := v.Source(); src == nil {
			// Only the first source can be missing (Accept refuses a
			// fallback to nothing itself), and the ladder refuses it
			// (absent, not-a-regular-file) before any copy.
			if read {
				f.verify = &VerifyReport{Result: VerifyNoTranscript}
			}
			return f, nil
		}
		fromTemp := k.fromTemp
		l, err := k.look(ctx, k.expectSize, read, maxBytes)
		if err != nil {
			return followed{}, err
		}
		if !fromTemp {
			f.inPlace = &l
		}
		if l.err != nil {
			f.verify = l.against(k.identity) // unreadable: a resolve's copy would fail here
			return f, nil
		}
		a := v.accept(l.c)
		if a.Err != nil {
			return followed{}, a.Err
		}
		if read {
			f.verify = v.verified(l, a, fromTemp, given)
		}
		switch {
		case a.Resume:
			return f, nil
		case a.Retry:
			given = fmt.Sprintf("its temp %s: %s", k.pending.Tmp, l.differs(k.identity, "the record"))
		default:
			f.reason = a.Reason
			return f, nil
		}
	}
	return f, nil
}

// verified is what verify reports of the look l at the file a copy read,
// which accept made a of: l against the record, unless a pending
// promotion explains it. fromTemp says the file was the pending
// promotion's temp; given, the temp given up on before it, if any.
func (v *keyView) verified(l look, a Acceptance, fromTemp bool, given string) *VerifyReport {
	k := v.k
	r := l.against(k.identity)
	p := k.pending
	if k.layout != LayoutDB || r.Result != VerifyMismatch || p == nil {
		return r
	}
	switch {
	case a.Resume && !l.c.summed:
		// Taken by its size alone: over the max-bytes bound, not read.
		r.Result, r.Detail = VerifyTooLarge, fmt.Sprintf("%d bytes, over the max-bytes bound %d: not read (resolve: too-large)", l.got, l.overMax)
	case a.Resume:
		// Not the record's: the generation before the pending one.
		why := given
		switch {
		case why != "":
		case k.tempLost:
			// Given up on before the copy (servePending): there, but not
			// a regular file.
			why = fmt.Sprintf("its temp %s is not a regular file", p.Tmp)
		default:
			why = "its temp is gone"
		}
		r.Result, r.Detail = VerifyOK, fmt.Sprintf("gen %d, the generation before the pending gen %d (%s)", p.Prev.Gen, p.Gen, why)
	case fromTemp && !a.Retry:
		r.Detail = fmt.Sprintf("its temp %s: %s; no regular %s to fall back to", p.Tmp, r.Detail, TranscriptName)
	case given != "" && p.Prev != nil:
		r.Detail = fmt.Sprintf("%s; %s: %s", given, TranscriptName, l.differs(p.Prev, fmt.Sprintf("gen %d before it", p.Prev.Gen)))
	case given != "":
		r.Detail = fmt.Sprintf("%s; %s: %s", given, TranscriptName, r.Detail)
	}
	return r
}

// matchingJob is the job that passes the venue and pi-version rungs of obs
// if any job can, and whose model is the context reading's. A stamp no job
// can match leaves its field empty, which that rung refuses.
func matchingJob(obs gates.Observation) gates.Job {
	var j gates.Job
	switch obs.Venue.State {
	case gates.StampAbsent:
		j.Venue = gates.UnstampedVenue
	case gates.StampPresent:
		// A legacy promotion's "(pending)" is no venue's name.
		if obs.Venue.Value != legacy.PendingVenue {
			j.Venue = obs.Venue.Value
		}
	}
	if obs.PiVersion.State == gates.StampPresent {
		j.PiVersion = obs.PiVersion.Value
	}
	if obs.Context != nil {
		j.Model = obs.Context.Model
	}
	return j
}
