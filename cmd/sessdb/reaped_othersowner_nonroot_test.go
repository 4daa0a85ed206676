package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A reap-owned dir in a worker's root whose meta.db (or the dir itself)
// another user than root owns: check's finding said "a reap or check
// --repair run as that user, or root, finishes it". That user's reap does
// not: the worker's root and dir are the worker's, 0700, so it cannot
// even look in them (exit 1, the dir left), and an operator who ran it
// as told got nowhere. Root's does. The finding names root alone.
func TestCheckOfAReapedDirAnotherUnprivilegedUserOwnsNamesRootsReap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give the files another user and run sessdb as it")
	}
	const other = 4242 // neither root nor nobody
	for _, dir := range []bool{false, true} {
		w := newNobodysWorker(t)
		aside := killedReapsDir(t, w)
		owned := []string{filepath.Join(aside, "meta.db")}
		if dir {
			owned = append(owned, aside)
		}
		for _, p := range owned {
			if err := os.Chown(p, other, other); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(aside, 0o700); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(aside)
		_, out, errs := w.runAs("check", w.root)
		if !strings.Contains(out, name+": reap-interrupted: ") || !strings.Contains(out, "uid 4242's") {
			t.Fatalf("check as nobody (dir %v):\n%s%s\nwant the dir's finding naming uid 4242", dir, out, errs)
		}
		// What the finding says of that user's reap is what it does.
		code, rout, rerrs := runAsUID(t, w, other, "reap", w.root)
		_, lerr := os.Lstat(aside)
		finished := code == 0 && os.IsNotExist(lerr)
		if says := strings.Contains(out, "run as that user"); says != finished {
			t.Errorf("dir %v: check's finding says uid %d's reap finishes it: %v; run as uid %d, reap exit %d, dir gone %v\ncheck: %s\nreap: %s%s",
				dir, other, says, other, code, os.IsNotExist(lerr), out, rout, rerrs)
		}
		if !strings.Contains(out, "run as root finishes it") {
			t.Errorf("dir %v: check's finding:\n%s\nwant it to name root's reap, which finishes it", dir, out)
		}
		// And root's does.
		if code, out, errs := runCLI(t, "reap", w.root); code != 0 || !strings.Contains(out, name) {
			t.Errorf("dir %v: reap as root: exit %d\n%s%s\nwant the dir finished, exit 0", dir, code, out, errs)
		}
	}
}

// runAsUID runs w's sessdb as uid (and gid) uid.
func runAsUID(t *testing.T, w nobodysWorker, uid uint32, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(w.base, "sessdb.test"), append(args, "--log-format", "console")...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliClockEnv+"="+clock().Format(time.RFC3339Nano), "PI_SESSIONS_DIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errs.String()
}
