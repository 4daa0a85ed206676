package db

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	pauseStepEnv = "SESSDB_DB_TEST_PAUSE_AT"
	pauseDirEnv  = "SESSDB_DB_TEST_PAUSE_DIR"
)

// Two processes create one key's meta.db at once: the first is paused at
// each step of its creation, the second creates and commits meanwhile,
// and the first then goes on or is killed (SIGKILL). Whatever the step
// and the fate, the second's open and commit succeed, a reader never sees
// a file but the whole one at the name, the first's commit (when it goes
// on) lands in the same file as the second's, and a creation that goes
// on leaves no temp behind. A creation that replaced the name instead of
// linking it (rename) would drop the second's commit; one whose lost link
// race were an error would fail the first's open.
func TestTwoProcessesCreateOneMetaDBAtOnce(t *testing.T) {
	if step := os.Getenv(pauseStepEnv); strings.HasPrefix(os.Getenv(childEnv), t.Name()+"/") && step != "" {
		createPausedAt(t, step)
		return
	}
	for _, step := range []string{"named", "created", "initialised", "before the link", "linked"} {
		for _, kill := range []bool{true, false} {
			fate := "goes on"
			if kill {
				fate = "killed"
			}
			t.Run(strings.ReplaceAll(step, " ", "_")+"/"+strings.ReplaceAll(fate, " ", "_"), func(t *testing.T) {
				kd := newKeyDir(t)
				first, stdin, lines := startPausedCreator(t, kd, step)

				// Before the link nothing is at the name; after it the name
				// is the first's file, locked by it until its temp is gone.
				_, err := OpenReader(kd.dir, kd.db, Options{LockTimeout: 100 * time.Millisecond})
				if step == "linked" {
					wantErr(t, err, ErrLockTimeout)
				} else if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("a reader while the first creation is paused %s: %v, want no meta.db", step, err)
				}

				second := make(chan error, 1)
				go func() {
					d, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: 20 * time.Second})
					if err == nil {
						err = errors.Join(d.Update(func(tx *Tx) error { return tx.PutVenue("second") }), d.Close())
					}
					second <- err
				}()
				if step != "linked" {
					// The first holds its temp's lock, which no open of
					// meta.db waits for.
					select {
					case err := <-second:
						if err != nil {
							t.Fatalf("the second creator, the first paused %s: %v", step, err)
						}
					case <-time.After(15 * time.Second):
						t.Fatalf("the second creator still waits 15s for the first, paused %s", step)
					}
				}
				if kill {
					first.Process.Kill()
					first.Wait()
				} else {
					stdin.Close()
					out, _ := io.ReadAll(lines)
					if err := first.Wait(); err != nil || !strings.Contains(string(out), "committed") {
						t.Fatalf("the first creator, paused %s and let go on: %v\n%s", step, err, out)
					}
				}
				if step == "linked" {
					if err := <-second; err != nil {
						t.Fatalf("the second creator, the first %s %s: %v", fate, step, err)
					}
				}

				d := mustOpen(t, kd, false)
				var s Sidecars
				if err := d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err }); err != nil {
					t.Fatal(err)
				}
				d.Close()
				if s.Venue == nil || *s.Venue != "second" {
					t.Errorf("venue %v, want the second creator's commit", s.Venue)
				}
				if got := s.PiVersion != nil && *s.PiVersion == "first"; got != !kill {
					t.Errorf("the first creator %s %s: its commit found %v, want %v", fate, step, got, !kill)
				}
				temps := 0
				ents, err := os.ReadDir(kd.path)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), TempPrefix) {
						temps++
					}
				}
				if want := 0; !kill && temps != want || kill && temps > 1 {
					t.Errorf("the first creator %s %s: %d temps left: %v", fate, step, temps, ents)
				}
			})
		}
	}
}

// startPausedCreator starts a child that opens kd as a writer and pauses
// its creation of meta.db at step, until its stdin closes; it returns once
// the child is there.
func startPausedCreator(t *testing.T, kd keyDir, step string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	var cmd *exec.Cmd
	var stdin io.WriteCloser
	var stdout io.ReadCloser
	_, err := runChild(t, []string{pauseStepEnv + "=" + step, pauseDirEnv + "=" + kd.path}, func(c *exec.Cmd) {
		cmd = c
		stdin, _ = c.StdinPipe()
		stdout, _ = c.StdoutPipe()
		c.Stderr = os.Stderr
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the first creator never reached %s: %v", step, err)
		}
		if strings.HasPrefix(line, "paused") {
			return cmd, stdin, r
		}
	}
}

// createPausedAt is the child's side: an open that creates meta.db,
// pausing at step, then a commit.
func createPausedAt(t *testing.T, step string) {
	kd := openKeyDir(t, os.Getenv(pauseDirEnv))
	pause := func(at string) {
		if at != step {
			return
		}
		fmt.Println("paused", at)
		io.Copy(io.Discard, os.Stdin)
	}
	testHookCreateStep = pause
	testHookBeforeLink = func() { pause("before the link") }
	defer func() { testHookCreateStep, testHookBeforeLink = nil, nil }()
	d, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(tx *Tx) error { return tx.PutPiVersion("first") }); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(kd.path, FileName), &st); err != nil || st.Nlink != 1 {
		t.Fatalf("meta.db after the first's commit: %d names, %v", st.Nlink, err)
	}
	fmt.Println("committed")
}
