package engage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// The oracle is a second, deliberately naive reading of pi 0.58.3's code,
// written line for line after session-manager.ts (loadEntriesFromFile,
// migrateV1ToV2, migrateV2ToV3, buildSessionContext), compaction.ts
// (estimateTokens, estimateContextTokens) and agent-session.ts
// (getContextUsage). It shares no code with the scanner or the estimator:
// it reads the whole file, decodes with encoding/json, counts UTF-16 with
// unicode/utf16, and rebuilds the context from scratch for every request. It
// is only good for files pi itself wrote (no BOM, no exotic whitespace), which
// is what it is run on.

type oEntry map[string]json.RawMessage

func (e oEntry) str(k string) string {
	var s string
	json.Unmarshal(e[k], &s)
	return s
}

func jsLen(s string) int64 { return int64(len(utf16.Encode([]rune(s)))) }

type oracle struct {
	entries []oEntry // without the header
	byID    map[string]oEntry
	tokens  map[string]int64  // estimateTokens memo by entry id (messages are immutable)
	msgs    map[string]oEntry // decoded "message" memo by entry id
}

// message decodes an entry's "message" member, once per entry.
func (o *oracle) message(e oEntry) oEntry {
	id := e.str("id")
	if m, ok := o.msgs[id]; ok {
		return m
	}
	var m oEntry
	json.Unmarshal(e["message"], &m)
	o.msgs[id] = m
	return m
}

func newOracle(t testing.TB, path string) *oracle {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file []oEntry
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e oEntry
		if json.Unmarshal([]byte(line), &e) == nil {
			file = append(file, e)
		}
	}
	if len(file) == 0 || file[0].str("type") != "session" {
		t.Fatalf("oracle: %s is not a transcript", path)
	}
	version := 1.0
	if v, ok := file[0]["version"]; ok {
		json.Unmarshal(v, &version)
	}
	if version < 2 { // migrateV1ToV2
		prev := json.RawMessage("null")
		for i, e := range file {
			if e.str("type") == "session" {
				continue
			}
			e["id"] = json.RawMessage(fmt.Sprintf("%q", fmt.Sprintf("v1:%d", i)))
			e["parentId"] = prev
			prev = e["id"]
			if idx, ok := e["firstKeptEntryIndex"]; ok && e.str("type") == "compaction" {
				var n int
				json.Unmarshal(idx, &n)
				if n < len(file) && file[n].str("type") != "session" {
					e["firstKeptEntryId"] = file[n]["id"]
				}
			}
		}
	}
	if version < 3 { // migrateV2ToV3
		for _, e := range file[1:] {
			var m map[string]json.RawMessage
			if json.Unmarshal(e["message"], &m) == nil && string(m["role"]) == `"hookMessage"` {
				m["role"] = json.RawMessage(`"custom"`)
				e["message"], _ = json.Marshal(m)
			}
		}
	}
	o := &oracle{entries: file[1:], byID: map[string]oEntry{}, tokens: map[string]int64{}, msgs: map[string]oEntry{}}
	for _, e := range o.entries {
		o.byID[e.str("id")] = e
	}
	return o
}

// path is buildSessionContext's walk from leafID to the root.
func (o *oracle) path(leafID string) []oEntry {
	if leafID == "" {
		return nil // parentId null: pi's buildSessionContext returns no messages
	}
	leaf, ok := o.byID[leafID]
	if !ok {
		leaf = o.entries[len(o.entries)-1]
	}
	var path []oEntry // leaf first, reversed below (pi unshifts)
	for cur := leaf; cur != nil; {
		path = append(path, cur)
		p := cur.str("parentId")
		if p == "" {
			break
		}
		cur = o.byID[p]
	}
	slices.Reverse(path)
	return path
}

type oMsg struct {
	id   string // entry id, "" for a compaction summary
	role string
	raw  oEntry // the message object, or the entry for custom/branch summaries
}

// context is buildSessionContext's message list, reduced to what the
// estimate reads.
func (o *oracle) context(path []oEntry) []oMsg {
	var msgs []oMsg
	app := func(e oEntry) {
		switch e.str("type") {
		case "message":
			m := o.message(e)
			msgs = append(msgs, oMsg{id: e.str("id"), role: m.str("role"), raw: m})
		case "custom_message":
			msgs = append(msgs, oMsg{id: e.str("id"), role: "custom", raw: e})
		case "branch_summary":
			if e.str("summary") != "" {
				msgs = append(msgs, oMsg{id: e.str("id"), role: "branchSummary", raw: e})
			}
		}
	}
	ci := -1
	for i, e := range path {
		if e.str("type") == "compaction" {
			ci = i
		}
	}
	if ci < 0 {
		for _, e := range path {
			app(e)
		}
		return msgs
	}
	msgs = append(msgs, oMsg{role: "compactionSummary", raw: path[ci]})
	found := false
	for _, e := range path[:ci] {
		if _, ok := path[ci]["firstKeptEntryId"]; ok && e.str("id") == path[ci].str("firstKeptEntryId") {
			found = true
		}
		if found {
			app(e)
		}
	}
	for _, e := range path[ci+1:] {
		app(e)
	}
	return msgs
}

