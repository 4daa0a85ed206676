package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/dirflock"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
)

// noDirFlocks are the two ways a file system cannot flock a directory,
// as internal/dirflock plays them: flock(2) of a key dir fails (db takes
// every error alike but a timeout; db's
// TestWhereAKeyDirCannotBeFlockedMetaDBsFlockOrdersTheKey has each one
// seen), or succeeds and locks nothing (docs/platforms.md, item 8).
var noDirFlocks = []struct {
	name string
	err  error
}{
	{"EINVAL", unix.EINVAL}, // FreeBSD's NFSv4 client
	{"ignored", nil},        // macOS's NFS client
}

// noDirFlock has every key dir's flock go as on such a file system until
// the test ends: no turnstile anywhere, meta.db's flock still taken.
func noDirFlock(t *testing.T, err error) {
	if err == nil {
		t.Cleanup(dirflock.Ignore())
		return
	}
	t.Cleanup(dirflock.Refuse(err))
}

// Where a key dir cannot be flocked, a key is promoted, resolved, and
// reaped once expired, as anywhere: the resolve hands back what was
// promoted, and the reap removes the key and leaves nothing behind.
func TestWhereAKeyDirCannotBeFlockedAKeyIsPromotedResolvedAndReaped(t *testing.T) {
	for _, fs := range noDirFlocks {
		t.Run(fs.name, func(t *testing.T) {
			noDirFlock(t, fs.err)
			s, root, clock := newTestStore(t, gates.Bounds{TTL: time.Hour})
			key := chkKey(t, s, "no dir flock") // four resolves and promotions
			sess, jobDir := mustResolve(t, s, key, localJob())
			if !sess.Resume || !bytes.Equal(staged(t, jobDir), readCanonical(t, root, key)) {
				t.Errorf("the resolve after four promotions: resume %t (%s), %d bytes staged; want the promoted transcript resumed", sess.Resume, sess.Reason, len(staged(t, jobDir)))
			}
			res, err := reapAhead(t, root, clock).Reap(false)
			if err != nil || len(res.Removed) != 1 || res.Removed[0] != key || len(res.Failed) != 0 || len(res.Finished) != 0 {
				t.Fatalf("reap past the TTL: %+v, %v; want %s removed, nothing else", res, err, key)
			}
			if names := rootEntries(t, root); len(names) != 0 {
				t.Errorf("the root after the reap holds %q; want nothing", names)
			}
		})
	}
}

