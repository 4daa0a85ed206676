package engage

import (
	"fmt"
	"slices"
	"testing"
)

// A request is on a new model when its model differs from the last one a
// request named: a request that names none (an answer written without a
// model) neither starts nor ends a model, so the change across it is seen.
func TestANewModelIsJudgedAgainstTheLastModelNamed(t *testing.T) {
	a := func(model string) string {
		m := ""
		if model != "" {
			m = fmt.Sprintf(`"provider":"p","model":%q,`, model)
		}
		return `{"role":"assistant","content":[],` + m + `"usage":{"totalTokens":10},"stopReason":"stop"}`
	}
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"go"}`),
		msgLine("a1", "u1", a("a")),
		msgLine("a2", "a1", a("")),
		msgLine("a3", "a2", a("b")),
		msgLine("a4", "a3", a("")),
		msgLine("a5", "a4", a("b")))
	var got []bool
	for _, r := range tr.Requests() {
		got = append(got, r.NewModel)
	}
	if want := []bool{false, false, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("NewModel %v, want %v: b after a, across a request naming none", got, want)
	}
}
