package etcdtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A member keeps its ports across Stop and Restart (its peers know it by
// its peer URL, its clients by its client URL), so while it is stopped the
// kernel sees them free. Picking ports with a bind to port 0 and closing
// it, as most test harnesses do, then lets another test binary running
// beside this one (go test runs packages in parallel) be handed the very
// port a stopped member is about to bind again; CI saw exactly that once:
// "restart all: member m0: listen tcp 127.0.0.1:46345: bind: address
// already in use".
//
// So a cluster reserves its ports for its whole life, across processes:
// each port is a one-byte POSIX lock, at the port's offset, in one file per
// user under the temp dir, and a port another process holds is never
// picked. The ports are drawn from below the kernel's ephemeral range,
// which neither a bind to port 0 nor an outgoing connection is ever given,
// so a process that does not use this package takes one only by naming it.

// portFloor is the lowest port drawn; ports below it are where machines
// run their services.
const portFloor = 20000

// minSpan is the fewest ports worth drawing from below the ephemeral
// range; with fewer (a machine whose ephemeral range starts low) the
// kernel's own choice is taken, still reserved, instead.
const minSpan = 4096

// book is the process's reservation book.
var book struct {
	mu   sync.Mutex
	held map[int]bool // reserved by this process
	// file holds this user's locks. It is opened once and never closed:
	// closing any descriptor of a file drops every POSIX lock the process
	// holds on it. nil when it could not be opened; reservations are then
	// made in this process only.
	file *os.File
}

// reservePorts reserves n distinct loopback ports, free to bind now and
// reserved for this process until releasePorts.
func reservePorts(n int) ([]int, error) {
	book.mu.Lock()
	defer book.mu.Unlock()
	openBook()
	lo, hi, below := drawRange()
	var got []int
	for tries := 0; len(got) < n; tries++ {
		if tries == 100*n {
			releaseLocked(got)
			return nil, fmt.Errorf("etcdtest: no %d free ports after %d tries", n, tries)
		}
		port, err := candidate(lo, hi, below)
		if err != nil {
			releaseLocked(got)
			return nil, err
		}
		if reserveLocked(port) {
			got = append(got, port)
		}
	}
	return got, nil
}

// reserveLocked reserves port if no one holds it and it binds now.
func reserveLocked(port int) bool {
	if book.held[port] || !lockPort(port) {
		return false
	}
	if !bindable(port) {
		unlockPort(port)
		return false
	}
	book.held[port] = true
	return true
}

// releasePorts ends the reservation of ps.
func releasePorts(ps []int) {
	book.mu.Lock()
	defer book.mu.Unlock()
	releaseLocked(ps)
}

func releaseLocked(ps []int) {
	for _, p := range ps {
		if book.held[p] {
			delete(book.held, p)
			unlockPort(p)
		}
	}
}

func openBook() {
	if book.held != nil {
		return
	}
	book.held = map[int]bool{}
	name := filepath.Join(os.TempDir(), "sessdb-etcdtest-ports-"+strconv.Itoa(os.Getuid()))
	// O_NOFOLLOW: the temp dir is anyone's; a link planted at the name is no book.
	if f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600); err == nil {
		book.file = f
	}
}

// drawRange is the range ports are drawn from: [portFloor, the ephemeral
// range's start) when that holds minSpan ports (below); otherwise none,
// and candidate asks the kernel.
func drawRange() (lo, hi int, below bool) {
	start := ephemeralStart()
	if start-portFloor >= minSpan {
		return portFloor, start, true
	}
	return 0, 0, false
}

// ephemeralStart is the first port of the kernel's ephemeral range:
// Linux says; elsewhere 32768 is at or below every default (macOS and the
// BSDs start at 49152).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// candidate draws a port from [lo, hi), or, without a range, takes the
// one the kernel gives a bind to port 0.
func candidate(lo, hi int, below bool) (int, error) {
	if below {
		return lo + rand.IntN(hi-lo), nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func bindable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// lockPort takes port's byte in the book without waiting; false if another
// process holds it. Without a book every port is this process's to take,
// and so it is with a book that cannot be locked at all (a temp dir on a
// filesystem without POSIX locks: NFS without its lock daemon says
// ENOLCK): refusing every port would fail every cluster's start.
func lockPort(port int) bool {
	if book.file == nil {
		return true
	}
	err := setLock(port, unix.F_WRLCK)
	return err == nil || !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES)
}

func unlockPort(port int) {
	if book.file != nil {
		_ = setLock(port, unix.F_UNLCK)
	}
}

func setLock(port int, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: int64(port), Len: 1}
	for {
		err := unix.FcntlFlock(book.file.Fd(), unix.F_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
