package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/sample"
)

// resolve's --venue stands for the legacy store's job venue (run.backend,
// else the first of PI_BACKENDS, whose default was local), which sessdb
// does not read: without it a job runs on local. A legacy key stamped local
// (or unstamped) resumes so; one stamped podman is venue-changed, and the
// promotion of that job's run stamps local (job.md, "The venue").
func TestAResolveWithoutVenueIsOnLocalAsPIBackendsDefaulted(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	t.Setenv("PI_BACKENDS", "podman") // the legacy worker's: not read
	resolve := func(key string, venue ...string) (job, out string) {
		t.Helper()
		job = filepath.Join(t.TempDir(), "job")
		args := append([]string{"resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"}, venue...)
		code, out, errs := runCLI(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d, %s%s", args, code, out, errs)
		}
		return job, out
	}
	if _, out := resolve(sample.Legacy); !strings.Contains(out, `"reason":"resumed"`) {
		t.Errorf("the legacy key stamped local, resolved without --venue: %s; want resumed", out)
	}
	if _, out := resolve(sample.Mixed, "--venue", "podman"); !strings.Contains(out, `"reason":"resumed"`) {
		t.Fatalf("the key stamped podman, resolved on podman: %s; want resumed (the test tells nothing)", out)
	}
	job, out := resolve(sample.Mixed)
	if !strings.Contains(out, `"reason":"venue-changed"`) {
		t.Errorf("the key stamped podman, resolved without --venue: %s; want venue-changed", out)
	}
	f, err := os.OpenFile(filepath.Join(job, "session", "current.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-11-29T09:00:00.000Z","cwd":"/workspace"}` + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: exit %d, %s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "dump", "--json", "--key", sample.Mixed, root); code != exitOK || !strings.Contains(out, `"venue":"local"`) {
		t.Errorf("after the promotion of a job resolved without --venue: exit %d, %s; want its venue stamped local", code, brief(out))
	}
}
