package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A signal that comes while a fleet walk connects to etcd (a login, with
// a user name, waits up to --etcd-timeout for a member that takes the
// connection and answers nothing) stops it as a signal during its walk
// does: nothing done, the summary marked interrupted, exit 130, at once.
// The walks caught signals only once the fleet was open, so the signal
// killed them: nothing on stdout, nothing on stderr, 128 + the signal.
func TestASignalWhileAFleetWalkConnectsStopsItAsCtrlCDoes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // takes connections, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	base := t.TempDir()
	dir, root := filepath.Join(base, "transcripts"), filepath.Join(base, "sessions")
	mustMkdir(t, dir, root)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"dump", []string{"dump", "--json"}},
		{"check", []string{"check", "--json", "--repair"}},
		{"reap", []string{"reap", "--json"}},
		{"migrate", []string{"migrate", "--json", "--to", "etcd", root}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append(c.args, "--log-format", "json")...)
			cmd.Env = append(os.Environ(), cliChildEnv+"=1", "PI_SESSIONS_DIR=",
				"PI_SESSIONS_ETCD_ENDPOINTS=http://"+ln.Addr().String(), "PI_SESSIONS_TRANSCRIPTS_DIR="+dir,
				"PI_SESSIONS_ETCD_USER=sessdb", "PI_SESSIONS_ETCD_PASSWORD=secret", "PI_SESSIONS_ETCD_TIMEOUT=20s")
			var out, errs strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // in the login, which waits 20 s
			start := time.Now()
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			took := time.Since(start)
			if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
				t.Fatalf("%s killed by %v while it connected: want it stopped as by Ctrl-C (exit 130)\nstdout: %s\nstderr: %s", c.name, ws.Signal(), out.String(), errs.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var last struct {
				Summary struct {
					Interrupted bool
					Entries     int
				}
			}
			json.Unmarshal([]byte(lines[len(lines)-1]), &last)
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || len(lines) != 1 || !last.Summary.Interrupted || last.Summary.Entries != 0 ||
				!strings.Contains(errs.String(), "interrupted after 0 entries") {
				t.Errorf("%s after SIGTERM while it connected: exit %d, stdout %q; want 130 and one summary line marked interrupted, 0 entries\nstderr: %s", c.name, code, out.String(), errs.String())
			}
			if took > 10*time.Second {
				t.Errorf("%s stopped %v after the signal; want at once, not at the login's timeout", c.name, took)
			}
		})
	}
}

// A walk stopped while it connects reports what it was asked to do: a
// dry run's summary says dry run, and migrate's names its direction, as a
// walk stopped mid-way does.
func TestAWalkStoppedWhileItConnectsSaysWhatItWasAsked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // takes connections, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	base := t.TempDir()
	dir, root := filepath.Join(base, "transcripts"), filepath.Join(base, "sessions")
	mustMkdir(t, dir, root)
	for _, c := range []struct {
		name      string
		args      []string
		direction string // migrate's, "" for reap
		dryRun    bool
	}{
		{"reap dry run", []string{"reap", "--json", "--dry-run"}, "", true},
		{"reap", []string{"reap", "--json"}, "", false},
		{"migrate to etcd dry run", []string{"migrate", "--json", "--dry-run", "--to", "etcd", root}, "to-etcd", true},
		{"migrate from etcd", []string{"migrate", "--json", "--from", "etcd", root}, "from-etcd", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append(c.args, "--log-format", "json")...)
			cmd.Env = append(os.Environ(), cliChildEnv+"=1", "PI_SESSIONS_DIR=",
				"PI_SESSIONS_ETCD_ENDPOINTS=http://"+ln.Addr().String(), "PI_SESSIONS_TRANSCRIPTS_DIR="+dir,
				"PI_SESSIONS_ETCD_USER=sessdb", "PI_SESSIONS_ETCD_PASSWORD=secret", "PI_SESSIONS_ETCD_TIMEOUT=20s")
			var out, errs strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // in the login, which waits 20 s
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			var last struct {
				Summary struct {
					Interrupted bool
					DryRun      bool   `json:"dry_run"`
					Direction   string `json:"direction"`
				}
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || cmd.ProcessState.ExitCode() != exitInterrupted || !last.Summary.Interrupted ||
				last.Summary.DryRun != c.dryRun || last.Summary.Direction != c.direction {
				t.Errorf("%s after SIGTERM while it connected: exit %d, stdout %q; want 130, interrupted, dry_run %v, direction %q\nstderr: %s",
					c.name, cmd.ProcessState.ExitCode(), out.String(), c.dryRun, c.direction, errs.String())
			}
		})
	}
}

// stats stopped while it connects to a fleet, as the other walks are:
// exit 130 at once, its figures of no entry marked interrupted in every
// format. Before stats ran on a fleet it exited 2 there.
func TestStatsStoppedWhileItConnectsToAFleet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // takes connections, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "transcripts")
	mustMkdir(t, dir)
	for args, mark := range map[string]string{
		"stats":              "INTERRUPTED: the figures cover only the 0 entries read",
		"stats --json":       `"interrupted":true`,
		"stats --prometheus": "\nsessdb_stats_interrupted 1\n",
	} {
		cmd := exec.Command(os.Args[0], append(strings.Fields(args), "--log-format", "json")...)
		cmd.Env = append(os.Environ(), cliChildEnv+"=1", "PI_SESSIONS_DIR=",
			"PI_SESSIONS_ETCD_ENDPOINTS=http://"+ln.Addr().String(), "PI_SESSIONS_TRANSCRIPTS_DIR="+dir,
			"PI_SESSIONS_ETCD_USER=sessdb", "PI_SESSIONS_ETCD_PASSWORD=secret", "PI_SESSIONS_ETCD_TIMEOUT=20s")
		var out, errs strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // in the login, which waits 20 s
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if code, took := cmd.ProcessState.ExitCode(), time.Since(start); code != exitInterrupted || !strings.Contains(out.String(), mark) ||
			!strings.Contains(errs.String(), "interrupted after 0 entries") || took > 10*time.Second {
			t.Errorf("%s after SIGTERM while it connected: exit %d after %v, stdout %q; want 130 at once, %q\nstderr: %s", args, code, took, out.String(), mark, errs.String())
		}
	}
}
