package store

import (
	"testing"

	"sessdb/gates"
)

// The library takes a job's stamps exactly as given, white space around
// them included (Job's doc; only the CLI trims them): a key stamped with
// "local\n" and "0.58.3 " holds those stamps, resumes a job given the same
// blanks, and cold-starts one given the trimmed values.
func TestTheLibraryStampsExactlyAsGiven(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "a/b", "blanks")
	blank := Job{PiVersion: testPi + " ", Venue: "local\n"}
	runJob(t, s, key, blank, PromoteRequest{PiVersion: testPi + " "}, "turn")
	var r KeyReport
	if err := s.Inspect(0, func(k KeyReport) error { r = k; return nil }); err != nil {
		t.Fatal(err)
	}
	if r.PiVersion == nil || *r.PiVersion != testPi+" " || r.Venue == nil || *r.Venue != "local\n" {
		t.Fatalf("stamps %v %v; want %q and %q as given", r.PiVersion, r.Venue, testPi+" ", "local\n")
	}
	if sess, _ := mustResolve(t, s, key, blank); !sess.Resume {
		t.Fatalf("a job given the same blanks: %+v; want resumed", sess)
	}
	if sess, _ := mustResolve(t, s, key, Job{PiVersion: testPi, Venue: "local"}); sess.Resume || sess.Reason != gates.VenueChanged {
		t.Fatalf("a job given the trimmed stamps: %+v; want venue-changed", sess)
	}
}
