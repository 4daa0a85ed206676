package legacy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/testfs"
)

// keyDir is a temp key directory and the descriptor the readers take,
// opened the way the store opens it.
type keyDir struct {
	path string
	dir  *os.File
}

func newKeyDir(t *testing.T) keyDir {
	t.Helper()
	p := t.TempDir()
	d, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return keyDir{p, d}
}

func (k keyDir) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(k.path, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// outside writes a file outside the key dir, the target of a planted link.
func outside(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (k keyDir) link(t *testing.T, name, target string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(k.path, name)); err != nil {
		t.Fatal(err)
	}
}

// fifo makes a FIFO at name and arranges that a reader stuck opening it
// (the bug this guards against) is released when the test ends.
func (k keyDir) fifo(t *testing.T, name string) {
	t.Helper()
	p := filepath.Join(k.path, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
	})
}

// within fails the test if f does not return in time: a read that blocks
// on a FIFO must fail the test, not hang the suite until its timeout.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("read did not return within 5s: it blocked")
	}
}

func TestReadSidecarValues(t *testing.T) {
	cases := []struct {
		name, content string
		want          string
		ok            bool
	}{
		{"plain", "0.80.7", "0.80.7", true},
		{"trailing newline", "local\n", "local", true},
		{"spaces round a counter", " 3 ", "3", true},
		{"JS whitespace", "\ufeff\u00a0podman\u2028\u3000", "podman", true},
		{"NEL is not JS whitespace", "\u0085x", "\u0085x", true},
		{"only whitespace is the empty value", " \n\t", "", true},
		{"invalid UTF-8 as Node decodes it", "a\xe2\x82A", "a\ufffdA", true},
		{"exactly the cap", strings.Repeat("7", SidecarMaxBytes), strings.Repeat("7", SidecarMaxBytes), true},
		{"empty", "", "", false},
		{"one over the cap", strings.Repeat("7", SidecarMaxBytes+1), "", false},
		// legacy 24: oversized is no value even when it would trim small.
		{"5000 bytes that trim to 3", "3" + strings.Repeat(" ", 4999), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKeyDir(t)
			k.write(t, "s", c.content)
			got, ok := ReadSidecar(k.dir, "s")
			if got != c.want || ok != c.ok {
				t.Fatalf("ReadSidecar = %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// The cap is the legacy SIDECAR_MAX_BYTES, 4096, written out here rather
// than read from the constant: a sidecar the legacy reader read (4096
// bytes) reads, one it refused (4097) does not, whatever the constant says.
func TestTheSidecarCapIsTheLegacy4096Bytes(t *testing.T) {
	for size, want := range map[int]bool{1: true, 4095: true, 4096: true, 4097: false, 8192: false} {
		content := "3" + strings.Repeat(" ", size-1)
		k := newKeyDir(t)
		k.write(t, ResumeChainName, content)
		if _, ok := ReadSidecar(k.dir, ResumeChainName); ok != want {
			t.Errorf("ReadSidecar of %d bytes: value %v, want %v", size, ok, want)
		}
		if _, ok := SidecarValue([]byte(content)); ok != want {
			t.Errorf("SidecarValue of %d bytes: value %v, want %v", size, ok, want)
		}
		if got, wantN := ReadResumeChain(k.dir), map[bool]uint64{true: 3}[want]; got != wantN {
			t.Errorf("ReadResumeChain of %d bytes = %d, want %d", size, got, wantN)
		}
	}
}

// TestReadSidecarNoValue covers everything at a name that is not a small
// regular file: none of it is followed, blocks or yields a value.
func TestReadSidecarNoValue(t *testing.T) {
	setups := map[string]func(t *testing.T, k keyDir){
		"missing":                func(t *testing.T, k keyDir) {},
		"link to a real file":    func(t *testing.T, k keyDir) { k.link(t, "s", outside(t, "3")) },
		"relative link in dir":   func(t *testing.T, k keyDir) { k.write(t, "real", "3"); k.link(t, "s", "real") },
		"dangling link":          func(t *testing.T, k keyDir) { k.link(t, "s", filepath.Join(k.path, "nowhere")) },
		"directory":              func(t *testing.T, k keyDir) { os.Mkdir(filepath.Join(k.path, "s"), 0o700) },
		"FIFO":                   func(t *testing.T, k keyDir) { k.fifo(t, "s") },
		"link to a FIFO":         func(t *testing.T, k keyDir) { k.fifo(t, "f"); k.link(t, "s", "f") },
		"socket":                 func(t *testing.T, k keyDir) { listen(t, filepath.Join(k.path, "s")) },
		"character device":       func(t *testing.T, k keyDir) { mknodNull(t, filepath.Join(k.path, "s")) },
		"link to a directory":    func(t *testing.T, k keyDir) { k.link(t, "s", t.TempDir()) },
		"link to /dev/zero":      func(t *testing.T, k keyDir) { k.link(t, "s", "/dev/zero") },
		"path back into the dir": func(t *testing.T, k keyDir) { k.write(t, "s", "3") }, // named "../<dir>/s" below
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			k := newKeyDir(t)
			setup(t, k)
			sidecar := "s"
			if name == "path back into the dir" {
				sidecar = "../" + filepath.Base(k.path) + "/s"
			}
			within(t, func() {
				if v, ok := ReadSidecar(k.dir, sidecar); ok {
					t.Errorf("ReadSidecar = %q, want no value", v)
				}
			})
		})
	}
}

func listen(t *testing.T, path string) {
	t.Helper()
	testfs.Socket(t, path)
}

func mknodNull(t *testing.T, path string) {
	t.Helper()
	if err := testfs.MknodNull(path); err != nil {
		t.Skipf("mknod needs privilege here: %v", err)
	}
}

func TestReadSidecarBadArguments(t *testing.T) {
	k := newKeyDir(t)
	k.write(t, "s", "3")
	for _, name := range []string{"", ".", "..", "a/s", "/s", "s\x00"} {
		if v, ok := ReadSidecar(k.dir, name); ok {
			t.Errorf("name %q read %q, want no value", name, v)
		}
	}
	if v, ok := ReadSidecar(nil, "s"); ok {
		t.Errorf("nil dir read %q", v)
	}
	// A descriptor that is not a directory: openat fails with ENOTDIR.
	f, err := os.Open(filepath.Join(k.path, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if v, ok := ReadSidecar(f, "s"); ok {
		t.Errorf("file as dir read %q", v)
	}
	closed := newKeyDir(t)
	closed.write(t, "s", "3")
	closed.dir.Close()
	if v, ok := ReadSidecar(closed.dir, "s"); ok {
		t.Errorf("closed dir read %q", v)
	}
	// Sanity: the same dir and name do read when nothing is wrong, so the
	// misses above are the arguments' doing.
	if v, ok := ReadSidecar(k.dir, "s"); !ok || v != "3" {
		t.Fatalf("control read = %q, %v", v, ok)
	}
}

func TestReadVenue(t *testing.T) {
	present := func(v string) gates.Stamp { return gates.Stamp{State: gates.StampPresent, Value: v} }
	unreadable := gates.Stamp{State: gates.StampUnreadable}
	cases := []struct {
		name  string
		setup func(*testing.T, keyDir)
		want  gates.Stamp
	}{
		{"absent", func(*testing.T, keyDir) {}, gates.Stamp{State: gates.StampAbsent}},
		{"local with newline", func(t *testing.T, k keyDir) { k.write(t, VenueName, "local\n") }, present("local")},
		{"podman", func(t *testing.T, k keyDir) { k.write(t, VenueName, "podman") }, present("podman")},
		{"pending sentinel", func(t *testing.T, k keyDir) { k.write(t, VenueName, PendingVenue) }, present(PendingVenue)},
		{"whitespace only", func(t *testing.T, k keyDir) { k.write(t, VenueName, "\n") }, present("")},
		// legacy 41: exists but cannot be read.
		{"dangling link", func(t *testing.T, k keyDir) { k.link(t, VenueName, "nowhere") }, unreadable},
		{"link to a file saying local", func(t *testing.T, k keyDir) { k.link(t, VenueName, outside(t, "local")) }, unreadable},
		{"empty", func(t *testing.T, k keyDir) { k.write(t, VenueName, "") }, unreadable},
		{"oversized", func(t *testing.T, k keyDir) { k.write(t, VenueName, "local"+strings.Repeat(" ", 5000)) }, unreadable},
		{"directory", func(t *testing.T, k keyDir) { os.Mkdir(filepath.Join(k.path, VenueName), 0o700) }, unreadable},
		{"FIFO", func(t *testing.T, k keyDir) { k.fifo(t, VenueName) }, unreadable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKeyDir(t)
			c.setup(t, k)
			within(t, func() {
				if got := ReadVenue(k.dir); got != c.want {
					t.Errorf("ReadVenue = %+v, want %+v", got, c.want)
				}
			})
		})
	}
}

// legacy 48: a failure that is not absence fails closed, never reading as
// local. A descriptor that is not a directory stands in for the EIO the
// legacy test injected: its openat fails with ENOTDIR.
func TestReadVenueErrorIsNotAbsence(t *testing.T) {
	k := newKeyDir(t)
	k.write(t, "file", "x")
	f, err := os.Open(filepath.Join(k.path, "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := ReadVenue(f); got.State != gates.StampUnreadable {
		t.Errorf("ENOTDIR: ReadVenue = %+v, want unreadable", got)
	}
	k.dir.Close()
	if got := ReadVenue(k.dir); got.State != gates.StampUnreadable {
		t.Errorf("closed dir: ReadVenue = %+v, want unreadable", got)
	}
}

func TestReadPiVersion(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*testing.T, keyDir)
		want  gates.Stamp
	}{
		{"absent", func(*testing.T, keyDir) {}, gates.Stamp{State: gates.StampAbsent}},
		{"stamped", func(t *testing.T, k keyDir) { k.write(t, PiVersionName, "0.80.7") }, gates.Stamp{State: gates.StampPresent, Value: "0.80.7"}},
		// legacy 57: the writer stamps an empty file for an unknown pi.
		{"empty (unknown pi)", func(t *testing.T, k keyDir) { k.write(t, PiVersionName, "") }, gates.Stamp{State: gates.StampUnreadable}},
		{"whitespace only", func(t *testing.T, k keyDir) { k.write(t, PiVersionName, " ") }, gates.Stamp{State: gates.StampPresent}},
		// legacy 56: a planted link cannot decide the gate.
		{"link to a file saying 0.80.7", func(t *testing.T, k keyDir) { k.link(t, PiVersionName, outside(t, "0.80.7")) }, gates.Stamp{State: gates.StampUnreadable}},
		{"dangling link", func(t *testing.T, k keyDir) { k.link(t, PiVersionName, "x") }, gates.Stamp{State: gates.StampUnreadable}},
		{"directory", func(t *testing.T, k keyDir) { os.Mkdir(filepath.Join(k.path, PiVersionName), 0o700) }, gates.Stamp{State: gates.StampUnreadable}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKeyDir(t)
			c.setup(t, k)
			if got := ReadPiVersion(k.dir); got != c.want {
				t.Errorf("ReadPiVersion = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestReadResumeChain(t *testing.T) {
	cases := map[string]uint64{
		" 3 ": 3, "3\n": 3, "\ufeff3": 3, "40": 40,
		"007": 0, "": 0, "   ": 0, "abc": 0, "-4": 0, "3.5": 0, "3 4": 0,
		"3" + strings.Repeat(" ", 5000): 0,
	}
	for content, want := range cases {
		k := newKeyDir(t)
		k.write(t, ResumeChainName, content)
		if got := ReadResumeChain(k.dir); got != want {
			t.Errorf("resume-chain %q: ReadResumeChain = %d, want %d", content, got, want)
		}
	}
	k := newKeyDir(t)
	if got := ReadResumeChain(k.dir); got != 0 {
		t.Errorf("absent: %d", got)
	}
	k.link(t, ResumeChainName, outside(t, "99"))
	if got := ReadResumeChain(k.dir); got != 0 {
		t.Errorf("link to 99: %d", got)
	}
}

func TestReadContext(t *testing.T) {
	cases := map[string]*gates.Context{
		"12345 200000\n": {Tokens: 12345, Window: 200000},
		"  160000 200000 Anthropic/Claude-Sonnet-4  ": {Tokens: 160000, Window: 200000, Model: "Anthropic/Claude-Sonnet-4"},
		"1 2 m extra": {Tokens: 1, Window: 2, Model: "m"},
		"":            nil, "5": nil, "5 0": nil, "-5 10": nil, "1.5 2": nil, "1 2x": nil,
		"1 2" + strings.Repeat(" ", 5000): nil,
	}
	for content, want := range cases {
		k := newKeyDir(t)
		k.write(t, ContextName, content)
		got := ReadContext(k.dir)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("context %.20q: ReadContext = %+v, want %+v", content, got, want)
		}
	}
	k := newKeyDir(t)
	k.link(t, ContextName, outside(t, "199999 200000"))
	if got := ReadContext(k.dir); got != nil {
		t.Errorf("link: ReadContext = %+v, want nil", got)
	}
}

// observe reads a key dir's sidecars the way the store's legacy fallback
// does, onto an otherwise resumable observation.
func observe(dir *os.File) gates.Observation {
	return gates.Observation{
		Transcript:  gates.Transcript{Exists: true, Regular: true, Size: 100, ModTime: time.Now()},
		Venue:       ReadVenue(dir),
		PiVersion:   ReadPiVersion(dir),
		ResumeChain: ReadResumeChain(dir),
		Context:     ReadContext(dir),
		Header:      gates.Header{IsSession: true, TimestampOK: true, Timestamp: time.Now()},
	}
}

// TestLegacyVerdicts ports the reader half of the legacy suite: the odd
// files it planted, read here and judged by the ladder, give the legacy
// verdicts.
func TestLegacyVerdicts(t *testing.T) {
	bounds := gates.Bounds{MaxResumeChain: 3, MaxContextPct: 80}
	job := gates.Job{PiVersion: "0.80.7", Venue: "local", Model: "anthropic/claude-sonnet-4"}
	stamped := func(t *testing.T, k keyDir) { k.write(t, PiVersionName, "0.80.7") }
	cases := []struct {
		name  string
		setup func(*testing.T, keyDir)
		want  gates.Reason
	}{
		{"legacy 41: local with newline resumes", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, VenueName, "local\n") }, gates.Resumed},
		{"legacy 38: unstamped is local", stamped, gates.Resumed},
		{"legacy 41: dangling venue link", func(t *testing.T, k keyDir) { stamped(t, k); k.link(t, VenueName, "x") }, gates.VenueChanged},
		{"legacy 41: venue link to local", func(t *testing.T, k keyDir) { stamped(t, k); k.link(t, VenueName, outside(t, "local")) }, gates.VenueChanged},
		{"legacy 41: empty venue", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, VenueName, "") }, gates.VenueChanged},
		{"legacy 47: pending venue", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, VenueName, PendingVenue) }, gates.VenueChanged},
		{"legacy 56: pi-version link", func(t *testing.T, k keyDir) { k.link(t, PiVersionName, outside(t, "0.80.7")) }, gates.PiVersionChanged},
		{"legacy 57: empty pi-version", func(t *testing.T, k keyDir) { k.write(t, PiVersionName, "") }, gates.PiVersionChanged},
		{"legacy 23: chain link to 99", func(t *testing.T, k keyDir) { stamped(t, k); k.link(t, ResumeChainName, outside(t, "99")) }, gates.Resumed},
		{"legacy 23: context link to a full reading", func(t *testing.T, k keyDir) {
			stamped(t, k)
			k.link(t, ContextName, outside(t, "199999 200000"))
		}, gates.Resumed},
		{"legacy 24: oversized chain", func(t *testing.T, k keyDir) {
			stamped(t, k)
			k.write(t, ResumeChainName, strings.Repeat("9", 5000))
		}, gates.Resumed},
		{"legacy 24: oversized context", func(t *testing.T, k keyDir) {
			stamped(t, k)
			k.write(t, ContextName, "199999 200000"+strings.Repeat(" ", 5000))
		}, gates.Resumed},
		{"issue 4: chain \" 3 \" is 3", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, ResumeChainName, " 3 ") }, gates.ResumeChainTooLong},
		{"issue 4: chain 007 is 0", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, ResumeChainName, "007") }, gates.Resumed},
		{"legacy 26: chain -4 is 0", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, ResumeChainName, "-4") }, gates.Resumed},
		{"legacy 29: 160000 of 200000", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, ContextName, "160000 200000") }, gates.ContextTooFull},
		{"legacy 30: window 0", func(t *testing.T, k keyDir) { stamped(t, k); k.write(t, ContextName, "160000 0") }, gates.Resumed},
		// issue 4: the stamp is compared as written, so a hand-edited
		// uppercase stamp is another model's reading and is ignored.
		{"issue 4: stamp compared as written", func(t *testing.T, k keyDir) {
			stamped(t, k)
			k.write(t, ContextName, "199999 200000 Anthropic/Claude-Sonnet-4")
		}, gates.Resumed},
		{"legacy 33: same-model stamp applies", func(t *testing.T, k keyDir) {
			stamped(t, k)
			k.write(t, ContextName, "199999 200000 anthropic/claude-sonnet-4")
		}, gates.ContextTooFull},
		{"FIFO at every sidecar", func(t *testing.T, k keyDir) {
			for _, n := range []string{VenueName, PiVersionName, ResumeChainName, ContextName} {
				k.fifo(t, n)
			}
		}, gates.VenueChanged},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKeyDir(t)
			c.setup(t, k)
			var v gates.Verdict
			within(t, func() { v = gates.Evaluate(observe(k.dir), bounds, job, time.Now()) })
			if v.Reason != c.want {
				t.Fatalf("got %s, want %s", v.Reason, c.want)
			}
		})
	}
}

