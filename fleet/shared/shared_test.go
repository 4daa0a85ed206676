package shared

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

const key = "0123456789abcdef0123456789abcdef"

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func write(t *testing.T, dir string, data []byte) string {
	t.Helper()
	name, size, crc, err := Write(context.Background(), dir, key, 7, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(data)) || crc != crc32.Checksum(data, castagnoli) {
		t.Fatalf("Write = size %d crc %08x, want %d %08x", size, crc, len(data), crc32.Checksum(data, castagnoli))
	}
	return name
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestWriteThenOpen(t *testing.T) {
	for _, path := range []struct {
		name string
		fn   func(durable.FS, *os.File, string, string) error
	}{{"renameat2", renameNoReplace}, {"link and unlink", linkUnlink}} {
		t.Run(path.name, func(t *testing.T) {
			saved := noReplace
			noReplace = path.fn
			defer func() { noReplace = saved }()
			dir := t.TempDir()
			data := randomBytes(t, 100_000)
			name := write(t, dir, data)
			k, gen, ok := ParseName(name)
			if !ok || k != key || gen != 7 {
				t.Fatalf("name %q parses as %q %d %v", name, k, gen, ok)
			}
			f, err := Open(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, _ := io.ReadAll(f)
			if !bytes.Equal(got, data) {
				t.Fatal("read back different bytes")
			}
			if ents := entries(t, filepath.Join(dir, key)); len(ents) != 1 {
				t.Fatalf("key dir holds %v, want the transcript alone", ents)
			}
			for p, want := range map[string]fs.FileMode{filepath.Join(dir, key): 0o700 | fs.ModeDir, filepath.Join(dir, name): 0o600} {
				if st, err := os.Stat(p); err != nil || st.Mode() != want {
					t.Fatalf("%s: mode %v (%v), want %v", p, st.Mode(), err, want)
				}
			}
		})
	}
}

func TestWriteNamesAreNew(t *testing.T) {
	dir := t.TempDir()
	a, b := write(t, dir, []byte("a\n")), write(t, dir, []byte("b\n"))
	if a == b {
		t.Fatalf("two writes of one generation share the name %q", a)
	}
}

// Neither way of naming the file replaces a name that exists: the file
// there is untouched and the temp stays for the caller to remove.
func TestNoReplaceNeverOverwrites(t *testing.T) {
	for _, path := range []struct {
		name string
		fn   func(durable.FS, *os.File, string, string) error
	}{{"renameat2", renameNoReplace}, {"link and unlink", linkUnlink}} {
		t.Run(path.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "old"), []byte("old"), 0o600)
			os.WriteFile(filepath.Join(dir, "new"), []byte("new"), 0o600)
			d, _ := os.Open(dir)
			defer d.Close()
			if err := path.fn(durable.Disk{}, d, "new", "old"); !errors.Is(err, ErrExists) {
				t.Fatalf("err = %v, want ErrExists", err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "old")); string(b) != "old" {
				t.Fatalf("the existing file now holds %q", b)
			}
		})
	}
}

// An NFS client that retransmits a LINK whose reply was lost gets EEXIST
// for its own link: that is success.
func TestLinkUnlinkTakesItsOwnLink(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tmp"), []byte("x"), 0o600)
	os.Link(filepath.Join(dir, "tmp"), filepath.Join(dir, "final"))
	d, _ := os.Open(dir)
	defer d.Close()
	if err := linkUnlink(durable.Disk{}, d, "tmp", "final"); err != nil {
		t.Fatal(err)
	}
	if ents := entries(t, dir); len(ents) != 1 || ents[0] != "final" {
		t.Fatalf("dir holds %v, want final alone", ents)
	}
}

func TestWriteLeavesNothingOnError(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := Write(ctx, dir, key, 1, bytes.NewReader([]byte("x"))); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Write = %v", err)
	}
	boom := errors.New("boom")
	src := io.MultiReader(bytes.NewReader(randomBytes(t, 70_000)), iotestErr{boom})
	if _, _, _, err := Write(context.Background(), dir, key, 1, src); !errors.Is(err, boom) {
		t.Fatalf("Write of a failing reader = %v", err)
	}
	if ents := entries(t, filepath.Join(dir, key)); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

