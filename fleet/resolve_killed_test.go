package fleet

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// On a fleet as on key dirs: a resolve of key b killed between its copy
// and its ticket leaves b's conversation staged in the job dir and no
// ticket; the promote of key a's cold-start ticket, read from that job
// dir before (as the CLI reads it, unlocked), is ErrJobDirBusy, and key
// a never holds b's conversation.
func TestOnAFleetAPromoteAfterAResolveKilledInItsJobDirDoesNotPromoteTheOtherKey(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	a, b := store.Key("github", "killed", "a"), store.Key("github", "killed", "b")
	f.run(b, "b's conversation")
	sessA, jobDir := f.job(a, "a's run")
	if sessA.Resume {
		t.Fatalf("key a resolved %s; want a cold start", sessA.Reason)
	}
	ticket, err := store.ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	// The resolve of b dies after its copy: runtime.Goexit runs its
	// deferred closes (the locks a death lets go of), not its clean-up.
	fired := false
	faults.Set(func(p faults.Point) error {
		if p == faults.ResolveAfterCopy && !fired {
			fired = true
			runtime.Goexit()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.s.Resolve(b, testJob, jobDir)
	}()
	<-done
	faults.Set(nil)
	if !fired {
		t.Fatal("the resolve of b never reached its copy")
	}
	if _, err := store.ReadTicket(jobDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the job dir's ticket after the killed resolve: %v; want none", err)
	}
	if m := markers(stagedOf(t, jobDir)); !slices.Contains(m, "b's conversation") {
		t.Fatalf("the job dir's staged file after the killed resolve: %v; want b's conversation", m)
	}
	res, err := f.s.Promote(ticket, store.PromoteRequest{PiVersion: testJob.PiVersion, TicketFromJobDir: true})
	if res.Promoted || !errors.Is(err, store.ErrJobDirBusy) {
		t.Errorf("promote of a's ticket from the job dir a killed resolve of b used since: %+v, %v; want ErrJobDirBusy", res, err)
	}
	if after, jd := resolveOn(t, f.s, a); after.Resume {
		t.Errorf("key a holds %v; want nothing (never b's conversation)", markers(stagedOf(t, jd)))
	}
}