// TestReadersDoNotWrite: reading leaves every byte, name and mtime as it
// was (dump and check rely on it).
func TestReadersDoNotWrite(t *testing.T) {
	k := newKeyDir(t)
	k.write(t, VenueName, "local\n")
	k.write(t, PiVersionName, "")
	k.link(t, ResumeChainName, outside(t, "5"))
	k.fifo(t, ContextName)
	old := time.Unix(1e9, 0)
	for _, n := range []string{VenueName, PiVersionName} {
		os.Chtimes(filepath.Join(k.path, n), old, old)
	}
	before := snapshot(t, k.path)
	within(t, func() { observe(k.dir) })
	if after := snapshot(t, k.path); after != before {
		t.Errorf("key dir changed:\n%s\n--\n%s", before, after)
	}
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sb.WriteString(e.Name() + " " + fi.Mode().String() + " " + fi.ModTime().String())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			sb.WriteString(" " + string(b))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// The fstat rule (only a regular file is read) and the capped read (a file
// grown past the cap after its fstat is refused) are package fsat's:
// TestReadSmallFileKinds and TestReadCapped there.

// failReads fails the sidecar reads from now on as errs says (1: the
// first read; a read not named is untouched), until the test ends.
func failReads(t *testing.T, errs map[int]error) {
	n := 0
	faults.Set(func(p faults.Point) error {
		if p != faults.LegacySidecarRead {
			return nil
		}
		n++
		return errs[n]
	})
	t.Cleanup(func() { faults.Set(nil) })
}

// keyWithEverySidecar is a key dir whose four sidecars all hold values.
func keyWithEverySidecar(t *testing.T) keyDir {
	k := newKeyDir(t)
	k.write(t, VenueName, "local")
	k.write(t, PiVersionName, "0.80.7")
	k.write(t, ResumeChainName, "2")
	k.write(t, ContextName, "1000 200000 a/b")
	return k
}

// A sidecar read that failed on a file that is there (EIO, EACCES) is
// read as the legacy reader read it, no value, and Observe names each
// such failure in NotRead, in reading order (the store gives the cold
// start no base by it, check names each, migrate fails the key on the
// first); its stamp says it was not read. Observe fails for want
// of the process's own resources alone: each of EMFILE, ENFILE, ENOMEM
// and ENOBUFS, whichever sidecar it struck.
func TestObserveNamesEachSidecarNotRead(t *testing.T) {
	order := []string{VenueName, PiVersionName, ResumeChainName, ContextName} // Observe's order
	for nth := 1; nth <= 4; nth++ {
		for _, errno := range []syscall.Errno{syscall.EIO, syscall.EACCES} {
			t.Run(order[nth-1]+" "+errno.Error(), func(t *testing.T) {
				k := keyWithEverySidecar(t)
				failReads(t, map[int]error{nth: errno})
				o, err := Observe(k.dir)
				if err != nil || len(o.NotRead) != 1 || !errors.Is(o.NotRead[0], errno) || !strings.Contains(o.NotRead[0].Error(), order[nth-1]) {
					t.Fatalf("Observe = %+v, %v; want no error and NotRead %v", o, err, errno)
				}
				notRead := map[string]bool{order[nth-1]: true}
				unread := gates.Stamp{State: gates.StampUnreadable, NotRead: true}
				if want := map[bool]gates.Stamp{false: {State: gates.StampPresent, Value: "local"}, true: unread}[notRead[VenueName]]; o.Venue != want {
					t.Errorf("Venue = %+v, want %+v", o.Venue, want)
				}
				if want := map[bool]gates.Stamp{false: {State: gates.StampPresent, Value: "0.80.7"}, true: unread}[notRead[PiVersionName]]; o.PiVersion != want {
					t.Errorf("PiVersion = %+v, want %+v", o.PiVersion, want)
				}
				if want := map[bool]uint64{false: 2}[notRead[ResumeChainName]]; o.ResumeChain != want {
					t.Errorf("ResumeChain = %d, want %d", o.ResumeChain, want)
				}
				if (o.Context == nil) != notRead[ContextName] {
					t.Errorf("Context = %+v, not read: %v", o.Context, notRead[ContextName])
				}
			})
		}
	}
	t.Run("two failures", func(t *testing.T) {
		k := keyWithEverySidecar(t)
		failReads(t, map[int]error{2: syscall.EIO, 3: syscall.EACCES})
		o, err := Observe(k.dir)
		if err != nil || len(o.NotRead) != 2 || !errors.Is(o.NotRead[0], syscall.EIO) || !strings.Contains(o.NotRead[0].Error(), PiVersionName) ||
			!errors.Is(o.NotRead[1], syscall.EACCES) || !strings.Contains(o.NotRead[1].Error(), ResumeChainName) {
			t.Fatalf("Observe = %+v, %v; want NotRead both failures in reading order, pi-version's EIO then resume-chain's EACCES", o, err)
		}
	})
	for nth := 1; nth <= 4; nth++ {
		for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.ENOBUFS} {
			k := keyWithEverySidecar(t)
			failReads(t, map[int]error{nth: errno})
			if o, err := Observe(k.dir); !errors.Is(err, errno) {
				t.Errorf("Observe with %s's read failing %v = %+v, %v; want that error", order[nth-1], errno, o, err)
			}
			faults.Set(nil)
		}
	}
}

