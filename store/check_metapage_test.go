package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A meta.db with one invalid meta page whose other, valid page describes
// the transcript in place is a file a promotion writes on (fellBack): its
// commit writes the invalid page again. check --repair moved it aside, and
// with it the record, the stamps and the history: a key that resumed
// cold-started (meta-moved-aside), and its next job's cold run replaced
// the conversation. The repair now writes the page again as that
// promotion would, by a commit in place, and the key resumes as before.
func TestARepairWritesAgainAnInvalidMetaPageWhoseOtherDescribesTheTranscript(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string, m db.MetaPages)
	}{
		{"the spare page zeroed", func(t *testing.T, path string, m db.MetaPages) {
			writeAtFile(t, path, make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
		}},
		{"a byte of the spare page's checksum flipped", func(t *testing.T, path string, m db.MetaPages) {
			// The meta's checksum is its last field: the page header's 16
			// bytes, then 56 bytes of meta before it.
			off := int64((1-m.Active)*m.PageSize) + 16 + 56
			b := mustRead(t, path)[off : off+1]
			writeAtFile(t, path, []byte{b[0] ^ 0x55}, off)
		}},
		{"the newest page zeroed, its commit changing no record", func(t *testing.T, path string, m db.MetaPages) {
			// A commit that changed nothing the record says (a power
			// cut tore it, so its rename, if any, never happened) is
			// lost: the older page still describes the transcript.
			bdb, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = bdb.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("sidecars"))
				return b.Put([]byte("venue"), bytes.Clone(b.Get([]byte("venue"))))
			})
			if cerr := bdb.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			m = metaPagesOf(t, path)
			writeAtFile(t, path, make([]byte, m.PageSize), int64(m.Active*m.PageSize))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "spare")
			meta := chkDB(root, key)
			before := historyOf(t, root, key)
			tc.damage(t, meta, chkMeta(t, root, key))
			if m := chkMeta(t, root, key); m.Pages[0].Valid() == m.Pages[1].Valid() {
				t.Fatalf("fixture: meta pages %+v; want one invalid", m.Pages)
			}
			sess, _ := mustResolve(t, s, key, localJob())
			want(t, sess, true, gates.Resumed) // what the repair must not take away

			found, _ := chkRun(t, s, true)
			f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid)
			if f == nil || !f.Repaired || f.Remains || strings.Contains(f.Repair, "aside") {
				t.Fatalf("check --repair: %+v; want the page written again, nothing remaining", found)
			}
			if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
				t.Fatalf("the repair moved meta.db aside: %v", aside)
			}
			if m := chkMeta(t, root, key); !m.Pages[0].Valid() || !m.Pages[1].Valid() {
				t.Fatalf("meta pages after the repair %+v; want both valid", m.Pages)
			}
			sess, _ = mustResolve(t, s, key, localJob())
			want(t, sess, true, gates.Resumed)
			if after := historyOf(t, root, key); !reflect.DeepEqual(after, before) {
				t.Fatalf("history after the repair %+v; want %+v", after, before)
			}
			if found, _ := chkRun(t, s, false); len(found) != 0 {
				t.Fatalf("check after the repair: %+v", found)
			}
			// A second repair finds nothing, and changes nothing.
			st, raw := mustStat(t, meta), mustRead(t, meta)
			if found, _ := chkRun(t, s, true); len(found) != 0 {
				t.Fatalf("a second check --repair: %+v", found)
			}
			if now := mustStat(t, meta); !bytes.Equal(mustRead(t, meta), raw) || !now.ModTime().Equal(st.ModTime()) {
				t.Fatal("a second check --repair changed meta.db")
			}
			_, res := runJob(t, s, key, localJob(), PromoteRequest{}, "after")
			if !res.Promoted || res.Gen != uint64(len(before))+1 {
				t.Fatalf("the promotion after the repair: %+v", res)
			}
		})
	}
}

// The same fault where the valid page's record does not describe the
// transcript in place (a commit lost that a promotion acknowledged, its
// transcript renamed into place) is a file no writer writes on
// (ErrMetaFellBack): it still goes aside.
func TestARepairMovesAsideAFallBackThatDoesNotDescribeTheTranscript(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "fell-back")
	m := chkMeta(t, root, key)
	writeAtFile(t, chkDB(root, key), make([]byte, m.PageSize), int64(m.Active*m.PageSize))
	found, _ := chkRun(t, s, true)
	if f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid); f == nil || !f.Repaired || !strings.Contains(f.Repair, "moved meta.db aside") {
		t.Fatalf("check --repair: %+v; want meta.db moved aside", found)
	}
}

