package store

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// On a full btrfs, where no bbolt commit fits (copy-on-write), a
// promotion fails and changes nothing, and a reap, the command run to
// free the disk, still removes every expired key. Full of data, the reap
// goes on without its reaping entry (before 4d11bea it failed every key
// there and removed none); full of metadata too, btrfs refuses the
// reap's rename and then the root's fsync, never an unlink: the key is
// removed in place, and a removal whose fsync failed is said, as any
// removal not made durable is. It needs a btrfs (testfs.SmallBtrfs);
// .ci/long installs one.
func TestOnAFullBtrfsAPromotionFailsAndAReapRemovesTheExpiredKeys(t *testing.T) {
	for _, metadata := range []bool{false, true} {
		t.Run(map[bool]string{false: "data", true: "data and metadata"}[metadata], func(t *testing.T) {
			mnt := testfs.SmallBtrfs(t, 300<<20)
			s, root, clock := newTestStoreAt(t, filepath.Join(mnt, "sessions"), gates.Bounds{TTL: opsTTL})
			var old []string
			for _, ref := range []string{"a", "b", "c"} {
				key := Key("github", "a/b", ref)
				expiredKey(t, s, clock, key)
				old = append(old, key)
			}
			slices.Sort(old)
			fresh := Key("github", "a/b", "fresh")
			runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh")
			transcript := readCanonical(t, root, fresh)

			testfs.Fill(t, mnt)
			if metadata {
				testfs.FillMetadata(t, mnt)
			}

			sess, jobDir := mustResolve(t, s, fresh, localJob())
			stage(t, jobDir, append(staged(t, jobDir), entryLine("on a full disk")...))
			if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); !fsat.IsNoSpace(err) {
				t.Fatalf("promote on a full btrfs = %+v, %v; want no space", res, err)
			}
			got, _ := checkDescribed(t, s, root, fresh)
			want(t, got, true, gates.Resumed)
			if !bytes.Equal(readCanonical(t, root, fresh), transcript) {
				t.Fatal("the key a promotion failed on changed")
			}

			res, err := s.Reap(false)
			if err != nil {
				t.Fatal(err)
			}
			// Every expired key gone, whole; one whose removal could not
			// be made durable is failed, naming that fsync.
			gone := slices.Concat(res.Removed, res.Failed)
			slices.Sort(gone)
			for _, key := range res.Failed {
				if why := res.Skipped[key]; !metadata || !strings.Contains(why, "fsync") || !strings.Contains(why, "no space left on device") {
					t.Errorf("reap failed %s: %s; want it removed (full of data), or only its root's fsync refused (of metadata)", key, why)
				}
			}
			if !slices.Equal(gone, old) || len(res.Skipped) != len(res.Failed) {
				t.Fatalf("reap on a full btrfs = %+v; want %v removed", res, old)
			}
			leftOnly(t, root, fresh)
			t.Logf("removed %d, removed but not made durable %d", len(res.Removed), len(res.Failed))
		})
	}
}
