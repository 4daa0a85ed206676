package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// check's line about a current.jsonl or meta.db that is not a regular
// file says what a resolve makes of the key, and each says what the
// resolve really does: before, every such line said "resolve:
// not-a-regular-file or meta-unreadable", and a directory put at
// current.jsonl under a committed promotion's rename, whose run a resolve
// resumes from its temp, was reported as a key that cold-starts.
func TestCheckOfANameThatIsNotARegularFileSaysWhatResolveDoes(t *testing.T) {
	for _, c := range []struct {
		name, file, want string
		reason           gates.Reason
		put              func(t *testing.T, s *Store, root, key string)
	}{
		{"a FIFO at current.jsonl", TranscriptName, "resolve: not-a-regular-file", gates.NotARegularFile, func(t *testing.T, _ *Store, root, key string) {
			p := filepath.Join(root, key, TranscriptName)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory at meta.db", db.FileName, "resolve: meta-unreadable", gates.MetaUnreadable, func(t *testing.T, _ *Store, root, key string) {
			p := filepath.Join(root, key, db.FileName)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		// No transcript: the ladder's first rung names the cold start,
		// before meta.db is judged (before, the line said meta-unreadable).
		{"a directory at meta.db, no transcript", db.FileName, "resolve: absent", gates.Absent, func(t *testing.T, _ *Store, root, key string) {
			p := filepath.Join(root, key, db.FileName)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(root, key, TranscriptName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory at current.jsonl under a promotion's rename", TranscriptName, "the promotion in flight (gen 5) is served from its temp", gates.Resumed, func(t *testing.T, s *Store, root, key string) {
			putDirUnderRename(t, s, root, key)
		}},
		{"a directory at current.jsonl under a promotion's rename, its temp damaged", TranscriptName, "else resolve: promotion-lost", gates.PromotionLost, func(t *testing.T, s *Store, root, key string) {
			putDirUnderRename(t, s, root, key)
			temps, _ := filepath.Glob(filepath.Join(root, key, tmpPrefix+"*"))
			if len(temps) != 1 {
				t.Fatalf("%d temps after the commit", len(temps))
			}
			if err := os.Truncate(temps[0], 10); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "notregular")
			c.put(t, s, root, key)
			found, _ := chkRun(t, s, false)
			f := chkFind(found, key+"/"+c.file, KindNotRegular)
			if f == nil {
				t.Fatalf("no not-a-regular-file finding at %s: %+v", c.file, found)
			}
			if !strings.Contains(f.Detail, c.want) {
				t.Errorf("detail %q, want it to say %q", f.Detail, c.want)
			}
			sess, err := s.Resolve(key, localJob(), t.TempDir())
			if err != nil || sess.Reason != c.reason {
				t.Errorf("resolve: %s, %v; the line says %q", sess.Reason, err, c.want)
			}
		})
	}
}

// putDirUnderRename promotes a run onto key (gen 5 of chkKey's key) and
// puts a directory at current.jsonl between the promotion's commit and
// its rename, which then fails: the run is committed, in its temp.
func putDirUnderRename(t *testing.T, s *Store, root, key string) (Session, []byte) {
	t.Helper()
	sess, jobDir := mustResolve(t, s, key, localJob())
	run := append(staged(t, jobDir), entryLine("committed, not in place")...)
	stage(t, jobDir, run)
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			cur := filepath.Join(root, key, TranscriptName)
			if err := os.Remove(cur); err != nil {
				return err
			}
			return os.MkdirAll(filepath.Join(cur, "the operator's"), 0o700)
		}
		return nil
	})
	defer faults.Set(nil)
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err == nil || res.Reason != gates.PromoteFailed {
		t.Fatalf("the promotion's rename over a directory: %+v, %v; want promote-failed", res, err)
	}
	return sess, run
}

// A committed promotion whose rename fails for good (a directory at
// current.jsonl) is served by every resolve from its temp; its ticket's
// retries fail, and check --repair, which never removes what no writer
// made, leaves both and says so (a fault: exit 1). Once the operator
// removes the directory, check --repair rolls the run forward and the
// retry repeats the promotion it made: nothing of the run was lost.
func TestAPromotionWhoseRenameFailsForGoodIsRolledForwardOnceTheNameIsFree(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "renamefails")
	sess, run := putDirUnderRename(t, s, root, key)
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err == nil || res.Reason != gates.PromoteFailed {
		t.Errorf("a retry while the directory is there: %+v, %v; want promote-failed", res, err)
	}
	job := t.TempDir()
	if got, err := s.Resolve(key, localJob(), job); err != nil || !got.Resume || string(staged(t, job)) != string(run) {
		t.Errorf("resolve while the rename cannot land: %+v, %v; want the committed run resumed", got, err)
	}

	found, sum := chkRun(t, s, true)
	meta, cur := key+"/"+db.FileName, key+"/"+TranscriptName
	if f := chkFind(found, meta, KindPendingPromotion); f == nil || !f.RepairFailed || !f.Remains {
		t.Errorf("the roll-forward over a directory: %+v; want a repair that failed, remaining", f)
	}
	if f := chkFind(found, cur, KindNotRegular); f == nil || f.Repaired || !f.Remains {
		t.Errorf("the directory: %+v; want it left, remaining", f)
	}
	if sum.Remaining != 2 {
		t.Errorf("summary %+v, want two problems remaining", sum)
	}
	if _, err := os.Stat(filepath.Join(root, key, TranscriptName, "the operator's")); err != nil {
		t.Errorf("check --repair touched what it did not make: %v", err)
	}

	if err := os.RemoveAll(filepath.Join(root, key, TranscriptName)); err != nil {
		t.Fatal(err)
	}
	found, sum = chkRun(t, s, true)
	if f := chkFind(found, meta, KindPendingPromotion); f == nil || !f.Repaired || f.Remains {
		t.Errorf("the roll-forward once the name is free: %+v; want it repaired", f)
	}
	if sum.Remaining != 0 {
		t.Errorf("summary %+v, want nothing remaining", sum)
	}
	if got, err := os.ReadFile(filepath.Join(root, key, TranscriptName)); err != nil || string(got) != string(run) {
		t.Errorf("current.jsonl after the roll-forward: %d bytes, %v; want the committed run", len(got), err)
	}
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if err != nil || !res.Promoted || !res.Repeat || res.Gen != 5 {
		t.Errorf("the ticket's retry after the roll-forward: %+v, %v; want its promotion (gen 5) repeated", res, err)
	}
}