var badNames = []string{
	"", "/etc/passwd", "../x", key, key + "/", "../" + key + "/0000000000000001-0123456789abcdef.jsonl",
	key + "/../" + key + "/0000000000000001-0123456789abcdef.jsonl",
	key + "/0000000000000001-0123456789abcdef.jsonl/", key + "/0000000000000001-0123456789ABCDEF.jsonl",
	key + "/000000000000001-0123456789abcdef0.jsonl", key + "/0000000000000001_0123456789abcdef.jsonl",
	key + "/0000000000000001-0123456789abcdef.json", key + "//0000000000000001-0123456789abcdef.jsonl",
	strings.ToUpper(key) + "/0000000000000001-0123456789abcdef.jsonl", key + "/.tmp-0123456789abcde",
	key + "/0000000000000001-0123456789abcdef.jsonl\x00", key + "/sub/0000000000000001-0123456789abcdef.jsonl",
}

func TestNamesAreValidatedBeforeAnyPath(t *testing.T) {
	dir := t.TempDir()
	for _, n := range append(badNames, key+"/.tmp-0123456789abcdef") {
		if f, err := Open(dir, n); !errors.Is(err, ErrInvalidName) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%q) = %v, want ErrInvalidName", n, err)
		}
	}
	for _, n := range badNames {
		if n == key+"/" {
			continue // for Remove, the key's directory
		}
		if err := Remove(dir, n); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Remove(%q) = %v, want ErrInvalidName", n, err)
		}
	}
	for _, k := range []string{"", "../x", key + "/x", strings.ToUpper(key)} {
		if _, _, _, err := Write(context.Background(), dir, k, 1, strings.NewReader("x")); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Write key %q = %v, want ErrInvalidKey", k, err)
		}
	}
	if ents := entries(t, dir); len(ents) != 0 {
		t.Fatalf("invalid names made %v", ents)
	}
}

func TestOpenNeverFollows(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	name := key + "/0000000000000001-0123456789abcdef.jsonl"
	os.Mkdir(filepath.Join(dir, key), 0o700)
	p := filepath.Join(dir, name)

	os.Symlink(secret, p)
	if _, err := Open(dir, name); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open of a link = %v, want ErrNotRegular", err)
	}
	// Removing the name removes the link, never its target.
	if err := Remove(dir, name); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Fatalf("the link's target was touched: %q, %v", b, err)
	}
	if _, err := Open(dir, name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a removed name = %v, want fs.ErrNotExist", err)
	}

	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, name); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open of a FIFO = %v, want ErrNotRegular", err)
	}
	os.Remove(p)
	os.Mkdir(p, 0o700)
	if _, err := Open(dir, name); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open of a directory = %v, want ErrNotRegular", err)
	}
}

func TestKeyDirLinkNeverFollowed(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.Symlink(outside, filepath.Join(dir, key))
	if _, _, _, err := Write(context.Background(), dir, key, 1, strings.NewReader("x\n")); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Write through a linked key dir = %v, want ErrNotRegular", err)
	}
	name := key + "/0000000000000001-0123456789abcdef.jsonl"
	os.WriteFile(filepath.Join(outside, name[len(key)+1:]), []byte("outside"), 0o600)
	if _, err := Open(dir, name); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open through a linked key dir = %v, want ErrNotRegular", err)
	}
	if err := Remove(dir, name); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Remove through a linked key dir = %v, want ErrNotRegular", err)
	}
	if ents := entries(t, outside); len(ents) != 1 {
		t.Fatalf("the link's target dir now holds %v", ents)
	}
}

// listOrphans is ListOrphans with its Listing's fields apart, as the
// tests written before Listing read them.
func listOrphans(ctx context.Context, dir string, referenced func(key, name string, mtime time.Time) bool, olderThan time.Time) (names, markTemps []string, unreadable map[string]error, err error) {
	l, err := ListOrphans(ctx, dir, referenced, olderThan)
	return l.Orphans, l.MarkTemps, l.Unreadable, err
}

