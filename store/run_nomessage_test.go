package store

import (
	"fmt"
	"testing"

	"sessdb/gates"
	"sessdb/internal/pientry"
	"sessdb/store/transcript"
)

// A run that appended entries but no message did not answer: its shape is
// unanswered, whatever the earlier answer the branch still ends in. pi
// 0.58.3 resumed on a transcript whose last answer has no usage writes
// its thinking level first where the file records none (a hand-made one),
// then crashes before its first request (exit 1, a TypeError); a pi killed
// at its start may leave its model change alone. Before, the run's shape
// was the last message's, a job before's answer, so such a run was
// "answered" and --require answered promoted it, where docs/json.md says
// run is what the job appended and docs/job.md that a run pi crashed
// before its first request is no answer.
func TestARunThatAppendedNoMessageIsUnanswered(t *testing.T) {
	for _, c := range []struct {
		name, entry string
	}{
		{"a thinking level", `{"type":"thinking_level_change","id":"tl-1","parentId":"a-A","timestamp":"2026-12-08T01:31:09.859Z","thinkingLevel":"medium"}`},
		{"a model change", `{"type":"model_change","id":"mc-1","parentId":"a-A","timestamp":"2026-12-08T01:31:09.859Z","provider":"anthropic","modelId":"claude-opus-4-1"}`},
		{"a label", `{"type":"label","id":"lb-1","parentId":"a-A","timestamp":"2026-12-08T01:31:09.859Z","targetId":"a-A","label":"x"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _, _ := newTestStore(t, gates.Bounds{})
			sess, jobDir, data := contractJob(t, s, testKey, "1")
			stage(t, jobDir, answeredTurn(data, "A", 12345))
			if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Run != transcript.Answered {
				t.Fatalf("first job: %+v", res)
			}
			sess, jobDir, data = contractJob(t, s, testKey, "2")
			if len(data) == 0 || !sess.Resume {
				t.Fatalf("second job not resumed: %+v", sess)
			}
			stage(t, jobDir, append(data, fmt.Sprintf("%s\n", c.entry)...))
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered})
			if res.Promoted || res.Reason != gates.RunIncomplete || res.Run != transcript.Unanswered {
				t.Fatalf("answered required: %+v; want run-incomplete, run unanswered", res)
			}
			res = mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !res.Promoted || res.Run != transcript.Unanswered {
				t.Fatalf("promote: %+v; want promoted, run unanswered", res)
			}
		})
	}
}

// A run that appended a message is judged by the branch's last message,
// as before, whatever entries follow it, and a message that begins right
// where the bytes the job was given end is the run's own.
func TestARunThatAppendedAnAnswerThenAnEntryIsAnswered(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	sess, jobDir, data := contractJob(t, s, testKey, "1")
	stage(t, jobDir, append(answeredTurn(data, "A", 12345), `{"type":"label","id":"lb-1","parentId":"a-A","timestamp":"2026-12-08T01:31:09.859Z","targetId":"a-A","label":"x"}`+"\n"...))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered}); !res.Promoted || res.Run != transcript.Answered {
		t.Fatalf("promote: %+v; want promoted, answered", res)
	}
	sess, jobDir, data = contractJob(t, s, testKey, "2")
	if !sess.Resume {
		t.Fatalf("second job not resumed: %+v", sess)
	}
	stage(t, jobDir, pientry.Message(data, "a-B", "assistant", "answer B", "stop", 12400))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered}); !res.Promoted || res.Run != transcript.Answered {
		t.Fatalf("an answer appended first: %+v; want promoted, answered", res)
	}
}
