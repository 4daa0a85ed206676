package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"sessdb/gates"
)

// A sessions root renamed while dump or stats walks it (an operator's
// `mv sessions sessions.old` before a restore, a new root made at the
// path) must not give figures of two directories: the names were listed
// from one, and a read of each by the root's path found the other one's
// keys, or none. Before, stats of a root of 20 keys swapped after the
// first was read counted 4 keys (the few read ahead, and the new root's
// key at a listed name, with its transcript) and exit 0; dump reported the
// rest "no key dir". The walk reads the directory it listed, to its end.
func TestAWalkReadsTheRootItListedWhenTheRootIsSwapped(t *testing.T) {
	const n = 20
	setup := func(t *testing.T) (s *Store, root string, keys []string, swap func()) {
		s, root, _ = newTestStore(t, gates.Bounds{})
		for i := range n {
			k := Key("stats", "acme/widget", "swap-"+strconv.Itoa(i))
			writeFile(t, filepath.Join(root, k, TranscriptName), string(transcriptBytes(s.opts.Now(), "x")))
			keys = append(keys, k)
		}
		slices.Sort(keys)
		swapped := false
		swap = func() {
			if swapped {
				return
			}
			swapped = true
			if err := os.Rename(root, root+".old"); err != nil {
				t.Fatal(err)
			}
			// A new root at the path: keys the listing never named, and
			// one it named, with another transcript.
			for i := range 3 {
				k := Key("stats", "acme/widget", "new-"+strconv.Itoa(i))
				writeFile(t, filepath.Join(root, k, TranscriptName), string(transcriptBytes(s.opts.Now(), "y")))
			}
			writeFile(t, filepath.Join(root, keys[n-2], TranscriptName), string(transcriptBytes(s.opts.Now(), "y", "z", "w")))
		}
		return s, root, keys, swap
	}
	want := int64(len(transcriptBytes(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), "x")))

	t.Run("stats", func(t *testing.T) {
		s, _, _, swap := setup(t)
		st, err := s.Stats(context.Background(), StatsOptions{Window: time.Hour, Workers: 1, Progress: func(int, int) { swap() }})
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries != n || st.Keys != n || st.Bytes.N != n || st.TranscriptBytes != n*want {
			t.Errorf("entries %d, keys %d, transcripts %d of %d bytes: want %d keys of %d bytes, the root listed", st.Entries, st.Keys, st.Bytes.N, st.TranscriptBytes, n, n*want)
		}
	})
	t.Run("dump", func(t *testing.T) {
		s, _, keys, swap := setup(t)
		var got []string
		err := s.InspectWith(context.Background(), InspectOptions{Workers: 1, Progress: func(int, int) { swap() }}, func(r KeyReport) error {
			got = append(got, r.Name)
			if r.Problem != "" || r.Transcript == nil || r.Transcript.Bytes != want {
				t.Errorf("%s: problem %q, transcript %+v: want the listed root's key, %d bytes", r.Name, r.Problem, r.Transcript, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, keys) {
			t.Errorf("reported %v\nwant %v", got, keys)
		}
	})
	t.Run("check", func(t *testing.T) {
		for _, repair := range []bool{false, true} {
			s, root, keys, swap := setup(t)
			var found []Finding
			_, err := s.Check(context.Background(), CheckOptions{Repair: repair, Workers: 1, Progress: func(int, int) {
				swap()
				// Every listed key damaged at the new root's path.
				for _, k := range keys {
					writeFile(t, filepath.Join(root, k, "meta.db"), "not a bbolt file")
				}
			}}, func(f Finding) error { found = append(found, f); return nil })
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				t.Errorf("repair=%v: %s %s: %s (%s): the new root's key reported as the listed root's", repair, f.Path, f.Kind, f.Detail, f.Repair)
			}
		}
	})
}
