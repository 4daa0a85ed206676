package etcdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// heldElsewhereEnv names the port a child run of this test binary tries
// to reserve (see TestPortReservedIsRefusedToAnotherProcess).
const heldElsewhereEnv = "ETCDTEST_TRY_RESERVE"

// tryReserveInChild runs this test binary again to reserve port as
// another test binary would, and reports whether it got it.
func tryReserveInChild(t *testing.T, port int) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortReservedIsRefusedToAnotherProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), heldElsewhereEnv+"="+strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	switch {
	case strings.Contains(string(out), "reserved "+strconv.Itoa(port)):
		return true
	case strings.Contains(string(out), "refused "+strconv.Itoa(port)):
		return false
	}
	t.Fatalf("child said neither reserved nor refused:\n%s", out)
	return false
}

// A port a cluster holds, even while the member that binds it is stopped,
// is not handed to another process that uses this package (the CI failure
// "restart all: ... bind: address already in use"), and is handed out
// again once the cluster is closed.
func TestPortReservedIsRefusedToAnotherProcess(t *testing.T) {
	if v := os.Getenv(heldElsewhereEnv); v != "" {
		port, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		book.mu.Lock()
		openBook()
		ok := reserveLocked(port)
		book.mu.Unlock()
		if ok {
			releasePorts([]int{port})
			fmt.Printf("reserved %d\n", port)
		} else {
			fmt.Printf("refused %d\n", port)
		}
		return
	}
	c := Start1(t)
	c.Stop(0)
	if len(c.ports) != 2 {
		t.Fatalf("cluster holds %v, want its two ports", c.ports)
	}
	for _, p := range c.ports {
		if !bindable(p) {
			t.Fatalf("port %d of the stopped member does not bind", p)
		}
		if tryReserveInChild(t, p) {
			t.Fatalf("another process reserved port %d of a stopped member", p)
		}
	}
	c.Restart(0)
	held := c.ports
	c.Close()
	for _, p := range held {
		if !tryReserveInChild(t, p) {
			t.Fatalf("port %d still refused after the cluster closed", p)
		}
	}
}

// Where the kernel's ephemeral range leaves room below it, the ports come
// from there, so no bind to port 0 and no outgoing connection (a client
// redialing a member, another test's server) is handed one.
func TestPortsComeFromBelowTheEphemeralRange(t *testing.T) {
	start := ephemeralStart()
	if start-portFloor < minSpan {
		t.Skipf("ephemeral range starts at %d: too few ports below it; the kernel's choice is taken", start)
	}
	ps, err := reservePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	defer releasePorts(ps)
	seen := map[int]bool{}
	for _, p := range ps {
		if p < portFloor || p >= start {
			t.Fatalf("port %d outside [%d, %d)", p, portFloor, start)
		}
		if seen[p] {
			t.Fatalf("port %d reserved twice", p)
		}
		seen[p] = true
	}
}

// A book that cannot be locked at all (a temp dir on a filesystem without
// POSIX locks: NFS without its lock daemon says ENOLCK) is no book: the
// ports are reserved in this process only, as when the file cannot be
// opened, not refused one by one until the cluster cannot start. Only a
// lock another process holds (EAGAIN, or EACCES) refuses a port. A book
// opened read-only stands for it here: a write lock on it fails EBADF.
func TestABookThatCannotLockIsNoBook(t *testing.T) {
	name := filepath.Join(t.TempDir(), "book")
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	book.mu.Lock()
	openBook()
	saved := book.file
	book.file = ro
	book.mu.Unlock()
	defer func() {
		book.mu.Lock()
		book.file = saved
		book.mu.Unlock()
	}()
	ps, err := reservePorts(4)
	if err != nil {
		t.Fatalf("a book that cannot lock: %v", err)
	}
	releasePorts(ps)
}