// rootEntries lists root.
func rootEntries(t *testing.T, root string) []string {
	t.Helper()
	names, err := fsat.ReadDirNames(openDirT(t, root))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// reapsEmptyDirSteps are the steps of a reap at which its reap-owned dir
// is an empty dir, as an interrupted reap leaves one: between the two
// steps of a rename with no atomic no-replace rename (linkFallback), and
// its last steps (meta.db unlinked, the dir not yet). disk makes the
// disk that calls at, once, at the step, with the reap-owned name.
var reapsEmptyDirSteps = []struct {
	name string
	disk func(at func(reaped string)) durable.FS
}{
	{"the reap's rename", func(at func(reaped string)) durable.FS {
		return linkFallback{mkdirred: func(name string) {
			if _, ok := ReapedKey(name); ok {
				at(name)
			}
		}}
	}},
	{"the reap's last steps", func(at func(reaped string)) durable.FS { return atReapsLastSteps(at) }},
}

// Where a key dir cannot be flocked, a reap holds no turnstile, and a
// check or dump that looks at its reap-owned dir while it is empty, in
// its two-step rename or its last steps, has nothing to wait at: it
// reports the interrupted reap the dir looks like, at once (the reap
// stands still at its step until the look has answered, and the look's
// lock timeout is an hour: a look that waited for the reap would hang).
// The reap goes on and removes its key; nothing is left (docs/platforms.md,
// item 8).
func TestWhereAKeyDirCannotBeFlockedALookAtAReapsEmptyDirReportsAnInterruptedReap(t *testing.T) {
	for _, fs := range noDirFlocks {
		for _, step := range reapsEmptyDirSteps {
			for _, look := range reapedNameLooks {
				t.Run(fs.name+"/"+step.name+"/"+look.name, func(t *testing.T) {
					noDirFlock(t, fs.err)
					_, root, clock := newTestStore(t, gates.Bounds{TTL: time.Hour})
					s, err := New(root, Options{Bounds: gates.Bounds{TTL: time.Hour}, Now: clock.Now, LockTimeout: time.Hour})
					if err != nil {
						t.Fatal(err)
					}
					key := chkKey(t, s, "look beside a reap")
					ahead := reapAhead(t, root, clock)
					var reaped string
					var problems []string
					ahead.disk = diskWrites{step.disk(func(name string) {
						if reaped == "" {
							reaped = name
							problems = lookAt(t, look.problems, s, root, name)
						}
					})}
					res, err := ahead.Reap(false)
					if err != nil || len(res.Removed) != 1 || res.Removed[0] != key || len(res.Failed) != 0 {
						t.Fatalf("reap past the TTL: %+v, %v; want %s removed", res, err, key)
					}
					if reaped == "" {
						t.Fatalf("the reap never reached %s", step.name)
					}
					says := "reap-interrupted " + reaped + ": key " + key + "'s dir, renamed aside by a reap that was interrupted"
					if look.name == "dump" {
						says = reaped + ": interrupted reap of key " + key
					}
					if len(problems) != 1 || !strings.HasPrefix(problems[0], says) {
						t.Errorf("the %s during %s found %q; want one problem, %q…", look.name, step.name, problems, says)
					}
					if names := rootEntries(t, root); len(names) != 0 {
						t.Errorf("the root after the reap holds %q; want nothing", names)
					}
				})
			}
		}
	}
}

// Where a key dir cannot be flocked, a second reap, or check --repair,
// that meets a reap's dir in its last steps (meta.db unlinked, the dir
// not yet) has nothing to wait at either: it finishes the empty dir as an
// interrupted reap's, at once, and reports it finished (repaired); the
// first reap, whose rmdir finds the dir gone, reports its key removed.
// Nothing is lost: the dir held nothing by then, and a key beside it
// resolves as before (docs/platforms.md, item 8).
func TestWhereAKeyDirCannotBeFlockedAReapsLastStepsAreFinishedByASecond(t *testing.T) {
	for _, fs := range noDirFlocks {
		for _, second := range []string{"reap", "check --repair"} {
			t.Run(fs.name+"/"+second, func(t *testing.T) {
				noDirFlock(t, fs.err)
				s, root, clock := newTestStore(t, gates.Bounds{TTL: time.Hour})
				key := chkKey(t, s, "reaped")
				// A key promoted when the reaps run, which they keep.
				clock.now = clock.now.Add(2 * time.Hour)
				kept := chkKey(t, s, "kept")
				want := readCanonical(t, root, kept)
				clock.now = clock.now.Add(-2 * time.Hour)
				first, other := reapAhead(t, root, clock), reapAhead(t, root, clock)
				var reaped, did string
				first.disk = diskWrites{atReapsLastSteps(func(name string) {
					reaped = name
					switch second {
					case "reap":
						res, err := other.Reap(false)
						if err != nil || len(res.Finished) != 1 || res.Finished[0] != name || len(res.Removed) != 0 || len(res.Failed) != 0 {
							t.Errorf("the second reap, during the first's last steps: %+v, %v; want %s finished, nothing else", res, err, name)
						}
					default:
						found := checkFindings(t, other, CheckOptions{Repair: true})
						f := chkFind(found, name, KindReapInterrupted)
						if f == nil || !f.Repaired || f.Repair != "removed: the reap is finished" || f.Remains || len(found) != 1 {
							t.Errorf("check --repair during a reap's last steps: %+v; want %s's interrupted reap finished, nothing else", found, name)
						}
					}
					if _, err := os.Lstat(filepath.Join(root, name)); !os.IsNotExist(err) {
						t.Errorf("the reap's dir once the %s finished it: %v; want it gone", second, err)
					}
					did = second
				})}
				res, err := first.Reap(false)
				if err != nil || len(res.Removed) != 1 || res.Removed[0] != key || len(res.Failed) != 0 || len(res.Finished) != 0 {
					t.Errorf("the first reap: %+v, %v; want %s removed, nothing else", res, err, key)
				}
				if did == "" {
					t.Fatalf("the first reap never reached its last steps (%q)", reaped)
				}
				if names := rootEntries(t, root); len(names) != 1 || names[0] != kept {
					t.Errorf("the root after both holds %q; want only %s", names, kept)
				}
				sess, jobDir := mustResolve(t, first, kept, localJob())
				if !sess.Resume || !bytes.Equal(staged(t, jobDir), want) {
					t.Errorf("the key beside: resume %t (%s); want its transcript resumed as promoted", sess.Resume, sess.Reason)
				}
			})
		}
	}
}