func TestListOrphans(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	cutoff := time.Now().Add(-time.Minute)
	mk := func(name string, at time.Time) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, at, at)
		return name
	}
	kept := mk(key+"/0000000000000002-aaaaaaaaaaaaaaaa.jsonl", old)
	orphan := mk(key+"/0000000000000001-bbbbbbbbbbbbbbbb.jsonl", old)
	mk(key+"/0000000000000003-cccccccccccccccc.jsonl", time.Now()) // young: in its grace period
	deadTmp := mk(key+"/.tmp-dddddddddddddddd", old)
	mk(key+"/.tmp-eeeeeeeeeeeeeeee", time.Now())
	mk(key+"/notes.txt", old)
	other := "fedcba9876543210fedcba9876543210"
	orphan2 := mk(other+"/0000000000000001-ffffffffffffffff.jsonl", old)
	mk("not-a-key/0000000000000001-ffffffffffffffff.jsonl", old)
	// A link named like a transcript, and a key dir that is a link.
	link := filepath.Join(dir, key, "0000000000000009-9999999999999999.jsonl")
	os.Symlink("/etc/passwd", link)
	unix.Lutimes(link, []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())})
	os.Symlink(filepath.Join(dir, other), filepath.Join(dir, "abcdefabcdefabcdefabcdefabcdefab"))
	// Key dirs that hold nothing: one old, one just made.
	emptyDir := "0123401234012340123401234012340a/"
	os.Mkdir(filepath.Join(dir, emptyDir), 0o700)
	os.Chtimes(filepath.Join(dir, emptyDir), old, old)
	os.Mkdir(filepath.Join(dir, "0123401234012340123401234012340b"), 0o700)

	// Every candidate is asked about, temps included, with its mtime.
	seen := map[string]time.Time{}
	referenced := func(k, name string, mtime time.Time) bool { seen[name] = mtime; return name == kept }
	got, _, unreadable, err := listOrphans(context.Background(), dir, referenced, cutoff)
	if err != nil || unreadable != nil {
		t.Fatal(unreadable, err)
	}
	for _, n := range []string{kept, orphan, deadTmp, orphan2, emptyDir} {
		if m, ok := seen[n]; !ok || m.Sub(old).Abs() > time.Millisecond {
			t.Errorf("referenced(%q): asked %v with mtime %v, want %v", n, ok, m, old)
		}
	}
	want := []string{emptyDir, deadTmp, orphan, orphan2}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ListOrphans =\n %v\nwant\n %v", got, want)
	}
	for _, n := range got {
		if err := Remove(dir, n); err != nil {
			t.Fatalf("Remove(%q): %v", n, err)
		}
	}
	if got, _, _, _ := listOrphans(context.Background(), dir, referenced, cutoff); len(got) != 0 {
		t.Fatalf("after removal: %v", got)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Fatal("the link was removed")
	}
	if _, err := os.Lstat(filepath.Join(dir, emptyDir)); !os.IsNotExist(err) {
		t.Fatalf("the empty key dir is still there: %v", err)
	}
	// A key dir removed as empty is removed only while it is.
	if err := Remove(dir, key+"/"); !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		t.Fatalf("Remove of a key dir that holds files = %v, want ENOTEMPTY", err)
	}
}

// A reap may remove a key's empty directory between a first promotion's
// open of it and its create there: the directory is made again, and the
// write goes on (before: the promotion failed, ENOENT).
func TestWriteMakesAKeyDirRemovedUnderIt(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, key), 0o700); err != nil {
		t.Fatal(err)
	}
	defer func() { beforeCreate = func() error { return nil } }()
	removed := 0
	beforeCreate = func() error {
		if removed == 0 {
			removed++
			if err := Remove(dir, key+"/"); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	data := randomBytes(t, 1000)
	name := write(t, dir, data)
	if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v", err)
	}
}

