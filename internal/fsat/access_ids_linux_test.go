package fsat

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// accessIDsChildEnv names the dir the child of
// TestAccessAtJudgesByTheEffectiveIDs looks in, and whether its
// faccessat2 is stood in for by ENOSYS: a process of its own, since its
// effective uid is changed for every thread.
const accessIDsChildEnv = "SESSDB_FSAT_ACCESS_IDS_CHILD"

// AccessAt judges by the effective ids, as an open would, not the real
// ones: a process whose real uid is root and whose effective uid is
// nobody's may not read a file only root may, with faccessat2
// (AT_EACCESS) and without it (ENOSYS: the ids differ, so x/sys's
// Faccessat with AT_EACCESS, not the kernel's faccessat, which judges by
// the real ids); so too where the uids are the same and the gids differ
// (a file only root's group may read, to a process whose real gid is
// root's and effective gid nobody's).
func TestAccessAtJudgesByTheEffectiveIDs(t *testing.T) {
	if v := os.Getenv(accessIDsChildEnv); v != "" {
		accessIDsChild(v)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a child whose effective uid is another's")
	}
	p := t.TempDir()
	must(t, os.Chmod(filepath.Dir(p), 0o755))
	must(t, os.Chmod(p, 0o755))
	write(t, filepath.Join(p, "rootonly"), "x")
	must(t, os.Chmod(filepath.Join(p, "rootonly"), 0o600))
	write(t, filepath.Join(p, "rootgroup"), "x")
	must(t, os.Chmod(filepath.Join(p, "rootgroup"), 0o040))
	for _, stand := range []string{"faccessat2", "enosys", "enosys-gid"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAccessAtJudgesByTheEffectiveIDs$", "-test.count=1")
		cmd.Env = append(os.Environ(), accessIDsChildEnv+"="+stand+":"+p)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: the child (real uid 0, effective nobody's): %v\n%s", stand, err, out)
		}
	}
}

// accessIDsChild is the child's side: v is "faccessat2:DIR",
// "enosys:DIR" or "enosys-gid:DIR". It exits 0 where AccessAt refuses the
// read of DIR's rootonly (rootgroup for enosys-gid) with EACCES, else 1,
// or 3 where it could not set its ids.
func accessIDsChild(v string) {
	stand, p, _ := strings.Cut(v, ":")
	if stand == "enosys" {
		faccessat2 = func(int, string, uint32, int) error { return unix.ENOSYS }
	}
	name := "rootonly"
	if stand == "enosys-gid" {
		// The uids the same (nobody's), the gids not: real root's group,
		// effective nobody's, no supplementary group. A file only root's
		// group may read is refused by the effective gid.
		faccessat2 = func(int, string, uint32, int) error { return unix.ENOSYS }
		name = "rootgroup"
		if err := syscall.Setgroups(nil); err != nil {
			fmt.Println("setgroups:", err)
			os.Exit(3)
		}
		if err := syscall.Setresgid(0, 65534, -1); err != nil {
			fmt.Println("setresgid:", err)
			os.Exit(3)
		}
		if err := syscall.Setresuid(65534, 65534, -1); err != nil {
			fmt.Println("setresuid:", err)
			os.Exit(3)
		}
	} else if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		fmt.Println("setresuid:", err)
		os.Exit(3)
	}
	d, err := os.Open(p)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	if err := AccessAt(d, name, unix.R_OK); !errors.Is(err, unix.EACCES) {
		fmt.Printf("%s, to read, by real uid %d gid %d and effective uid %d gid %d: %v; want EACCES\n", name, os.Getuid(), os.Getgid(), os.Geteuid(), os.Getegid(), err)
		os.Exit(1)
	}
	os.Exit(0)
}
