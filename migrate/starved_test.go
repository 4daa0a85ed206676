// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the promise is the same there, and tested on these two.

//go:build !freebsd

package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sessdb/internal/fsat"
)

// A legacy sidecar not read for want of a descriptor (EMFILE) says
// nothing about the key: migrating it fails the key (named, exit 1, the
// next run finishes it). It was read as the legacy reader reads any
// failure, no value: a venue that says local migrated as "(pending)",
// which keeps the key cold, and its legacy files then removed.
func TestLegacySidecarNotReadForWantOfADescriptorFailsTheKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "0123456789abcdef0123456789abcdef")
	must(t, os.Mkdir(dir, 0o700))
	for name, v := range map[string]string{"current.jsonl": "{}\n", "venue": "local", "pi-version": "0.58.3", "resume-chain": "3"} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600))
	}
	kd, err := fsat.OpenDir(dir)
	must(t, err)
	defer kd.Close()
	k, err := scanKey(kd, testNow)
	must(t, err)

	f, err := os.Open(os.DevNull)
	must(t, err)
	lowest := uint64(f.Fd())
	f.Close()
	var old syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	low := old
	low.Cur = lowest // no descriptor more
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	v, _, err := readLegacy(k)
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old))
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("the legacy values read with no descriptor = %s, %v; want EMFILE", fmtValues(v), err)
	}
	v, _, err = readLegacy(k)
	if err != nil || v.Venue == nil || *v.Venue != "local" || v.ResumeChain == nil || *v.ResumeChain != 3 {
		t.Fatalf("the legacy values = %s, %v", fmtValues(v), err)
	}
}
