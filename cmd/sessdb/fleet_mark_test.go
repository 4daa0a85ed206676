package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
	"sessdb/store"
)

// A worker whose etcd prefix differs from its fleet's by a slip ("sessdb"
// for "/sessdb/cli"), on the fleet's transcripts dir: its promote, reap,
// check (with and without --repair) and migrate (--to etcd, and --from
// etcd, which makes no sessions root) are configuration errors naming the transcripts dir's variable and the
// other fleet (exit 2), nothing written or removed; the run is left in
// its job dir, and the fleet's own key still resumes. Its resolve, under
// which every key has no record, is one too, no ticket or staged file
// left in its job dir:
// it compares the dir's mark where it finds no record. Before, it was a
// cold start (absent, exit 0) for every key, whose promote was refused.
func TestFleetCommandsOnAnotherFleetsDirAreConfigErrors(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/marked")
	// A run resolved under the slipped prefix before the dir was marked
	// (absent: no mark to compare), promoted after.
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", strings.TrimPrefix(f.prefix, "/"))
	r, dir := f.resolve(t, key, "job-b")
	if r.Resume {
		t.Fatalf("resolve under the slipped prefix before the mark = %+v, want a cold start", r)
	}
	appendAnswered(t, dir, "b")
	staged, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName))
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", f.prefix)
	f.run(t, key, "job-a")
	own, _ := filepath.Glob(filepath.Join(f.dir, key, "*.jsonl"))

	t.Setenv("PI_SESSIONS_ETCD_PREFIX", strings.TrimPrefix(f.prefix, "/"))
	slipped := filepath.Join(t.TempDir(), "job-slipped")
	fromRoot := filepath.Join(t.TempDir(), "root")
	for _, args := range [][]string{
		{"resolve", "--key", key, "--job-dir", slipped, "--pi-version", "0.58.3"},
		{"resolve", "--key", store.Key("github", "acme/widget", "pi/new"), "--job-dir", slipped, "--pi-version", "0.58.3"},
		{"promote", "--job-dir", dir, "--pi-version", "0.58.3"},
		{"reap", "--grace", "1s"},
		{"reap", "--dry-run"},
		{"check"},
		{"check", "--repair", "--grace", "1s"},
		{"migrate", "--to", "etcd", t.TempDir()},
		{"migrate", "--from", "etcd", fromRoot},
	} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "PI_SESSIONS_TRANSCRIPTS_DIR") || !strings.Contains(errs, "another fleet's") || !strings.Contains(errs, `"/sessdb/cli"`) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 naming the variable and the fleet whose dir it is", args, code, out, errs)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName)); string(got) != string(staged) {
		t.Errorf("the refused run's transcript changed in its job dir")
	}
	for _, name := range []string{store.TicketName, filepath.Join(store.StagedDirName, store.TranscriptName)} {
		if _, err := os.Lstat(filepath.Join(slipped, name)); !os.IsNotExist(err) {
			t.Errorf("the refused resolve's %s: %v; want none written", name, err)
		}
	}
	if _, err := os.Lstat(fromRoot); !os.IsNotExist(err) {
		t.Errorf("the refused migrate --from etcd's sessions root: %v; want none made", err)
	}
	if now, _ := filepath.Glob(filepath.Join(f.dir, key, "*.jsonl")); len(now) != len(own) || now[0] != own[0] {
		t.Errorf("the fleet's files are %v, were %v", now, own)
	}
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", f.prefix)
	if r, _ := f.resolve(t, key, "job-c"); !r.Resume || r.Reason != "resumed" {
		t.Errorf("the fleet's key after the other's commands = %+v, want it resumed", r)
	}
}

// A promote whose claim of the transcripts dir meets a fault, not another
// fleet's mark (here the fleet's ID in etcd damaged: an operator's put),
// is promote-failed as every fault of a promotion is: exit 0, its JSON on
// stdout, the cause on stderr, the run left in its job dir, nothing
// written in the dir. Before, it was the command's fault: exit 1 and no
// JSON, which a worker reading promote's answer does not expect.
func TestFleetPromoteWhoseClaimFaultsIsPromoteFailed(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/claim-fault")
	if _, err := f.c.Client(t).Put(t.Context(), f.prefix+"/fleet", "not an id"); err != nil {
		t.Fatal(err)
	}
	_, dir := f.resolve(t, key, "job-a")
	appendAnswered(t, dir, "a")
	staged, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName))
	code, out, errs := runCLI(t, "promote", "--job-dir", dir, "--pi-version", "0.58.3")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.Promoted || p.Reason != "promote-failed" || !strings.Contains(errs, "fleet id") {
		t.Errorf("promote whose claim faults: exit %d, stdout %q, stderr %q; want exit 0, promote-failed, the cause on stderr", code, out, errs)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName)); string(got) != string(staged) {
		t.Errorf("the run's transcript changed in its job dir")
	}
	if names, err := os.ReadDir(f.dir); err != nil || len(names) != 0 {
		t.Errorf("the transcripts dir holds %v (%v); want nothing written", names, err)
	}
}