// A deep check that did not complete (it timed out, its child was killed)
// proves nothing, and moves nothing: beside an invalid meta page whose
// other page describes the transcript, the repair took it for other damage
// and moved meta.db aside, the record, stamps and history with it, while
// saying of the same check "nothing is moved without proof". The page is
// written again as where the check completed, and the check is left to run
// again.
func TestAnInvalidMetaPageBesideADeepCheckThatDidNotCompleteIsNotMovedAside(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "slow-check")
	m := chkMeta(t, root, key)
	writeAtFile(t, chkDB(root, key), make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
	before := historyOf(t, root, key)

	found := chkRunDeep(t, s, key, DeepResult{Incomplete: "it timed out"})
	f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid)
	if f == nil || !f.Repaired || strings.Contains(f.Repair, "aside") {
		t.Fatalf("check --repair: %+v; want the page written again, nothing moved aside", found)
	}
	if c := chkFind(found, key+"/"+db.FileName, KindMetaCheckFailed); c == nil || c.Repaired || !strings.Contains(c.Repair, "left as is") {
		t.Fatalf("check --repair: %+v; want the check that did not complete left as is", found)
	}
	if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
		t.Fatalf("the repair moved meta.db aside: %v", aside)
	}
	if m := chkMeta(t, root, key); !m.Pages[0].Valid() || !m.Pages[1].Valid() {
		t.Fatalf("meta pages after the repair %+v; want both valid", m.Pages)
	}
	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
	if after := historyOf(t, root, key); !reflect.DeepEqual(after, before) {
		t.Fatalf("history after the repair %+v; want %+v", after, before)
	}
}

// bbolt writes a commit's meta to page txid%2. A valid meta page at the
// other page's place (a page copied there: bbolt never writes one so),
// beside an invalid page, is the page the next commit writes: the repair's
// commit wrote over the file's only valid page (a torn write there leaves
// none), left the invalid one as it was, and said "written again". The
// page is now left as is, the file unwritten, and the repair says why.
func TestARepairDoesNotWriteOverTheOnlyValidMetaPage(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "misplaced")
	meta := chkDB(root, key)
	m := chkMeta(t, root, key)
	a := m.Active
	page := mustRead(t, meta)[a*m.PageSize : (a+1)*m.PageSize]
	writeAtFile(t, meta, page, int64((1-a)*m.PageSize))
	writeAtFile(t, meta, make([]byte, m.PageSize), int64(a*m.PageSize))
	m = chkMeta(t, root, key)
	if m.Active != 1-a || m.Pages[a].Valid() || m.Pages[m.Active].Txid%2 == uint64(m.Active) {
		t.Fatalf("fixture: meta pages %+v; want page %d invalid, page %d valid with a txid of the other's parity", m.Pages, a, 1-a)
	}
	raw := mustRead(t, meta)

	found, _ := chkRun(t, s, true)
	f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid)
	if f == nil || f.Repaired || !f.Remains || !strings.Contains(f.Repair, "left as is") {
		t.Fatalf("check --repair: %+v; want the page left as is, remaining", found)
	}
	// The line names the page the valid one sits on and the page bbolt
	// keeps its txid on: the other.
	txid := m.Pages[m.Active].Txid
	if why := fmt.Sprintf("meta page %d holds txid %d, which bbolt keeps on page %d", m.Active, txid, txid%2); !strings.Contains(f.Repair, why) {
		t.Fatalf("check --repair: %q; want it to say %q", f.Repair, why)
	}
	if !bytes.Equal(mustRead(t, meta), raw) {
		t.Fatal("the repair wrote meta.db")
	}
	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
	// What the repair line says of the next two promotions.
	for i := range 2 {
		if _, res := runJob(t, s, key, localJob(), PromoteRequest{}, "after"); !res.Promoted {
			t.Fatalf("promotion %d after the repair: %+v", i+1, res)
		}
	}
	if found, _ := chkRun(t, s, false); len(found) != 0 {
		t.Fatalf("check after two promotions: %+v", found)
	}
}