// estimateTokens, memoized by entry id.
func (o *oracle) estimateTokens(m oMsg) int64 {
	if n, ok := o.tokens[m.id]; ok && m.id != "" {
		return n
	}
	var chars int64
	blocks := func() []oEntry {
		var b []oEntry
		json.Unmarshal(m.raw["content"], &b)
		return b
	}
	var s string
	isString := json.Unmarshal(m.raw["content"], &s) == nil
	switch m.role {
	case "user":
		if isString {
			chars = jsLen(s)
		}
		for _, b := range blocks() {
			if b.str("type") == "text" {
				chars += jsLen(b.str("text"))
			}
		}
	case "assistant":
		for _, b := range blocks() {
			switch b.str("type") {
			case "text":
				chars += jsLen(b.str("text"))
			case "thinking":
				chars += jsLen(b.str("thinking"))
			case "toolCall":
				var c bytes.Buffer
				json.Compact(&c, b["arguments"])
				chars += jsLen(b.str("name")) + jsLen(c.String())
			}
		}
	case "custom", "toolResult":
		if isString {
			chars = jsLen(s)
		}
		for _, b := range blocks() {
			switch b.str("type") {
			case "text":
				chars += jsLen(b.str("text"))
			case "image":
				chars += 4800
			}
		}
	case "bashExecution":
		chars = jsLen(m.raw.str("command")) + jsLen(m.raw.str("output"))
	case "branchSummary", "compactionSummary":
		chars = jsLen(m.raw.str("summary"))
	}
	n := (chars + 3) / 4
	if m.id != "" {
		o.tokens[m.id] = n
	}
	return n
}

type oUsage struct{ Input, Output, CacheRead, CacheWrite, TotalTokens int64 }

func (u oUsage) context() int64 {
	if u.TotalTokens != 0 {
		return u.TotalTokens
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

func usageOf(m oEntry) (oUsage, bool) {
	var u *oUsage
	json.Unmarshal(m["usage"], &u)
	if u == nil {
		return oUsage{}, false
	}
	return *u, true
}

// estimate is estimateContextTokens over msgs plus getContextUsage's null
// rule over the branch.
func (o *oracle) estimate(path []oEntry) (tokens int64, unknown bool) {
	msgs := o.context(path)
	anchor := -1
	for i := len(msgs) - 1; i >= 0 && anchor < 0; i-- {
		stop := msgs[i].raw.str("stopReason")
		if _, ok := usageOf(msgs[i].raw); ok && msgs[i].role == "assistant" && stop != "aborted" && stop != "error" {
			anchor = i
		}
	}
	if anchor >= 0 {
		u, _ := usageOf(msgs[anchor].raw)
		tokens = u.context()
	}
	for _, m := range msgs[anchor+1:] {
		tokens += o.estimateTokens(m)
	}
	ci := -1
	for i, e := range path {
		if e.str("type") == "compaction" {
			ci = i
		}
	}
	if ci < 0 {
		return tokens, false
	}
	for i := len(path) - 1; i > ci; i-- {
		if path[i].str("type") != "message" {
			continue
		}
		m := o.message(path[i])
		if m.str("role") != "assistant" {
			continue
		}
		if stop := m.str("stopReason"); stop != "aborted" && stop != "error" {
			u, _ := usageOf(m)
			return tokens, u.context() <= 0
		}
	}
	return tokens, true
}

// requests returns, for every assistant on the branch, pi's estimate over
// buildSessionContext(entries, assistant.parentId) and whether pi reports
// null there: the rows of EXPECTED.md's tables. It does not leave out the
// failed answers a retry drops (no file it is run on has a retry);
// TestRetryLeavesTheFailedAnswerOut checks those against pi's own log.
func (o *oracle) requests() (ids []string, tokens []int64, unknown []bool) {
	for _, e := range o.path(o.entries[len(o.entries)-1].str("id")) {
		if e.str("type") != "message" || o.message(e).str("role") != "assistant" {
			continue
		}
		n, u := o.estimate(o.path(e.str("parentId")))
		ids, tokens, unknown = append(ids, e.str("id")), append(tokens, n), append(unknown, u)
	}
	return ids, tokens, unknown
}
