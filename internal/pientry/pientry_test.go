package pientry

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The session header pi writes first has an id of its own, which no
// entry's parentId names: a transcript of the header alone has no last
// entry, and the first message appended to it is a root (parentId null).
const header = `{"type":"session","version":3,"id":"sess-1","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/w"}` + "\n"

func TestLastIDIsNeverTheSessionHeaders(t *testing.T) {
	if got := LastID([]byte(header)); got != "" {
		t.Errorf("LastID of a lone header = %q; want none", got)
	}
	data := []byte(header + `{"type":"model_change","id":"mc-1","parentId":null}` + "\n" + `{"type":"custom"}` + "\n")
	if got := LastID(data); got != "mc-1" {
		t.Errorf("LastID with a last line that has no id = %q; want the entry before it, mc-1", got)
	}
}

// Each message appended is the child of the entry before it, with the
// role it was given (as pi's branch reads it: a transcript whose parents
// do not chain is another conversation), and an assistant's stop and
// usage as given, a tool call in its content where it stopped for one.
func TestMessagesChainAndCarryTheirRoles(t *testing.T) {
	data := Message([]byte(header), "u-1", "user", "q", "", 0)
	data = Message(data, "a-1", "assistant", "calling", "toolUse", 40)
	data = Message(data, "r-1", "toolResult", "listing", "", 0)
	data = Message(data, "a-2", "assistant", "done", "stop", 90)
	type entry struct {
		Type, ID string
		ParentID *string `json:"parentId"`
		Message  struct {
			Role       string
			StopReason string
			Content    []struct{ Type string }
			Usage      struct{ TotalTokens int64 }
		}
	}
	want := []struct {
		id, parent, role, stop string
		total                  int64
		toolCall               bool
	}{
		{"u-1", "", "user", "", 0, false},
		{"a-1", "u-1", "assistant", "toolUse", 40, true},
		{"r-1", "a-1", "toolResult", "", 0, false},
		{"a-2", "r-1", "assistant", "stop", 90, false},
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if !bytes.Equal(append(lines[0], '\n'), []byte(header)) || len(lines) != 1+len(want) {
		t.Fatalf("%d lines, the first %s; want the header as it was, then %d messages", len(lines), lines[0], len(want))
	}
	for i, w := range want {
		var e entry
		if err := json.Unmarshal(lines[1+i], &e); err != nil {
			t.Fatalf("line %d: %v: %s", 1+i, err, lines[1+i])
		}
		parent := ""
		if e.ParentID != nil {
			parent = *e.ParentID
		}
		hasCall := false
		for _, c := range e.Message.Content {
			hasCall = hasCall || c.Type == "toolCall"
		}
		if e.Type != "message" || e.ID != w.id || parent != w.parent || (w.parent == "" && e.ParentID != nil) || e.Message.Role != w.role ||
			e.Message.StopReason != w.stop || e.Message.Usage.TotalTokens != w.total || hasCall != w.toolCall {
			t.Errorf("line %d: %s; want a message %s, child of %q, role %s, stop %q, %d tokens, a tool call %v", 1+i, lines[1+i], w.id, w.parent, w.role, w.stop, w.total, w.toolCall)
		}
	}
}
