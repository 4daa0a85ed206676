package transcript

import (
	"fmt"
	"strings"
	"testing"
)

// Retry is the estimate of the branch as if the failed answers it ends
// with (one after the other, entries that add nothing between them) had
// never been written: every field, the fallback sum and the message count
// as much as the tokens. Where the branch does not end in such a run (a
// failed answer a new prompt followed stays), it is Estimate. Each case
// gives a branch and the one Retry must read as, whose Estimate is taken.
func TestRetryReadsAsTheBranchWithoutTheFailedAnswersItEndsWith(t *testing.T) {
	line := func(id, parent, message string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"message":%s}`, id, p, message)
	}
	user := func(chars int) string { return fmt.Sprintf(`{"role":"user","content":%q}`, strings.Repeat("u", chars)) }
	answer := func(total, stop string, chars int) string {
		return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":%s},"stopReason":%q}`, strings.Repeat("a", chars), total, stop)
	}
	custom := func(id, parent string) string {
		return fmt.Sprintf(`{"type":"custom","id":%q,"parentId":%q,"customType":"state","data":{}}`, id, parent)
	}
	head := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`
	for _, total := range []string{"1000", "1000.5"} { // a whole anchor, and one with a fraction
		start := []string{head, line("u1", "", user(8)), line("a1", "u1", answer(total, "stop", 4)), line("u2", "a1", user(40))}
		for _, c := range []struct {
			name        string
			branch, not []string
		}{
			{"no failed answer", nil, nil},
			{"one failed answer", []string{line("e1", "u2", answer("0", "error", 400))}, nil},
			{"failed answers in a row", []string{line("e1", "u2", answer("0", "error", 400)), line("e2", "e1", answer("0", "error", 800))}, nil},
			{"a custom entry after the failed answer", []string{line("e1", "u2", answer("0", "error", 400)), custom("c1", "e1")}, []string{custom("c1", "u2")}},
			{"a failed answer a prompt followed", []string{line("e1", "u2", answer("0", "error", 400)), line("u3", "e1", user(40))}, []string{line("e1", "u2", answer("0", "error", 400)), line("u3", "e1", user(40))}},
			{"a failure that stayed, then one retried", []string{line("e1", "u2", answer("0", "error", 400)), line("u3", "e1", user(40)), line("e2", "u3", answer("0", "error", 800))}, []string{line("e1", "u2", answer("0", "error", 400)), line("u3", "e1", user(40))}},
		} {
			b := loadLines(t, append(append([]string{}, start...), c.branch...))
			est := b.Estimator(nil)
			for range b.Len {
				est.Advance()
			}
			got := est.Retry()
			want := loadLines(t, append(append([]string{}, start...), c.not...)).Final
			if got != want {
				t.Errorf("anchor %s, %s: Retry %+v; want %+v", total, c.name, got, want)
			}
		}
	}
}

func loadLines(t *testing.T, lines []string) *Branch {
	t.Helper()
	b, err := Load(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
