package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// A ticket written by a sessdb from before the job contract (no ticket id)
// promotes as it always did, with no base, root or prefix check (store
// doc, Session.Ticket): a job resolved before an upgrade is promoted by
// the binary after it. Those tickets were store.Session as it was then,
// {key, resume, reason, bytes, gen, venue, model, job, job_dir}, gen (the
// generation delivered) present on every warm one.
func TestTicketFromBeforeTheJobContractPromotes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	given, err := os.ReadFile(filepath.Join(root, testKey, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	other := Key("github", "acme/widget", "pi/issue-9")
	for _, c := range []struct {
		name, key, ticket string
		staged            []byte
		gen, chain        uint64
	}{
		{"warm", testKey, fmt.Sprintf(`{"key":%q,"resume":true,"reason":"resumed","bytes":%d,"gen":1,"venue":"local","model":"anthropic/claude-sonnet-4-5","job":"old-1","job_dir":"/run/jobs/old-1"}`, testKey, len(given)),
			answeredTurn(given, "old", 100), 2, 1},
		{"cold", other, fmt.Sprintf(`{"key":%q,"resume":false,"reason":"absent","bytes":0,"venue":"local","job_dir":"/run/jobs/old-2"}`, other),
			answeredTurn(transcriptBytes(s.opts.Now()), "new", 100), 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			jobDir := t.TempDir()
			stage(t, jobDir, c.staged)
			if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(c.ticket), 0o600); err != nil {
				t.Fatal(err)
			}
			sess, err := ReadTicket(jobDir)
			if err != nil {
				t.Fatalf("a ticket from before the job contract: %v", err)
			}
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !res.Promoted || res.Gen != c.gen {
				t.Fatalf("promote = %+v, want gen %d", res, c.gen)
			}
			if sc := sidecarsOf(t, root, c.key); *sc.ResumeChain != c.chain {
				t.Fatalf("chain %d, want %d", *sc.ResumeChain, c.chain)
			}
		})
	}
}