// A committed promotion's temp that is not a regular file (a FIFO, a
// directory: put there out of band) is no temp a roll-forward renames or
// removes. check said it was "missing or not what the record says: a
// roll-forward removes it", and --repair reported "removed its temp" and
// Repaired for a temp it left, which the next check found again.
func TestCheckOfAPendingTempThatIsNotARegularFileSaysTheRollForwardLeavesIt(t *testing.T) {
	for name, put := range map[string]func(t *testing.T, tmp string){
		"a FIFO":      func(t *testing.T, tmp string) { must(t, unix.Mkfifo(tmp, 0o600)) },
		"a directory": func(t *testing.T, tmp string) { must(t, os.Mkdir(tmp, 0o700)) },
	} {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			tmp := commitWithoutRename(t, s, root)
			must(t, os.Remove(tmp))
			put(t, tmp)
			for _, repair := range []bool{false, true} {
				var pending []Finding
				if _, err := s.Check(context.Background(), CheckOptions{Repair: repair}, func(f Finding) error {
					if f.Kind == KindPendingPromotion {
						pending = append(pending, f)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if len(pending) != 1 {
					t.Fatalf("repair %v: %d pending-promotion findings; want 1", repair, len(pending))
				}
				f := pending[0]
				if !strings.Contains(f.Detail, "not a regular file: no roll-forward renames or removes it") || strings.Contains(f.Detail, "a roll-forward removes it") {
					t.Errorf("repair %v: %q; want it to say no roll-forward renames or removes the temp", repair, f.Detail)
				}
				if repair && (f.Repaired || !f.Remains || !strings.HasPrefix(f.Repair, "left as is")) {
					t.Errorf("--repair: repaired %v, remains %v, %q; want left as is, and still there", f.Repaired, f.Remains, f.Repair)
				}
			}
			if _, err := os.Lstat(tmp); err != nil {
				t.Errorf("the temp after --repair: %v; want it left", err)
			}
			if got, _ := mustResolve(t, s, testKey, localJob()); got.Reason != gates.Resumed || got.Gen() != 1 {
				t.Errorf("resolve: %s gen %d; want resumed at gen 1, the generation before", got.Reason, got.Gen())
			}
		})
	}
}

// A damaged meta.db's line says what a resolve makes of the key, as the
// ladder orders it: meta-unreadable with a transcript in place, but absent
// with none (the first rung), and too-large past the size bound. Before,
// each said meta-unreadable.
func TestCheckOfADamagedMetaDBSaysWhatResolveDoes(t *testing.T) {
	for _, c := range []struct {
		name   string
		bounds gates.Bounds
		edit   func(t *testing.T, transcript string)
		reason gates.Reason
	}{
		{"a transcript in place", gates.Bounds{}, func(*testing.T, string) {}, gates.MetaUnreadable},
		{"no transcript", gates.Bounds{}, func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, gates.Absent},
		{"an empty transcript", gates.Bounds{}, func(t *testing.T, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		}, gates.Absent},
		{"a transcript past the size bound", gates.Bounds{MaxBytes: 10}, func(*testing.T, string) {}, gates.TooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			built, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, built, "damagedmeta")
			s, _, _ := newTestStoreAt(t, root, c.bounds)
			if err := os.WriteFile(filepath.Join(root, key, db.FileName), []byte(strings.Repeat("garbage ", 1024)), 0o600); err != nil {
				t.Fatal(err)
			}
			c.edit(t, filepath.Join(root, key, TranscriptName))
			found, _ := chkRun(t, s, false)
			f := chkFind(found, key+"/"+db.FileName, KindMetaDamaged)
			if f == nil {
				t.Fatalf("no meta-damaged finding: %+v", found)
			}
			if want := "(resolve: " + string(c.reason) + ")"; !strings.Contains(f.Detail, want) {
				t.Errorf("detail %q, want it to say %q", f.Detail, want)
			}
			sess, err := s.Resolve(key, localJob(), t.TempDir())
			if err != nil || sess.Reason != c.reason {
				t.Errorf("resolve: %s, %v; want %s", sess.Reason, err, c.reason)
			}
		})
	}
}

// A temp that goes while check looks at it (another process's
// roll-forward removed it between check's look for it and its read) is
// missing, as the record says a roll-forward leaves it: never a file that
// is not a regular one, which --repair would leave "as is" for an
// operator to remove by hand though nothing is there.
func TestCheckOfAPendingTempGoneWhileItLooksSaysItMissing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	tmp := commitWithoutRename(t, s, root)
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingTempCheck {
			os.Remove(tmp)
		}
		return nil
	})
	var pending []Finding
	if _, err := s.Check(context.Background(), CheckOptions{}, func(f Finding) error {
		if f.Kind == KindPendingPromotion {
			pending = append(pending, f)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	faults.Set(nil)
	if len(pending) != 1 || !strings.Contains(pending[0].Detail, "missing or not what the record says") || pending[0].tmpNotRegular {
		t.Errorf("the pending-promotion findings: %+v; want one saying its temp is missing", pending)
	}
}
