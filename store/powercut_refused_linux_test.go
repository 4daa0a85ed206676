package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// TestPowerCutDuringAReapThatRefuses cuts the power at every step of a
// reap that refuses an expired key (which: "db", a promoted key; "dead",
// a key that holds nothing, deadKey) at its check before the rename: an
// immutable stray temp it may not remove. The refusal writes only what
// it undoes (a lock's meta.db), and leaves a dead key's empty meta.db as
// it was. On every disk a cut leaves, the fresh key resumes as before;
// the refused key is at its name, cold, a db key's transcript byte for
// byte as it was acknowledged; nothing is reap-owned; and, the attribute
// gone (no image keeps it), the next reap fails nothing and removes the
// key. Before, the refusal removed a dead key's empty meta.db as a lock's,
// its unlink set the key's clock, and in 2 of its 3 disks the dead key
// waited for a reap a TTL on. Where the machine cannot make a file
// immutable, skipped.
func TestPowerCutDuringAReapThatRefuses(t *testing.T) {
	for _, which := range []string{"db", "dead"} {
		t.Run(which, func(t *testing.T) { powerCutRefusedReap(t, which) })
	}
}

func powerCutRefusedReap(t *testing.T, which string) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	fresh := Key("github", "a/b", "fresh")
	runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh")
	idle := clock.now.Add(-opsTTL - time.Hour)
	var kd string
	switch which {
	case "db":
		expiredKey(t, s, clock, testKey)
		kd = filepath.Join(root, testKey)
	case "dead":
		kd = deadKeyDir(t, root, nil, idle, idle)
	}
	transcript, _ := os.ReadFile(filepath.Join(kd, TranscriptName))
	temp := filepath.Join(kd, tmpPrefix+"00000000000000aa")
	if err := os.WriteFile(temp, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(temp, idle, idle)
	os.Chtimes(kd, idle, idle)
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", root).Run() })
	chattr(t, "+i", temp)

	c := armCuts(t, s, root)
	res, err := s.ReapWith(context.Background(), ReapOptions{Workers: 1})
	faults.Set(nil)
	if t.Failed() {
		t.FailNow()
	}
	if err != nil || len(res.Removed) != 0 || !slices.Equal(res.Failed, []string{testKey}) {
		t.Fatalf("the refusing reap = %+v, %v", res, err)
	}
	c.cut(afterReturn)
	for _, img := range c.images {
		where := fmt.Sprintf("cut %s (%s, lost %v)", img.at, img.Mode, img.Lost)
		s2 := imageStore(t, s, img)
		resolvesAs(t, s2, fresh, true, gates.Resumed, "fresh", where)
		if sess, _ := checkDescribed(t, s2, img.Dir, testKey); sess.Resume {
			t.Fatalf("%s: the expired key resumes", where)
		}
		if got, err := os.ReadFile(filepath.Join(img.Dir, testKey, TranscriptName)); which == "db" && (err != nil || !bytes.Equal(got, transcript)) {
			t.Fatalf("%s: the refused key's transcript: %v (%d bytes of %d)", where, err, len(got), len(transcript))
		}
		if left, _ := filepath.Glob(filepath.Join(img.Dir, ReapedPrefix+"*")); len(left) > 0 {
			t.Fatalf("%s: reap-owned dirs %v", where, left)
		}
		dumps(t, s2, where)
		again, err := s2.ReapWith(context.Background(), ReapOptions{Workers: 1})
		if err != nil || len(again.Failed) != 0 {
			t.Fatalf("%s: the next reap = %+v, %v", where, again, err)
		}
		if !slices.Contains(again.Removed, testKey) {
			t.Fatalf("%s: the next reap = %+v; want %s removed", where, again, testKey)
		}
		if fileExists(filepath.Join(img.Dir, testKey)) {
			t.Fatalf("%s: the key removed is still there", where)
		}
		resolvesAs(t, s2, fresh, true, gates.Resumed, "fresh", where+", after the next reap")
	}
	t.Logf("%d disks imaged at %d cuts", len(c.images), len(c.steps))
}
