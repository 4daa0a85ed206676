package store

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// An empty current.jsonl in place of a key with no record is no
// transcript: the ticket's base is none, as for a key that holds nothing,
// and a promote finds the key holding what it held whether that empty
// file is still there, gone, or another empty file: nothing was resumed,
// so nothing can have been superseded. (Mutation sweep, mutants3's ticket
// #120: baseOf's `st.Size > 0` -> `>= 0` made the empty file a file base,
// and its removal before the promote refused the job's transcript as
// superseded; no test held it.)
func TestAnEmptyTranscriptIsNoBase(t *testing.T) {
	for _, then := range []string{"kept", "removed", "replaced"} {
		t.Run(then, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			name := filepath.Join(root, testKey, TranscriptName)
			if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			if sess.Resume {
				t.Fatalf("resolve of an empty transcript = %+v, want a cold start", sess)
			}
			switch then {
			case "removed":
				if err := os.Remove(name); err != nil {
					t.Fatal(err)
				}
			case "replaced":
				if err := os.Remove(name); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(name, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			stage(t, jobDir, append(transcriptBytes(s.opts.Now()), entryLine("mine")...))
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			if err != nil || !res.Promoted || res.Reason != gates.Promoted {
				t.Fatalf("promote with the empty transcript %s = %+v, %v; want promoted", then, res, err)
			}
		})
	}
}
