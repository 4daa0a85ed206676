package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A ticket names where the sessions root leads, links resolved as the
// kernel takes them. A root spelled "link/../sessions" is the sessions dir
// beside the link's target; cleaned (filepath.Abs, as before), the ticket
// named the sessions dir beside the link, another store, and a promote
// there took the job's run as its own (a cold start promoted into the
// wrong root). Now that store refuses it (ErrWrongRoot) and writes
// nothing, and the root's other spellings, and a ticket naming it cleaned
// the way an older sessdb did where that leads to the same directory,
// still promote.
func TestATicketNamesWhereTheRootLeads(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	target := filepath.Join(base, "far", "target")
	must(t, os.MkdirAll(target, 0o700))
	must(t, os.Symlink(target, filepath.Join(base, "link")))
	spelled := filepath.Join(base, "link") + "/../sessions" // the kernel: base/far/sessions
	real := filepath.Join(base, "far", "sessions")
	cleaned := filepath.Join(base, "sessions")

	s, err := New(spelled, Options{})
	must(t, err)
	sess, dir, data := contractJob(t, s, testKey, "A")
	if sess.Root != real {
		t.Fatalf("the ticket names %q, want where the root leads, %q", sess.Root, real)
	}
	stage(t, dir, answeredTurn(data, "A", 10))
	beside, err := New(cleaned, Options{})
	must(t, err)
	if _, err := beside.Promote(sess, PromoteRequest{PiVersion: testPi}); !errors.Is(err, ErrWrongRoot) {
		t.Fatalf("promote into the cleaned spelling's store: %v, want ErrWrongRoot", err)
	}
	if _, err := os.Lstat(cleaned); !os.IsNotExist(err) {
		t.Fatalf("the other store was written: %v", err)
	}
	other, err := New(real, Options{})
	must(t, err)
	if res, err := other.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted {
		t.Fatalf("promote through the root's real path: %+v, %v", res, err)
	}

	// An older sessdb's ticket names the root cleaned: through a link to
	// it, that is the same directory, and it promotes.
	linked := filepath.Join(base, "linked-sessions")
	must(t, os.Symlink(real, linked))
	viaLink, err := New(linked, Options{})
	must(t, err)
	sess, dir, data = contractJob(t, viaLink, testKey, "B")
	stage(t, dir, answeredTurn(data, "B", 10))
	sess.Root = linked
	if res, err := viaLink.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("an older ticket naming the link: %+v, %v", res, err)
	}
}
