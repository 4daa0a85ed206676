// Package pientry writes pi's message entries for tests: a transcript
// grown one message at a time, each entry the child of the one before,
// as pi 0.58.3 appends them (see ../shared/reference/pi.md). It is for the
// tests of store and its conformance suite, which build the same
// transcripts; nothing in sessdb's commands imports it.
package pientry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

var entryID = regexp.MustCompile(`"id":"([^"]+)"`)

// LastID is the id of the last entry of data after its first line (the
// session header, which has an id of its own), "" when there is none.
func LastID(data []byte) string {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 1; i-- {
		if m := entryID.FindSubmatch(lines[i]); m != nil {
			return string(m[1])
		}
	}
	return ""
}

// Message returns a copy of data with one message entry appended, its
// parent data's last entry. role is user, toolResult or assistant; an
// assistant's stop is its stopReason ("toolUse" adds a tool call to its
// content) and total its usage's totalTokens.
func Message(data []byte, id, role, text, stop string, total int64) []byte {
	parent := "null"
	if p := LastID(data); p != "" {
		parent = `"` + p + `"`
	}
	content, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	var msg string
	switch role {
	case "assistant":
		if stop == "toolUse" {
			content = append(content[:len(content)-1], `,{"type":"toolCall","id":"call-1","name":"bash","arguments":{"command":"ls"}}]`...)
		}
		msg = fmt.Sprintf(`{"role":"assistant","content":%s,"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":%q,"timestamp":1773134116106}`, content, total, stop)
	case "toolResult":
		msg = fmt.Sprintf(`{"role":"toolResult","toolCallId":"call-1","toolName":"bash","content":%s,"isError":false,"timestamp":1773134116106}`, content)
	default:
		msg = fmt.Sprintf(`{"role":"user","content":%s,"timestamp":1773134116106}`, content)
	}
	line := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-01T12:00:00.000Z","message":%s}`+"\n", id, parent, msg)
	return append(bytes.Clone(data), line...)
}