// Over NFS a request whose reply was lost is sent again, and a server
// whose duplicate-request cache has forgotten it answers the retry as a
// new request: the step landed, and its reply is an error. A RENAME (a
// FUSE or other network filesystem that takes RENAME_NOREPLACE) then says
// ENOENT (the temp is gone) or EEXIST (the name is taken, by the file
// itself); link and unlink's REMOVE of the temp says ENOENT. The file is
// whole under its name: Write succeeds, and leaves neither the temp nor a
// file no record will name (before: Write failed, promote-failed, and
// the file stayed under its final name for reap).
func TestWriteWhoseRenameLandedButFailedIsWritten(t *testing.T) {
	landed := func(errno unix.Errno, viaLink bool) func(durable.FS, *os.File, string, string) error {
		return func(_ durable.FS, kd *os.File, from, to string) error {
			var err error
			if viaLink {
				if err = unix.Linkat(int(kd.Fd()), from, int(kd.Fd()), to, 0); err == nil {
					err = unix.Unlinkat(int(kd.Fd()), from, 0)
				}
			} else {
				err = unix.Renameat(int(kd.Fd()), from, int(kd.Fd()), to)
			}
			if err != nil {
				t.Fatal(err)
			}
			if viaLink {
				return &os.PathError{Op: "unlink", Path: from, Err: errno}
			}
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: errno}
		}
	}
	for name, fn := range map[string]func(durable.FS, *os.File, string, string) error{
		"rename, ENOENT":             landed(unix.ENOENT, false),
		"rename, EEXIST":             landed(unix.EEXIST, false),
		"unlink of the temp, ENOENT": landed(unix.ENOENT, true),
	} {
		t.Run(name, func(t *testing.T) {
			saved := noReplace
			noReplace = fn
			defer func() { noReplace = saved }()
			dir := t.TempDir()
			data := randomBytes(t, 10_000)
			got, size, crc, err := Write(context.Background(), dir, key, 3, bytes.NewReader(data))
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if size != int64(len(data)) || crc != crc32.Checksum(data, castagnoli) {
				t.Fatalf("Write = size %d crc %08x", size, crc)
			}
			if b, err := os.ReadFile(filepath.Join(dir, got)); err != nil || !bytes.Equal(b, data) {
				t.Fatalf("read back: %v", err)
			}
			if ents := entries(t, filepath.Join(dir, key)); len(ents) != 1 || key+"/"+ents[0] != got {
				t.Fatalf("key dir holds %v, want %s alone", ents, got)
			}
		})
	}
	// A name taken by another file is no landed rename: an error, the
	// other file untouched, and nothing of this write left.
	saved := noReplace
	defer func() { noReplace = saved }()
	dir := t.TempDir()
	var other string
	noReplace = func(_ durable.FS, kd *os.File, from, to string) error {
		other = to
		os.WriteFile(filepath.Join(kd.Name(), to), []byte("other"), 0o600)
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: ErrExists}
	}
	if _, _, _, err := Write(context.Background(), dir, key, 3, strings.NewReader("mine\n")); !errors.Is(err, ErrExists) {
		t.Fatalf("Write onto another's name = %v, want ErrExists", err)
	}
	if ents := entries(t, filepath.Join(dir, key)); len(ents) != 1 || ents[0] != other {
		t.Fatalf("key dir holds %v, want the other file alone", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, key, other)); string(b) != "other" {
		t.Fatalf("the other file now holds %q", b)
	}
}

// Over NFS, a create in a directory another host removed after this one
// opened it fails ESTALE (the server no longer knows the directory's
// handle), where a local disk says ENOENT: the directory is made again all
// the same, and the write goes on (before: the promotion failed, ESTALE).
func TestWriteMakesAKeyDirAnotherHostRemoved(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, key), 0o700); err != nil {
		t.Fatal(err)
	}
	defer func() { beforeCreate = func() error { return nil } }()
	removed := 0
	beforeCreate = func() error {
		if removed > 0 {
			return nil
		}
		removed++
		if err := Remove(dir, key+"/"); err != nil {
			t.Fatal(err)
		}
		return unix.ESTALE
	}
	data := randomBytes(t, 1000)
	name := write(t, dir, data)
	if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v", err)
	}
}

// A key's directory another host removed (a reaper or check --repair
// elsewhere sweeping an empty key dir) between this listing's open of it
// and its read is gone, ESTALE over NFS, where a local disk lists it
// empty: not an unreadable key, which reap reports as failed (exit 1).
func TestListOrphansTakesAKeyDirRemovedElsewhereAsGone(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	other := "fedcba9876543210fedcba9876543210"
	orphan := other + "/0000000000000001-ffffffffffffffff.jsonl"
	for _, p := range []string{key, other} {
		os.Mkdir(filepath.Join(dir, p), 0o700)
	}
	os.WriteFile(filepath.Join(dir, orphan), []byte("x"), 0o600)
	os.Chtimes(filepath.Join(dir, orphan), old, old)
	defer sharedfs.Use(listing{list: func(d *os.File) ([]string, error) {
		if filepath.Base(d.Name()) == key {
			os.Remove(d.Name())
			return nil, &os.PathError{Op: "open", Path: d.Name() + "/.", Err: unix.ESTALE}
		}
		return fsat.ReadDirNames(d)
	}})()
	got, _, unreadable, err := listOrphans(context.Background(), dir, func(string, string, time.Time) bool { return false }, time.Now().Add(-time.Minute))
	if err != nil || unreadable != nil || strings.Join(got, " ") != orphan {
		t.Fatalf("ListOrphans = %v, unreadable %v, %v; want %s alone", got, unreadable, err, orphan)
	}
}