// A promote whose read of the dir's mark fails (EIO, or ESTALE of the
// mark alone, stood in for by the fault point) is promote-failed, exit 0,
// the mark's read named on stderr, the run left in its job dir: a fault,
// not another fleet's dir (exit 2). check and reap, which read the mark
// too, fault (exit 1) naming it. Once the mark reads again the run
// promotes.
func TestFleetPromoteWhoseMarkDoesNotReadIsPromoteFailed(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/mark-eio")
	f.run(t, key, "job-a")
	mark := filepath.Join(f.dir, ".sessdb-fleet")
	defer faults.Set(nil)
	for i, errno := range []error{unix.EIO, unix.ESTALE} {
		_, dir := f.resolve(t, key, fmt.Sprintf("job-b%d", i))
		appendAnswered(t, dir, "b")
		staged, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName))
		faults.Set(func(p faults.Point) error {
			if p == faults.SharedMarkRead {
				return errno
			}
			return nil
		})
		code, out, errs := runCLI(t, "promote", "--job-dir", dir, "--pi-version", "0.58.3")
		var p promoteResult
		if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.Promoted || p.Reason != "promote-failed" || !strings.Contains(errs, mark) || !strings.Contains(errs, errno.Error()) {
			t.Errorf("promote whose mark does not read (%v): exit %d, stdout %q, stderr %q; want exit 0, promote-failed, the mark's read on stderr", errno, code, out, errs)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName)); string(got) != string(staged) {
			t.Errorf("the run's transcript changed in its job dir")
		}
		for _, args := range [][]string{{"check"}, {"reap", "--dry-run"}} {
			if code, out, errs := runCLI(t, args...); code != exitFault || !strings.Contains(errs, mark) || !strings.Contains(errs, errno.Error()) {
				t.Errorf("%s whose mark does not read (%v): exit %d, stdout %q, stderr %q; want exit 1 naming the mark's read", args, errno, code, out, errs)
			}
		}
		faults.Set(nil)
		if p, errs := f.promote(t, dir); !p.Promoted {
			t.Errorf("the run once the mark reads: %+v\n%s", p, errs)
		}
	}
}

// A reap timer whose prefix is a slip of its fleet's, on the fleet's dir
// from before marks (no mark yet, no fleet key): its reap is a
// configuration error naming the transcripts dir's variable (exit 2), the
// dir unmarked and the fleet's transcript kept; the fleet's own reap then
// marks the dir. Before, the slipped reap marked the dir its own and swept
// the fleet's transcript, and the fleet's own reap was refused.
func TestFleetSlippedReapOnADirFromBeforeMarksSweepsNothing(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/before-marks")
	f.run(t, key, "job-a")
	own, _ := filepath.Glob(filepath.Join(f.dir, key, "*.jsonl"))
	if err := os.Remove(filepath.Join(f.dir, ".sessdb-fleet")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Client(t).Delete(t.Context(), f.prefix+"/fleet"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", strings.TrimPrefix(f.prefix, "/"))
	code, out, errs := runCLI(t, "reap", "--grace", "1s")
	if code != exitUsage || out != "" || !strings.Contains(errs, "PI_SESSIONS_TRANSCRIPTS_DIR") || !strings.Contains(errs, "has no record") {
		t.Errorf("the slipped reap: exit %d, stdout %q, stderr %q; want exit 2 naming the variable and why", code, out, errs)
	}
	if now, _ := filepath.Glob(filepath.Join(f.dir, key, "*.jsonl")); len(now) != 1 || now[0] != own[0] {
		t.Fatalf("the fleet's files are %v, were %v", now, own)
	}
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", f.prefix)
	if code, out, errs := runCLI(t, "reap", "--grace", "1s"); code != exitOK {
		t.Errorf("the fleet's own reap: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, ".sessdb-fleet")); err != nil {
		t.Errorf("the mark after the fleet's reap: %v", err)
	}
}

// markDir has the environment's fleet mark its transcripts dir, empty, as
// the fleet's first writer does before it writes there (check --repair):
// a test that puts files in the dir by hand puts them in a dir so marked.
func markDir(t *testing.T) {
	t.Helper()
	if code, out, errs := runCLI(t, "check", "--repair"); code != exitOK {
		t.Fatalf("check --repair, to mark the dir: exit %d\n%s%s", code, out, errs)
	}
}
