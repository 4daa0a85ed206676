package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"sessdb/gates"
	"sessdb/store"
	"sessdb/store/storetest"
	"sessdb/store/transcript"
)

// One job's loop through the library, as a worker runs it around pi:
// resolve before the container starts, run pi on the staged file, promote
// after the run. Here the "run" appends one answered turn the way pi
// would; a real worker runs
//
//	pi -p --session <job-dir>/session/current.jsonl --model provider/id "prompt"
//
// in a container that mounts <job-dir>/session as /session.
func Example() {
	base, err := os.MkdirTemp("", "sessdb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{
		Bounds: gates.Bounds{MaxBytes: 8 << 20, TTL: 14 * 24 * time.Hour},
	})
	if err != nil {
		log.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	job := store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}

	for i, prompt := range []string{"Fix the flaky test.", "Now add a regression test."} {
		jobDir := filepath.Join(base, fmt.Sprintf("job-%d", i+1))
		if err := os.Mkdir(jobDir, 0o700); err != nil {
			log.Fatal(err)
		}
		job.ID = fmt.Sprintf("job-%d", i+1)

		// Before the container starts: stage the transcript (or an empty
		// file) and leave the ticket in the job dir.
		sess, err := s.Resolve(key, job, jobDir)
		if err != nil {
			log.Fatal(err) // a fault: no staged file, no ticket
		}
		fmt.Printf("%s: resume=%v reason=%s\n", job.ID, sess.Resume, sess.Reason)

		// The run: pi appends to the staged file.
		staged := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
		if err := appendTurn(staged, i+1, prompt); err != nil {
			log.Fatal(err)
		}

		// After the run: promote, from the ticket (another process would
		// use store.ReadTicket(jobDir) to get it back).
		ticket, err := store.ReadTicket(jobDir)
		if err != nil {
			log.Fatal(err)
		}
		res, err := s.Promote(ticket, store.PromoteRequest{PiVersion: "0.58.3", Require: transcript.Answered})
		if err != nil {
			log.Println(err) // promote-failed: the cause, for the operator
		}
		fmt.Printf("%s: promoted=%v reason=%s gen=%d run=%s\n", job.ID, res.Promoted, res.Reason, res.Gen, res.Run)

		// A retry after a timeout repeats the first result.
		again, _ := s.Promote(ticket, store.PromoteRequest{PiVersion: "0.58.3"})
		fmt.Printf("%s: retried: repeat=%v gen=%d\n", job.ID, again.Repeat, again.Gen)
	}
	// Output:
	// job-1: resume=false reason=absent
	// job-1: promoted=true reason=promoted gen=1 run=answered
	// job-1: retried: repeat=true gen=1
	// job-2: resume=true reason=resumed
	// job-2: promoted=true reason=promoted gen=2 run=answered
	// job-2: retried: repeat=true gen=2
}

// appendTurn appends what pi writes for one answered prompt: a header
// first when the file is empty (a cold start), then the user message and
// the assistant's answer, each entry a child of the one before.
func appendTurn(path string, n int, prompt string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	parent := fmt.Sprintf(`"a%d"`, n-1)
	if st.Size() == 0 {
		parent = "null"
		fmt.Fprintln(f, `{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/workspace"}`)
	}
	fmt.Fprintf(f, `{"type":"message","id":"u%d","parentId":%s,"timestamp":"2026-11-01T12:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":%q}],"timestamp":1}}`+"\n", n, parent, prompt)
	_, err = fmt.Fprintf(f, `{"type":"message","id":"a%d","parentId":"u%d","timestamp":"2026-11-01T12:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":900,"output":100,"cacheRead":0,"cacheWrite":0,"totalTokens":1000},"stopReason":"stop","timestamp":2}}`+"\n", n, n)
	return err
}

// A worker that bounds how long it waits to start a job: ResolveContext
// with a deadline. Here another process (a promotion of the same key, as
// a rule) holds the key for longer than the deadline; the resolve gives up
// at the deadline with the caller's error, not a verdict, and leaves no
// staged file and no ticket: the worker may start the job later, or cold
// with a resolve of its own, but not on this one's.
func ExampleStore_ResolveContext() {
	base, err := os.MkdirTemp("", "sessdb-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	root := filepath.Join(base, "sessions")
	s, err := store.New(root, store.Options{LockTimeout: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	job := store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}
	first := filepath.Join(base, "job-1")
	if _, err := s.Resolve(key, job, first); err != nil {
		log.Fatal(err)
	}
	if err := appendTurn(filepath.Join(first, store.StagedDirName, store.TranscriptName), 1, "Fix the flaky test."); err != nil {
		log.Fatal(err)
	}
	ticket, err := store.ReadTicket(first)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Promote(ticket, store.PromoteRequest{PiVersion: "0.58.3"}); err != nil {
		log.Fatal(err)
	}

	// The key held, as a promotion in another process holds it.
	unlock, _, err := storetest.LockKeyDir(filepath.Join(root, key))
	if err != nil {
		log.Fatal(err)
	}
	defer unlock()

	jobDir := filepath.Join(base, "job-2")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = s.ResolveContext(ctx, key, job, jobDir)
	_, staged := os.Lstat(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName))
	_, ticketErr := os.Lstat(filepath.Join(jobDir, store.TicketName))
	fmt.Println("deadline exceeded:", errors.Is(err, context.DeadlineExceeded))
	fmt.Println("staged file left:", staged == nil, "ticket left:", ticketErr == nil)
	// Output:
	// deadline exceeded: true
	// staged file left: false ticket left: false
}