// A write the filesystem cannot hold names the temp once, and its cause
// (before: "write T: write T: no space left on device"); nothing is left.
func TestWriteOnAFullDiskNamesTheTempOnce(t *testing.T) {
	dir := t.TempDir()
	unmount, err := testfs.SmallFS(dir, 16<<10)
	if err != nil {
		t.Skipf("no small filesystem here: %v", err)
	}
	defer unmount()
	_, _, _, err = Write(context.Background(), dir, key, 1, bytes.NewReader(randomBytes(t, 100_000)))
	if !errors.Is(err, unix.ENOSPC) || strings.Count(err.Error(), tmpPrefix) != 1 {
		t.Fatalf("Write on a full disk = %v; want ENOSPC, the temp named once", err)
	}
	if ents := entries(t, filepath.Join(dir, key)); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// A transcripts dir that goes stale under the listing (the export went
// away: every key dir's open or listing fails ESTALE, and so does the
// dir's own stat) stops it with an error naming the dir, where a key dir
// another host removed is gone. Before: every key was taken as gone, no
// orphans and no error, and a reap exited 0 having looked at nothing.
func TestListOrphansStopsWhenTheDirItselfGoesStale(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, key), 0o700)
	defer faults.Set(nil)
	defer sharedfs.Use(listing{list: func(d *os.File) ([]string, error) {
		if filepath.Base(d.Name()) != key {
			return fsat.ReadDirNames(d)
		}
		return nil, &os.PathError{Op: "open", Path: d.Name(), Err: unix.ESTALE}
	}})()
	faults.Set(func(p faults.Point) error {
		if p == faults.SharedDirStat {
			return unix.ESTALE
		}
		return nil
	})
	got, _, unreadable, err := listOrphans(context.Background(), dir, func(string, string, time.Time) bool { return false }, time.Now())
	if !errors.Is(err, ErrDirUnavailable) || !errors.Is(err, unix.ESTALE) || !strings.Contains(err.Error(), dir) || got != nil || unreadable != nil {
		t.Fatalf("ListOrphans = %v, unreadable %v, %v; want the dir named stale", got, unreadable, err)
	}
}

// A temp whose create landed but whose fstat right after it failed (over
// NFS a GETATTR can fail where the CREATE did not: ESTALE, EIO on a soft
// mount) is removed: nothing is left on error. Before: the temp stayed,
// for a reap an hour later.
func TestWriteWhoseTempsFstatFailsLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	defer func() { statTemp = fsat.Fstat }()
	statTemp = func(f *os.File) (unix.Stat_t, error) {
		return unix.Stat_t{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: unix.EIO}
	}
	_, _, _, err := Write(context.Background(), dir, key, 1, strings.NewReader("{}\n"))
	if !errors.Is(err, unix.EIO) {
		t.Fatalf("Write = %v; want the fstat's EIO", err)
	}
	if ents := entries(t, filepath.Join(dir, key)); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// Link and unlink whose link landed and whose unlink of the temp then
// failed (an NFS REMOVE answered EIO, the temp still there): the file is
// whole under its name, and the temp, a second name of the same inode, is
// removed, not left for reap as an orphan that doubles the file's space
// (mutation sweep: renamed's removal of the temp deleted, or its check
// negated, left both names; no test held it).
func TestWriteWhoseTempOutlivedItsLandedLinkRemovesIt(t *testing.T) {
	saved := noReplace
	defer func() { noReplace = saved }()
	noReplace = func(_ durable.FS, kd *os.File, from, to string) error {
		if err := unix.Linkat(int(kd.Fd()), from, int(kd.Fd()), to, 0); err != nil {
			t.Fatal(err)
		}
		return &os.PathError{Op: "unlink", Path: from, Err: unix.EIO}
	}
	dir := t.TempDir()
	data := randomBytes(t, 10_000)
	got, size, crc, err := Write(context.Background(), dir, key, 3, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if size != int64(len(data)) || crc != crc32.Checksum(data, castagnoli) {
		t.Fatalf("Write = size %d crc %08x", size, crc)
	}
	if b, err := os.ReadFile(filepath.Join(dir, got)); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("read back: %v", err)
	}
	if ents := entries(t, filepath.Join(dir, key)); len(ents) != 1 || key+"/"+ents[0] != got {
		t.Fatalf("key dir holds %v, want %s alone", ents, got)
	}
}

