package store

import (
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

// verdict judges k for job, or, with job nil, for every job at once, by
// the rules Judge states.
func (s *Store) verdict(k *keyDir, job *Job, v *VerifyReport) *VerdictReport {
	return Judge(k.obs, s.opts.Bounds, job, s.opts.Now(), k.copyWouldMismatch(v))
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

// copyWouldMismatch reports whether a resolve's copy of the transcript is
// already known not to match the record: a db key with no record, a size
// other than the recorded one, or (when the transcript was read whole) a
// checksum that differs. A legacy key has no record to differ from.
//
// It holds the copy against what Accept would: a committed promotion's
// temp, when a resolve would serve it (fromTemp; v, a verify of the file
// in place, says nothing of the temp), is held against the record; the
// file in place against the record, then against the generation before a
// pending promotion whose temp is lost, which a resolve resumes instead.
func (k *keyDir) copyWouldMismatch(v *VerifyReport) bool {
	if k.layout != LayoutDB || k.meta == nil {
		return false
	}
	size := k.obs.Transcript.Size
	if k.identity != nil && k.identity.Size == size && (k.fromTemp || v == nil || v.Result != VerifyMismatch) {
		return false
	}
	if p := k.pending; !k.fromTemp && p != nil && p.Prev != nil && p.Prev.Size == size {
		// A verify read the file whole only where it stopped at its end.
		return v != nil && v.Bytes == size && v.CRC32C != p.Prev.CRC32C
	}
	return true
}