func writeAtFile(t *testing.T, path string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// The commit that writes the page again, killed at a random moment of a
// whole check --repair, leaves the file as it was (the next repair writes
// the page) or written: never anything between, the record and history
// kept and the key resuming either way.
func TestAMetaPageRepairKilledLeavesThePageInvalidOrWritten(t *testing.T) {
	kills := newRepairKills(t)
	var old, written int
	for r := 0; r <= kills.Rounds; r++ {
		s, root, clock := newTestStore(t, gates.Bounds{})
		key := chkKey(t, s, "killed")
		before := historyOf(t, root, key)
		m := chkMeta(t, root, key)
		writeAtFile(t, chkDB(root, key), make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
		kills.run(t, r, root, clock.now)
		if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
			t.Fatalf("round %d: meta.db moved aside: %v", r, aside)
		}
		switch m := chkMeta(t, root, key); {
		case r == 0 && !(m.Pages[0].Valid() && m.Pages[1].Valid()):
			t.Fatalf("the whole run left meta pages %+v; want both valid", m.Pages)
		case r == 0:
		case m.Pages[0].Valid() && m.Pages[1].Valid():
			written++
		default:
			old++
		}
		for _, repair := range []bool{false, true} {
			if after := historyOf(t, root, key); !reflect.DeepEqual(after, before) {
				t.Fatalf("round %d: history %+v; want %+v", r, after, before)
			}
			sess, _ := mustResolve(t, s, key, localJob())
			want(t, sess, true, gates.Resumed)
			if repair {
				break
			}
			chkRun(t, s, true)
		}
		if found, _ := chkRun(t, s, false); len(found) != 0 {
			t.Fatalf("round %d: check after the next repair: %+v", r, found)
		}
	}
	t.Logf("a whole run %v; %d kills left the page invalid, %d written", kills.span, old, written)
}

// A meta page's header (its page id and flags: bytes the meta's checksum
// does not cover, which bbolt's open never reads and each commit to the
// page writes whole) flipped made bbolt's full check panic at its first
// step: check reported meta-check-failed and --repair moved a file every
// reader and writer takes aside, the key cold-starting. It is no damage
// of the commit in use: check says nothing of it, and --repair does
// nothing.
func TestAMetaPageHeaderNoOpenReadsIsNoDamage(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "header")
	m := chkMeta(t, root, key)
	off := int64((1 - m.Active) * m.PageSize)
	b := mustRead(t, chkDB(root, key))[off : off+1]
	writeAtFile(t, chkDB(root, key), []byte{b[0] ^ 0x06}, off)
	if found, _ := chkRun(t, s, true); len(found) != 0 {
		t.Fatalf("check --repair: %+v; want nothing found", found)
	}
	if aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*")); len(aside) != 0 {
		t.Fatalf("the repair moved meta.db aside: %v", aside)
	}
	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
}

// The meta page repair writes only the file its look proved (its deep
// check included): one put at meta.db's name since, with an invalid page
// too, is left for the next check. The two new repairs' hard-linked
// meta.db, which a writer's open gives a file of its own, is judged by the
// file it copied: written, the other name keeping what it held.
func TestAMetaPageRepairWritesOnlyTheFileItsLookProved(t *testing.T) {
	for _, tc := range []struct {
		name     string
		linked   bool // meta.db has a second name before the look
		replaced bool // a copy is renamed over meta.db after the look
	}{
		{"replaced since the look", false, true},
		{"hard-linked", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, "proved")
			meta := chkDB(root, key)
			m := chkMeta(t, root, key)
			writeAtFile(t, meta, make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize))
			other := filepath.Join(t.TempDir(), "other-name")
			if tc.linked {
				if err := os.Link(meta, other); err != nil {
					t.Fatal(err)
				}
			}
			raw := mustRead(t, meta)
			fired := false
			faults.Set(func(p faults.Point) error {
				// The repair's writer open: the look is done.
				if p == faults.DBOpenWriter && tc.replaced && !fired {
					fired = true
					tmp := filepath.Join(root, key, "copy")
					if err := os.WriteFile(tmp, raw, 0o600); err != nil {
						t.Error(err)
					}
					if err := os.Rename(tmp, meta); err != nil {
						t.Error(err)
					}
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			found, _ := chkRun(t, s, true)
			faults.Set(nil)
			f := chkFind(found, key+"/"+db.FileName, KindMetaPageInvalid)
			switch {
			case f == nil:
				t.Fatalf("check --repair: %+v; want meta-page-invalid", found)
			case tc.replaced:
				if f.Repaired || !strings.Contains(f.Repair, "changed since") || !bytes.Equal(mustRead(t, meta), raw) {
					t.Fatalf("check --repair: %+v; want the file put there since left unwritten", found)
				}
			default:
				if !f.Repaired || strings.Contains(f.Repair, "aside") {
					t.Fatalf("check --repair: %+v; want the page written again", found)
				}
				if m := chkMeta(t, root, key); !m.Pages[0].Valid() || !m.Pages[1].Valid() {
					t.Fatalf("meta pages after the repair %+v; want both valid", m.Pages)
				}
				if !bytes.Equal(mustRead(t, other), raw) {
					t.Fatal("the repair wrote through meta.db's other name")
				}
			}
			sess, _ := mustResolve(t, s, key, localJob())
			want(t, sess, true, gates.Resumed)
		})
	}
}