// The key directory's fsync after the rename failing (EIO): the name is
// not durable, so Write fails and removes the file, leaving no name a
// record could be made to hold and a power cut then take back (mutation
// sweep: the error's return dropped, Write returned the name of the file
// it had just removed, and a record naming it would name nothing; the
// removal deleted, the file stayed for reap; no test held either).
func TestWriteWhoseKeyDirFsyncFailsLeavesNothing(t *testing.T) {
	defer sharedfs.Use(failingSyncDir{fail: func(d *os.File) bool { return filepath.Base(d.Name()) == key }})()
	dir := t.TempDir()
	if name, _, _, err := Write(context.Background(), dir, key, 3, strings.NewReader("mine\n")); !errors.Is(err, unix.EIO) {
		t.Fatalf("Write = %q, %v; want EIO", name, err)
	}
	if ents := entries(t, filepath.Join(dir, key)); len(ents) != 0 {
		t.Fatalf("key dir holds %v, want nothing", ents)
	}
}

// The transcripts dir's fsync after a key's directory was made failing
// (EIO): the directory's name is not durable, so Write fails before any
// file is made in it (mutation sweep: the error's return dropped, the
// write went on into a directory a power cut could take back; no test
// held it).
func TestWriteWhoseNewKeyDirIsNotDurableFails(t *testing.T) {
	dir := t.TempDir()
	defer sharedfs.Use(failingSyncDir{fail: func(d *os.File) bool { return d.Name() == dir }})()
	if name, _, _, err := Write(context.Background(), dir, key, 3, strings.NewReader("mine\n")); !errors.Is(err, unix.EIO) {
		t.Fatalf("Write = %q, %v; want EIO", name, err)
	}
	if ents := entries(t, filepath.Join(dir, key)); len(ents) != 0 {
		t.Fatalf("key dir holds %v, want nothing", ents)
	}
}

// A Write whose create found its key directory removed (a reap between
// the open and the create) closes the descriptor of the removed directory
// before making it again: a worker that promotes for weeks must not
// collect one per race (mutation sweep: createTemp's close deleted, the
// descriptor leaked; no test held it).
func TestWriteMakingAKeyDirAgainClosesTheRemovedOne(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, key), 0o700); err != nil {
		t.Fatal(err)
	}
	defer func() { beforeCreate = func() error { return nil } }()
	removed := false
	beforeCreate = func() error {
		if !removed {
			removed = true
			if err := Remove(dir, key+"/"); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	write(t, dir, randomBytes(t, 1000))
	if !removed {
		t.Fatal("the key dir was never removed under the write")
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); strings.HasPrefix(target, filepath.Join(dir, key)) {
			t.Fatalf("descriptor %s still has %s open", fd.Name(), target)
		}
	}
}

// A name made at the temp's between Write's choice of it and its create
// (a hard link to another file: over NFS, another host's) fails the
// create, EEXIST: it is never opened, and the transcript never written
// into its target (mutation sweep: O_EXCL dropped from the create, the
// write went through the link into the victim; no test held it).
func TestWriteNeverOpensANameMadeAtItsTemp(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	want := []byte("the victim's own bytes\n")
	if err := os.WriteFile(victim, want, 0o600); err != nil {
		t.Fatal(err)
	}
	defer sharedfs.Use(createAfter{before: func(d *os.File, name string) {
		if err := os.Link(victim, filepath.Join(d.Name(), name)); err != nil {
			t.Fatal(err)
		}
	}})()
	_, _, _, err := Write(context.Background(), dir, key, 1, bytes.NewReader(randomBytes(t, 1000)))
	if got, rerr := os.ReadFile(victim); rerr != nil || !bytes.Equal(got, want) {
		t.Errorf("the victim holds %.40q… (%d bytes, %v), want %q", got, len(got), rerr, want)
	}
	if !errors.Is(err, unix.EEXIST) {
		t.Fatalf("Write = %v; want the create's EEXIST", err)
	}
}

