package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/internal/faults"
	"sessdb/store"
)

// promoteChildEnv makes the re-executed test binary a promoting child that
// SIGKILLs itself at the fault point it names (see TestMain).
const promoteChildEnv = "SESSDB_TEST_PROMOTE_KILL_AT"

var crashJob = store.Job{PiVersion: "0.58.3", Venue: "local"}

// runPromoteChild resolves SESSDB_KEY under SESSDB_ROOT, appends a line
// carrying SESSDB_MARKER and promotes it, killing itself at the point.
func runPromoteChild() int {
	point := faults.Point(os.Getenv(promoteChildEnv))
	faults.Set(func(p faults.Point) error {
		if p == point {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
	s, err := store.New(os.Getenv("SESSDB_ROOT"), store.Options{})
	if err == nil {
		_, err = promoteMarker(s, os.Getenv("SESSDB_KEY"), os.Getenv("SESSDB_MARKER"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// promoteMarker is one job on key: resolve, append a line carrying marker,
// promote.
func promoteMarker(s *store.Store, key, marker string) (store.PromoteResult, error) {
	jobDir, err := os.MkdirTemp("", "sessdb-job-")
	if err != nil {
		return store.PromoteResult{}, err
	}
	defer os.RemoveAll(jobDir)
	sess, err := s.Resolve(key, crashJob, jobDir)
	if err != nil {
		return store.PromoteResult{}, err
	}
	p := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
	b, err := os.ReadFile(p)
	if err != nil {
		return store.PromoteResult{}, err
	}
	if len(b) == 0 {
		b = []byte(header)
	}
	b = append(b, fmt.Sprintf(`{"type":"message","id":%q}`+"\n", marker)...)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return store.PromoteResult{}, err
	}
	return s.Promote(sess, store.PromoteRequest{PiVersion: crashJob.PiVersion})
}

// lastMarker is the marker of a transcript's last line, "" for none.
func lastMarker(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var id string
	fmt.Sscanf(strings.TrimPrefix(lines[len(lines)-1], `{"type":"message","id":`), "%q", &id)
	return id
}

// After a promotion killed at any of its fault points, on a key's first
// promotion or a later one, one check --repair leaves nothing to report
// (exit 0), and the key resumes the last acknowledged generation or the
// committed one (issue 15.8: a crash between commit and rename left check
// --repair at exit 3 on temps "younger than an hour").
func TestCheckRepairAfterAKillAtEveryFaultPoint(t *testing.T) {
	points := []faults.Point{faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync}
	for _, first := range []bool{true, false} {
		for _, p := range points {
			name := "later/" + string(p)
			if first {
				name = "first/" + string(p)
			}
			t.Run(name, func(t *testing.T) {
				clearEnv(t)
				root := filepath.Join(t.TempDir(), "sessions")
				key := store.Key("github", "acme/crash", "pi/issue-1")
				s, err := store.New(root, store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !first {
					if res, err := promoteMarker(s, key, "acked"); err != nil || !res.Promoted {
						t.Fatalf("the first promotion: %+v, %v", res, err)
					}
				}
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), promoteChildEnv+"="+string(p), "SESSDB_ROOT="+root, "SESSDB_KEY="+key, "SESSDB_MARKER=killed", "TMPDIR="+t.TempDir())
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("the promoting child was not killed at %s: %v\n%s", p, err, out)
				}

				code, stdout, errs := runCLI(t, "check", "--repair", root)
				if code != exitOK {
					t.Fatalf("check --repair: exit %d, want 0\n%s%s", code, stdout, errs)
				}
				if code, stdout, errs := runCLI(t, "check", root); code != exitOK {
					t.Fatalf("check after the repair: exit %d\n%s%s", code, stdout, errs)
				}
				jobDir := t.TempDir()
				sess, err := s.Resolve(key, crashJob, jobDir)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName))
				committed := p != faults.PromoteAfterTempWrite && p != faults.PromoteAfterTempSync
				want := "killed"
				switch {
				case !committed && first:
					if sess.Resume || sess.Reason != "absent" {
						t.Fatalf("nothing was ever acknowledged, yet %+v", sess)
					}
					return
				case !committed:
					want = "acked"
				}
				if !sess.Resume || lastMarker(b) != want {
					t.Fatalf("the key resolves %+v holding %q, want %q resumed", sess, lastMarker(b), want)
				}
			})
		}
	}
}
