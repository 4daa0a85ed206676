package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// A sessdb from before the job contract wrote "gen" only on a warm
// ticket, from a key with a record, and never 0 (omitempty): a ticket
// with no id whose gen sits on a cold verdict, or is 0, is a warm one
// edited, and is refused (mutcore44's T15). As a cold start other than
// absent or locked it would promote with no base check: the stale run
// over the generation another job promoted since. The key is left as
// it is.
func TestAnOldTicketWithAGenOnAColdVerdictIsRefused(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base") // gen 1
	given := readCanonical(t, root, testKey)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "newer") // gen 2
	newer := readCanonical(t, root, testKey)
	for name, ticket := range map[string]string{
		"cold, the gen resumed": fmt.Sprintf(`{"key":%q,"resume":false,"reason":"pi-version-changed","bytes":0,"gen":1,"venue":"local","job_dir":"/run/jobs/old"}`, testKey),
		"cold absent":           fmt.Sprintf(`{"key":%q,"resume":false,"reason":"absent","bytes":0,"gen":1,"venue":"local","job_dir":"/run/jobs/old"}`, testKey),
		"warm, gen 0":           fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"gen":0,"venue":"local","job_dir":"/run/jobs/old"}`, testKey, len(given)),
	} {
		t.Run(name, func(t *testing.T) {
			jobDir := t.TempDir()
			stage(t, jobDir, append(append([]byte{}, given...), entryLine("stale, by an old job")...))
			if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(ticket), 0o600); err != nil {
				t.Fatal(err)
			}
			sess, err := ReadTicket(jobDir)
			if !errors.Is(err, ErrBadTicket) {
				res, perr := s.Promote(sess, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true})
				t.Fatalf("ReadTicket = %v, want ErrBadTicket; its promote: %+v, %v", err, res, perr)
			}
			if got := readCanonical(t, root, testKey); !bytes.Equal(got, newer) {
				t.Fatal("the key changed")
			}
		})
	}
}