// A key directory removed under every create (a reap each time) is made
// again once, not in a loop: the second ENOENT is Write's error
// (mutation sweep: the retry's bound changed or its condition made an
// `&&`, Write retried a third time or without end; no test held it).
func TestWriteMakesAKeyDirAgainOnlyOnce(t *testing.T) {
	dir := t.TempDir()
	defer func() { beforeCreate = func() error { return nil } }()
	creates := 0
	beforeCreate = func() error {
		if creates++; creates > 2 {
			t.Fatalf("create %d: the key dir is made again more than once", creates)
		}
		return Remove(dir, key+"/")
	}
	_, _, _, err := Write(context.Background(), dir, key, 1, strings.NewReader("{}\n"))
	if creates != 2 || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Write after %d creates = %v; want ENOENT after 2", creates, err)
	}
}

// The transcripts dir itself missing is fs.ErrNotExist for Open and
// Remove, as a missing name in it is (mutation sweep: the return of
// the dir's open error dropped, the nil descriptor's EBADF came out
// instead; no test held it).
func TestOpenAndRemoveInAMissingDirAreNotExist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	name := key + "/" + fileName(1, "0123456789abcdef")
	if f, err := Open(dir, name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open = %v, %v; want fs.ErrNotExist", f, err)
	}
	for _, n := range []string{name, key + "/"} {
		if err := Remove(dir, n); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Remove(%q) = %v; want fs.ErrNotExist", n, err)
		}
	}
}

// A key's directory that cannot be listed (EIO) is left out, in
// unreadable with its error, and every other key's orphans are found all
// the same; a cancelled context stops the listing with its error
// (mutation sweep: the unreadable map's making or its entry deleted, and
// the return of ctx's error dropped; no test held them).
func TestListOrphansReportsAnUnreadableKeyAndStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	const other = "fedcba9876543210fedcba9876543210"
	old := time.Now().Add(-time.Hour)
	var orphan string
	for _, k := range []string{key, other} {
		if err := os.Mkdir(filepath.Join(dir, k), 0o700); err != nil {
			t.Fatal(err)
		}
		orphan = k + "/" + fileName(1, "0123456789abcdef")
		if err := os.WriteFile(filepath.Join(dir, orphan), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, orphan), old, old); err != nil {
			t.Fatal(err)
		}
	}
	defer sharedfs.Use(listing{list: func(d *os.File) ([]string, error) {
		if filepath.Base(d.Name()) == key {
			return nil, &os.PathError{Op: "readdirent", Path: d.Name(), Err: unix.EIO}
		}
		return fsat.ReadDirNames(d)
	}})()
	none := func(string, string, time.Time) bool { return false }
	got, _, unreadable, err := listOrphans(context.Background(), dir, none, time.Now().Add(-time.Minute))
	if err != nil || strings.Join(got, " ") != orphan || len(unreadable) != 1 || !errors.Is(unreadable[key], unix.EIO) {
		t.Fatalf("ListOrphans = %v, unreadable %v, %v; want %s alone, %s unreadable (EIO)", got, unreadable, err, orphan, key)
	}
	noDescriptorUnder(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, _, unreadable, err := listOrphans(ctx, dir, none, time.Now().Add(-time.Minute)); !errors.Is(err, context.Canceled) || got != nil || unreadable != nil {
		t.Fatalf("ListOrphans, cancelled = %v, unreadable %v, %v; want context.Canceled alone", got, unreadable, err)
	}
}

// noDescriptorUnder fails t if the process holds a descriptor of anything
// under dir: a listing that leaks one per key dir runs a reaper out of
// descriptors (mutation sweep: ListOrphans's kd.Close() deleted on the
// listed and on the unreadable path; no test held them).
func noDescriptorUnder(t *testing.T, dir string) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); strings.HasPrefix(target, dir+"/") {
			t.Fatalf("descriptor %s still has %s open", fd.Name(), target)
		}
	}
}

