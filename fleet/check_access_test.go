package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/fleet/shared"
	"sessdb/internal/access"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// worker is the uid and gid the test gives the transcripts dir to: what
// check judges is judged for the dir's owner, and in a dir root owns
// nothing is (root may use anything).
const worker = 65534

// genOf returns the one generation file in key's dir.
func (f *fixture) genOf(key string) string {
	f.t.Helper()
	names, err := os.ReadDir(filepath.Join(f.dir, key))
	if err != nil || len(names) != 1 {
		f.t.Fatalf("%s holds %v, %v; want one generation", key, names, err)
	}
	return key + "/" + names[0].Name()
}

// What an older sessdb left in a transcripts dir, under a umask that took
// the owner's bits or as root, every worker's promote or resolve failed
// on while check said nothing: the dir itself, its mark, a key dir, the
// generation a record names, each without the owner's bits the fleet
// needs (mode), and a generation root owns (owner). check names each;
// --repair gives each mode its owner's bits, and leaves the owner to the
// operator's chown.
func TestCheckJudgesTheTranscriptsDirsModesAndOwners(t *testing.T) {
	dirKey := store.Key("github", "check-access", "key dir")
	genKey := store.Key("github", "check-access", "generation")
	rootsKey := store.Key("github", "check-access", "root's")
	fine := store.Key("github", "check-access", "fine")
	openKey := store.Key("github", "check-access", "open to anyone")
	sticky := store.Key("github", "check-access", "sticky")
	f := workersFleet(t, worker, dirKey, genKey, rootsKey, fine, openKey, sticky)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	gen, rootsGen := f.genOf(genKey), f.genOf(rootsKey)
	must(os.Chmod(filepath.Join(f.dir, gen), 0o200))
	must(os.Chown(filepath.Join(f.dir, rootsGen), 0, 0))
	must(os.Chmod(filepath.Join(f.dir, shared.MarkName), 0o200))
	must(os.Chmod(filepath.Join(f.dir, dirKey), 0o500))
	// A key dir anyone may write in, no sticky bit (as the walks judge
	// the dir itself): named, and --repair takes the others' write bit.
	must(os.Chmod(filepath.Join(f.dir, openKey), 0o777))
	must(os.Chmod(filepath.Join(f.dir, sticky), os.ModeSticky|0o777))
	must(os.Chmod(f.dir, 0o500))
	t.Cleanup(func() { os.Chmod(f.dir, 0o700); os.Chmod(filepath.Join(f.dir, dirKey), 0o700) })
	want := map[string]string{
		".":             "mode: mode 0500: its owner may not write the transcripts dir",
		shared.MarkName: "mode: mode 0200: its owner may not read the dir's mark",
		dirKey:          "mode: mode 0500: its owner may not write the key dir",
		gen:             "mode: mode 0200: its owner may not read the generation",
		rootsGen:        "owner: owned by uid 0, where the transcripts dir is uid 65534's, who may not read the generation",
		openKey:         "mode: mode 0777: anyone may write in the key dir (no sticky bit; sessdb makes it 0700): any user of the host may replace the key's generations",
	}
	for _, repair := range []bool{false, true} {
		var found []store.Finding
		sum, err := f.b.Check(t.Context(), CheckOptions{Repair: repair}, func(fd store.Finding) error {
			if fd.Kind == store.KindMode || fd.Kind == store.KindOwner {
				found = append(found, fd)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("repair %v: %v", repair, err)
		}
		if len(found) != len(want) {
			t.Errorf("repair %v: %d findings, want %d: %+v", repair, len(found), len(want), found)
		}
		for _, fd := range found {
			w, ok := want[fd.Path]
			switch {
			case !ok || !strings.HasPrefix(string(fd.Kind)+": "+fd.Detail, w):
				t.Errorf("repair %v: %s: %s: %q, want %q", repair, fd.Path, fd.Kind, fd.Detail, w)
			case !repair && (!fd.Remains || fd.Repaired):
				t.Errorf("check: %+v", fd)
			case repair && fd.Kind == store.KindMode && (!fd.Repaired || fd.Remains):
				t.Errorf("--repair: %+v", fd)
			case repair && fd.Kind == store.KindOwner && (fd.Repaired || !fd.Remains || fd.Repair != "left as is: "+access.OwnerAdvice):
				t.Errorf("--repair: %+v", fd)
			}
		}
		if wantLeft := map[bool]int{false: 6, true: 1}[repair]; sum.Remaining != wantLeft {
			t.Errorf("repair %v: %d problems remain, want %d", repair, sum.Remaining, wantLeft)
		}
	}
	for p, mode := range map[string]os.FileMode{".": 0o700, shared.MarkName: 0o600, dirKey: 0o700, gen: 0o600, openKey: 0o775, sticky: os.ModeSticky | 0o777} {
		if fi, err := os.Lstat(filepath.Join(f.dir, p)); err != nil || fi.Mode()&(os.ModePerm|os.ModeSticky) != mode {
			t.Errorf("%s after --repair: %v, %v; want %v", p, fi.Mode(), err, mode)
		}
	}
	f.holds(fine, fine, 1)
}

// workersFleet is a fleet on one member whose keys have each been run
// once, after which its transcripts dir, with all in it, is given to
// worker and group gid: root's test of what that user's check judges. It
// skips where the test does not run as root.
func workersFleet(t *testing.T, gid int, keys ...string) *fixture {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("gives the transcripts dir to another user: run as root to test it")
	}
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	for _, k := range keys {
		f.run(k, k)
	}
	if err := filepath.Walk(f.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, worker, gid)
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// A key dir's mode mended by --repair and changed back by its owner before
// the look after it is reported once, mended and remaining: not twice,
// and not "0 problems remaining" (ownrev4: two lines, repaired 2, exit
// 0, where the owner's chmod raced the repair).
func TestCheckReportsAModeChangedBackAfterItsRepairOnce(t *testing.T) {
	key := store.Key("github", "check-access", "changed back")
	f := workersFleet(t, worker, key)
	dir := filepath.Join(f.dir, key)
	if err := os.Chmod(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	looks := 0
	f.b.hook = func(p, k string) error {
		if p == hookCheckOpen && k == key {
			if looks++; looks == 2 {
				// The look after the repair, before its lstat of the
				// key dir: the owner takes the bits back.
				os.Chmod(dir, 0o600)
			}
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	var modes []store.Finding
	sum, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		if fd.Path == key && fd.Kind == store.KindMode {
			modes = append(modes, fd)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if looks < 2 {
		t.Fatalf("the key was looked at %d times: no look after the repair, and this test tests nothing", looks)
	}
	if len(modes) != 1 || !modes[0].Repaired || !modes[0].Remains || sum.Remaining != 1 || sum.Repaired != 1 {
		t.Fatalf("a mode changed back after its repair: %+v, summary %+v; want one finding, repaired and remaining, 1 remaining, 1 repaired", modes, sum)
	}
}
