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

	"sessdb/internal/durable"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
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

	var v Values
	testfs.Starved(t, func() { v, _, err = readLegacy(k) })
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("the legacy values read with no descriptor = %s, %v; want EMFILE", fmtValues(v), err)
	}
	v, _, err = readLegacy(k)
	if err != nil || v.Venue == nil || *v.Venue != "local" || v.ResumeChain == nil || *v.ResumeChain != 3 {
		t.Fatalf("the legacy values = %s, %v", fmtValues(v), err)
	}
}

// starvedAfterSync is the disk, but that once a temp is fsynced it leaves
// the process no descriptor beyond the temp's own (RLIMIT_NOFILE at the
// temp's number), until restore: the read-back that follows its close
// has none.
type starvedAfterSync struct {
	durable.Disk
	t       *testing.T
	old     syscall.Rlimit
	lowest  uint64 // the limit: the temp's descriptor, the lowest free one once it is closed
	lowered bool
}

func (d *starvedAfterSync) SyncFile(f *os.File) error {
	if err := d.Disk.SyncFile(f); err != nil {
		return err
	}
	if !d.lowered {
		must(d.t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &d.old))
		low := d.old
		d.lowest = uint64(f.Fd())
		low.Cur = d.lowest
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
			d.t.Skipf("setrlimit: %v", err)
		}
		d.lowered = true
	}
	return nil
}

// restore reports whether the starvation held (testfs.FreedBelow).
func (d *starvedAfterSync) restore() (held bool) {
	held = true
	if d.lowered {
		held = !testfs.FreedBelow(d.lowest, 0)
		must(d.t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &d.old))
		d.lowered = false
	}
	return held
}

// The read-back of a legacy file just written that fails for want of a
// descriptor is that read's error. It was read as the legacy reader reads
// any failure, no value, and the key failed with `"local" reads back as
// "no value": the legacy reader would not read it back the same`, which
// says the value cannot be written in the legacy format at all.
func TestLegacyReadBackWithoutADescriptorIsTheReadsError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "0123456789abcdef0123456789abcdef")
	must(t, os.Mkdir(dir, 0o700))
	kd, err := fsat.OpenDir(dir)
	must(t, err)
	defer kd.Close()
	local := "local"
	files := []legacyFile{{name: "venue", content: &local, means: func(v string, ok bool) bool { return ok && v == local }}}
	for try := 1; ; try++ {
		disk := &starvedAfterSync{t: t}
		t.Cleanup(func() { disk.restore() })
		err = writeLegacy(disk, kd, files, nil)
		if disk.restore() || try == 5 {
			break
		}
		t.Logf("try %d: a descriptor below the limit was freed meanwhile; the write runs again", try)
	}
	if !errors.Is(err, syscall.EMFILE) || errors.Is(err, ErrNotLegacy) {
		t.Fatalf("writeLegacy with no descriptor for the read-back: %v; want EMFILE, not ErrNotLegacy", err)
	}
	must(t, writeLegacy(durable.Disk{}, kd, files, nil))
	if b, err := os.ReadFile(filepath.Join(dir, "venue")); err != nil || string(b) != local {
		t.Fatalf("venue = %q, %v", b, err)
	}
}