// A key's directory removed between the listing of dir and its open (by
// another host's reap) is gone, and the keys after it are listed all the
// same; the same removal with dir itself gone stale stops the listing
// with ErrDirUnavailable, rather than taking every key for gone (mutation
// sweep: the check of dir after a key dir's open said gone negated, its
// return dropped, or made to return on a dir that is fine, which ended
// the listing there with no error; no test held them).
func TestListOrphansWithAKeyDirRemovedBeforeItsOpen(t *testing.T) {
	const gone, last = "1111111111111111aaaaaaaaaaaaaaaa", "2222222222222222aaaaaaaaaaaaaaaa"
	for _, stale := range []bool{false, true} {
		dir := t.TempDir()
		old := time.Now().Add(-time.Hour)
		var orphans []string
		keys := []string{key, gone, last}
		if stale {
			// The gone key is the last: no later key's open looks at dir.
			keys = keys[:2]
		}
		for _, k := range keys {
			if err := os.Mkdir(filepath.Join(dir, k), 0o700); err != nil {
				t.Fatal(err)
			}
			o := k + "/" + fileName(1, "0123456789abcdef")
			if err := os.WriteFile(filepath.Join(dir, o), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(filepath.Join(dir, o), old, old); err != nil {
				t.Fatal(err)
			}
			if k != gone {
				orphans = append(orphans, o)
			}
		}
		t.Cleanup(func() { faults.Set(nil) })
		// The first key's file is judged before the next key's dir is
		// opened: the removal lands there.
		referenced := func(k, name string, _ time.Time) bool {
			if k == key {
				if err := os.RemoveAll(filepath.Join(dir, gone)); err != nil {
					t.Fatal(err)
				}
				if stale {
					faults.Set(func(p faults.Point) error {
						if p == faults.SharedDirStat {
							return unix.ESTALE
						}
						return nil
					})
				}
			}
			return false
		}
		got, _, unreadable, err := listOrphans(context.Background(), dir, referenced, time.Now().Add(-time.Minute))
		faults.Set(nil)
		switch {
		case stale && (!errors.Is(err, ErrDirUnavailable) || got != nil || unreadable != nil):
			t.Fatalf("dir stale: ListOrphans = %v, unreadable %v, %v; want ErrDirUnavailable alone", got, unreadable, err)
		case !stale && (err != nil || unreadable != nil || strings.Join(got, " ") != strings.Join(orphans, " ")):
			t.Fatalf("ListOrphans = %v, unreadable %v, %v; want %v", got, unreadable, err, orphans)
		}
	}
}

// DirErrOr is ErrDirUnavailable (with the stat's cause) for a dir that is
// gone, and the error given, as it is, for one that is there; ListOrphans
// of a dir that is gone says so, never "no orphans" (mutation sweep:
// DirErrOr made nil, or its check dropped or inverted; no test held them).
func TestDirErrOrTellsTheDirFromTheError(t *testing.T) {
	dir := t.TempDir()
	eio := &os.PathError{Op: "open", Path: dir + "/x", Err: unix.EIO}
	if err := DirErrOr(dir, eio); err != eio {
		t.Errorf("DirErrOr(a dir that is there, EIO) = %v, want the EIO as it is", err)
	}
	gone := filepath.Join(dir, "gone")
	if err := DirErrOr(gone, eio); !errors.Is(err, ErrDirUnavailable) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DirErrOr(a dir that is gone, EIO) = %v, want ErrDirUnavailable, not exist", err)
	}
	if got, _, unreadable, err := listOrphans(context.Background(), gone, func(string, string, time.Time) bool { return false }, time.Now()); !errors.Is(err, ErrDirUnavailable) || got != nil || unreadable != nil {
		t.Errorf("ListOrphans of a dir that is gone = %v, unreadable %v, %v; want ErrDirUnavailable", got, unreadable, err)
	}
}

// The transcripts dir's own listing failing (EIO) with the dir there is
// that error, never "no orphans" (mutation sweep: the return of the
// listing's error dropped, ListOrphans found nothing and said nothing;
// the listing had no seam).
func TestListOrphansWhoseDirListingFailsSaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, key), 0o700); err != nil {
		t.Fatal(err)
	}
	defer sharedfs.Use(listing{list: func(d *os.File) ([]string, error) {
		if d.Name() == dir {
			return nil, &os.PathError{Op: "readdirent", Path: d.Name(), Err: unix.EIO}
		}
		return fsat.ReadDirNames(d)
	}})()
	got, _, unreadable, err := listOrphans(context.Background(), dir, func(string, string, time.Time) bool { return false }, time.Now())
	if !errors.Is(err, unix.EIO) || errors.Is(err, ErrDirUnavailable) || got != nil || unreadable != nil {
		t.Fatalf("ListOrphans = %v, unreadable %v, %v; want the listing's EIO", got, unreadable, err)
	}
}
