package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// cancelAtBaseRead has cancel called as a read of the transcript in place
// for the key's base (lostPromotion, fellBack) starts, and counts those
// reads.
func cancelAtBaseRead(t *testing.T, cancel func()) *int {
	reads := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.BaseTranscriptRead {
			reads++
			cancel()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	return &reads
}

// A key whose last promotion committed and then lost its temp holds the
// generation before it where that is in place: Begin, and a resolve's
// view, tell so by reading current.jsonl whole (lostPromotion), which
// took context.Background(). BeginContext and ViewContext, stopped as
// that read began, read on to the file's end and returned the key opened,
// nil error, a stopped caller's wait as long as the file (gigabytes,
// possibly). They end with ctx's error now, and the key is as it was: the
// retry of the lost promotion's ticket still promotes it.
func TestABeginOrViewStoppedAsItReadsTheTranscriptInPlaceEndsThere(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	b, ok := s.backend.(keyDirs)
	if !ok {
		t.Fatalf("backend %T; want keyDirs", s.backend)
	}
	big := strings.Repeat("x", 4<<20)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, big)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("lost")...))
	if err := os.Remove(crashAfterCommit(t, s, root, sess)); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(context.Context) (interface{ Close() error }, error){
		"begin": func(ctx context.Context) (interface{ Close() error }, error) {
			return b.BeginContext(ctx, testKey, Base{})
		},
		"view": func(ctx context.Context) (interface{ Close() error }, error) {
			return b.ViewContext(ctx, testKey, gates.Bounds{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reads := cancelAtBaseRead(t, cancel)
			c, err := open(ctx)
			faults.Set(nil)
			if err == nil {
				c.Close()
			}
			if *reads != 1 || !errors.Is(err, context.Canceled) {
				t.Fatalf("%s stopped as it read the transcript in place (%d reads): %v; want context.Canceled", name, *reads, err)
			}
		})
	}
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Repeat {
		t.Fatalf("the lost promotion's retry after the stops: %+v; want promoted", res)
	}
}

// check --repair writes an invalid meta page again where the valid one
// describes the transcript in place, which it tells by reading the
// transcript whole (fellBack) under the key's lock. That read took
// context.Background(): interrupted as it began, the repair read on and
// committed, and said the page was written again. It takes the check's
// ctx now: nothing is written, the finding says the check was
// interrupted, and the next repair writes the page.
func TestAMetaPageRepairInterruptedAsItReadsTheTranscriptWritesNothing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "spare")
	m := chkMeta(t, root, key)
	writeAtFile(t, chkDB(root, key), make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := cancelAtBaseRead(t, cancel)
	var found []Finding
	_, err := s.Check(ctx, CheckOptions{Repair: true}, func(f Finding) error { found = append(found, f); return nil })
	faults.Set(nil)
	f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid)
	if *reads == 0 || !errors.Is(err, context.Canceled) || f == nil || f.Repaired || !strings.Contains(f.Repair, "check interrupted (context canceled)") {
		t.Fatalf("check --repair interrupted as it read the transcript (%d reads): %v, %+v; want context.Canceled, the page not written", *reads, err, f)
	}
	if m := chkMeta(t, root, key); m.Pages[0].Valid() == m.Pages[1].Valid() {
		t.Fatalf("meta pages after the interrupted repair %+v; want one still invalid", m.Pages)
	}
	if found, _ := chkRun(t, s, true); chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid) == nil || !chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid).Repaired {
		t.Fatalf("the next check --repair: %+v; want the page written again", found)
	}
}

// The same read on check --repair's way to an invalid meta page: where
// the key's last promotion committed and then lost its temp, the writer
// that would write the page again first tells which generation is in
// place (lostPromotion, in currentBase), then whether the valid page
// describes it (fellBack). Stopped as the first of those reads began, the
// repair ends there: one read, the finding says the check was
// interrupted, the page is not written, and the next repair writes it, the
// generation before the lost one still resumed. Given
// context.Background() (mutnew50's N11), the first read went on to the
// transcript's end (gigabytes, possibly) before the second saw the stop.
func TestAMetaPageRepairBesideALostPromotionStoppedAsItReadsTheTranscriptEndsThere(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, strings.Repeat("x", 4<<20))
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	before := staged(t, jobDir)
	stage(t, jobDir, append(bytes.Clone(before), entryLine("lost")...))
	if err := os.Remove(crashAfterCommit(t, s, root, sess)); err != nil {
		t.Fatal(err)
	}
	m := chkMeta(t, root, testKey)
	writeAtFile(t, chkDB(root, testKey), make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := cancelAtBaseRead(t, cancel)
	var found []Finding
	_, err := s.Check(ctx, CheckOptions{Repair: true}, func(f Finding) error { found = append(found, f); return nil })
	faults.Set(nil)
	f := chkFind(found, testKey+"/"+db.FileName, KindMetaPageInvalid)
	if *reads != 1 || !errors.Is(err, context.Canceled) || f == nil || f.Repaired || !strings.Contains(f.Repair, "check interrupted (context canceled)") {
		t.Fatalf("check --repair stopped as it read the transcript beside a lost promotion (%d reads): %v, %+v; want one read, context.Canceled, the page not written", *reads, err, f)
	}
	if m := chkMeta(t, root, testKey); m.Pages[0].Valid() == m.Pages[1].Valid() {
		t.Fatalf("meta pages after the stopped repair %+v; want one still invalid", m.Pages)
	}
	found, _ = chkRun(t, s, true)
	if f := chkFind(found, testKey+"/"+db.FileName, KindMetaPageInvalid); f == nil || !f.Repaired {
		t.Fatalf("the next check --repair: %+v; want the page written again", found)
	}
	if _, jobDir := mustResolve(t, s, testKey, localJob()); !bytes.Equal(staged(t, jobDir), before) {
		t.Fatal("the key after the repairs does not resume the generation before the lost promotion")
	}
}
