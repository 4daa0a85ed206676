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

// verdict judges k for job, or, with job nil, for every job at once. The
// rungs before the venue rung (1-5) read only the key and the bounds; the
// venue, pi-version and context rungs compare with the job. So the key is
// judged for the job that matches its stamps: a miss before the venue rung
// is every job's verdict; a venue-changed there means no job can match the
// stamp, which is every job's verdict too; anything else depends on the
// job, and is Undetermined with what the matching job would get.
func (s *Store) verdict(k *keyDir, job *Job, v *VerifyReport) *VerdictReport {
	now := s.opts.Now()
	judge := func(j gates.Job) string {
		out := gates.Evaluate(k.obs, s.opts.Bounds, j, now)
		if out.Resume && k.copyWouldMismatch(v) {
			// The "after" rung: the copy would not match the record.
			return string(gates.TranscriptReplaced)
		}
		return string(out.Reason)
	}
	if job != nil {
		return &VerdictReport{Reason: judge(gates.Job{PiVersion: job.PiVersion, Venue: job.Venue, Model: legacy.NormaliseModel(job.Model)})}
	}
	m := matchingJob(k.obs)
	matched := judge(m)
	switch gates.Reason(matched) {
	case gates.Absent, gates.NotARegularFile, gates.TooLarge, gates.MetaUnreadable, gates.Expired, gates.VenueChanged:
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
func (k *keyDir) copyWouldMismatch(v *VerifyReport) bool {
	if k.layout != LayoutDB || k.meta == nil {
		return false
	}
	if k.identity == nil || k.identity.Size != k.obs.Transcript.Size {
		return true
	}
	return v != nil && v.Result == VerifyMismatch
}
