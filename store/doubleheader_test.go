package store

import (
	"bytes"
	"testing"

	"sessdb/gates"
	"sessdb/store/transcript"
)

// On a cold start pi 0.58.3 writes its session header into the empty
// staged file twice, once when it opens the file and once with its first
// entry; README and docs/job.md promise this is harmless to sessdb, which,
// like pi, takes the first. The same run with one header and with two
// promotes alike (the run's shape, the reading and its model), and the
// key then resumes.
func TestHeaderWrittenTwiceIsHarmless(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	one := transcriptBytes(s.opts.Now())
	head := one[:bytes.IndexByte(one, '\n')+1]
	run := answeredTurn(one, "A", 12345)
	twice := append(append(bytes.Clone(head), head...), run[len(head):]...)
	for _, c := range []struct {
		key  string
		data []byte
	}{{testKey, run}, {Key("github", "acme/widget", "pi/issue-2"), twice}} {
		sess, jobDir := mustResolve(t, s, c.key, localJob())
		stage(t, jobDir, c.data)
		res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		if !res.Promoted || res.Run != transcript.Answered {
			t.Fatalf("%s: promote = %+v, want promoted and answered", c.key, res)
		}
		again, _ := mustResolve(t, s, c.key, localJob())
		want(t, again, true, gates.Resumed)
	}
	a, b := contextOf(t, root, testKey), contextOf(t, root, Key("github", "acme/widget", "pi/issue-2"))
	if a == nil || b == nil || *a != *b || a.Tokens != 12345 {
		t.Fatalf("reading with one header %+v, with two %+v; want the same, 12345 tokens", a, b)
	}
}
