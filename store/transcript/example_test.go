package transcript_test

import (
	"fmt"
	"log"
	"strings"

	"sessdb/store/transcript"
)

// What the store asks of a transcript at promote: pi's reading at the end
// of the run, the model pi would resume with, and how the run ended.
func ExampleReadEnd() {
	const header = `{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/work"}
{"type":"model_change","id":"m1","parentId":null,"provider":"anthropic","modelId":"claude-sonnet-4-5"}
{"type":"message","id":"u1","parentId":"m1","message":{"role":"user","content":"Fix the flaky test."}}
`
	runs := []struct{ name, tail string }{
		{"answered", `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"Fixed: the test raced its own timer."}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":12,"output":40,"cacheRead":0,"cacheWrite":6100,"totalTokens":6152},"stopReason":"stop"}}`},
		// The model asked for a tool and the run stopped before its result.
		{"tool call", `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"go test ./..."}}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":12,"output":30,"cacheRead":0,"cacheWrite":6100,"totalTokens":6142},"stopReason":"toolUse"}}`},
		// The provider failed; pi records the failed answer with its model
		// and no usage, so the estimate falls back to chars/4.
		{"error", `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"openai","model":"gpt-5","stopReason":"error","errorMessage":"overloaded"}}`},
		{"no run", ``},
	}
	for _, run := range runs {
		end, err := transcript.ReadEnd(strings.NewReader(header + run.tail))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-9s tokens %-5d known %-5v model %-26s last %-9s shape %s\n",
			run.name, end.Tokens, end.Known, end.Model, end.Last.Role, end.Last.Shape())
	}

	// A file pi would not load is no error: pi starts it over, and End says
	// what pi then reports, with the reason beside it.
	end, err := transcript.ReadEnd(strings.NewReader(`{"type":"message","id":"x"}` + "\n"))
	fmt.Println(end.Invalid, err)
	// Output:
	// answered  tokens 6152  known true  model anthropic/claude-sonnet-4-5 last assistant shape answered
	// tool call tokens 6142  known true  model anthropic/claude-sonnet-4-5 last assistant shape unanswered
	// error     tokens 5     known true  model openai/gpt-5               last assistant shape errored
	// no run    tokens 5     known true  model anthropic/claude-sonnet-4-5 last user      shape unanswered
	// not a pi transcript: line 1: first entry is a "message" entry, not a session header <nil>
}