// What has no value by its shape, or no entry, was read: Observe's
// NotRead stays nil, as for a key whose sidecars all read.
func TestObserveNamesNoFailureForWhatWasRead(t *testing.T) {
	setups := map[string]func(t *testing.T, k keyDir){
		"every sidecar": func(t *testing.T, k keyDir) {
			for n, v := range map[string]string{VenueName: "local", PiVersionName: "0.80.7", ResumeChainName: "2", ContextName: "1 2"} {
				k.write(t, n, v)
			}
		},
		"none": func(t *testing.T, k keyDir) {},
		"links": func(t *testing.T, k keyDir) {
			for _, n := range []string{VenueName, PiVersionName, ResumeChainName, ContextName} {
				k.link(t, n, outside(t, "3"))
			}
		},
		"FIFOs": func(t *testing.T, k keyDir) {
			for _, n := range []string{VenueName, PiVersionName, ResumeChainName, ContextName} {
				k.fifo(t, n)
			}
		},
		"oversized and empty": func(t *testing.T, k keyDir) {
			k.write(t, VenueName, strings.Repeat("x", 5000))
			k.write(t, PiVersionName, "")
			k.write(t, ResumeChainName, strings.Repeat("9", 5000))
			os.Mkdir(filepath.Join(k.path, ContextName), 0o700)
		},
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			k := newKeyDir(t)
			setup(t, k)
			within(t, func() {
				o, err := Observe(k.dir)
				if err != nil || o.NotRead != nil || o.Venue.NotRead || o.PiVersion.NotRead {
					t.Errorf("Observe = %+v, %v; want every sidecar read", o, err)
				}
				if _, err := ObserveVenue(k.dir); err != nil {
					t.Errorf("ObserveVenue = %v, want no error", err)
				}
			})
		})
	}
}

// ObserveVenue, the re-check after a copy, fails on any venue read that
// failed on the file, where ReadVenue reads it as unreadable.
func TestObserveVenueFailsOnAReadThatFailed(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.EACCES, syscall.EMFILE} {
		k := keyWithEverySidecar(t)
		failReads(t, map[int]error{1: errno})
		if st, err := ObserveVenue(k.dir); !errors.Is(err, errno) || st.State != gates.StampUnreadable {
			t.Errorf("ObserveVenue with its read failing %v = %+v, %v; want unreadable and the error", errno, st, err)
		}
		faults.Set(nil)
	}
}
