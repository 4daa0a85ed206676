package migrate

import (
	"encoding/json"
	"math"
)

// The JSON of a migration is sessdb's vocabulary (docs/json.md): every
// documented field is present, an absent or unknown value is null, a list
// is [] when empty, and a context reading has one shape in every command.

// MarshalJSON writes r with a Cause of "" as null and empty lists as [].
func (r Report) MarshalJSON() ([]byte, error) {
	var cause *string
	if r.Cause != "" {
		cause = &r.Cause
	}
	return json.Marshal(struct {
		Key      string   `json:"key"`
		Action   Action   `json:"action"`
		Cause    *string  `json:"cause"`
		Values   *Values  `json:"values"`
		Oddities []Oddity `json:"oddities"`
		Removed  []string `json:"removed"`
		Written  []string `json:"written"`
	}{r.Key, r.Action, cause, r.Values, orEmpty(r.Oddities), orEmpty(r.Removed), orEmpty(r.Written)})
}

// MarshalJSON writes v with an unknown pi version ("") as null.
func (v Values) MarshalJSON() ([]byte, error) {
	var pv *string
	if v.PiVersion != "" {
		pv = &v.PiVersion
	}
	return json.Marshal(struct {
		Record      *Transcript `json:"record"`
		PiVersion   *string     `json:"pi_version"`
		Venue       *string     `json:"venue"`
		ResumeChain *uint64     `json:"resume_chain"`
		Context     *Context    `json:"context"`
	}{v.Transcript, pv, v.Venue, v.ResumeChain, v.Context})
}

// MarshalJSON writes c as the context object of every command: tokens,
// window, model (null when unstamped), pct (tokens*100/window rounded
// down, what the context rung compares; null when the window is not
// positive) and over_window.
func (c Context) MarshalJSON() ([]byte, error) {
	var model *string
	if c.Model != "" {
		model = &c.Model
	}
	var pct *int64
	// Past MaxInt64/100 the product overflows: pct is then null rather
	// than wrong.
	if c.Window > 0 && c.Tokens >= 0 && c.Tokens <= math.MaxInt64/100 {
		p := c.Tokens * 100 / c.Window
		pct = &p
	}
	return json.Marshal(struct {
		Tokens     int64   `json:"tokens"`
		Window     int64   `json:"window"`
		Model      *string `json:"model"`
		Pct        *int64  `json:"pct"`
		OverWindow bool    `json:"over_window"`
	}{c.Tokens, c.Window, model, pct, c.Window > 0 && c.Tokens > c.Window})
}

// orEmpty is s, or an empty list for nil: docs/json.md writes an empty
// list as [], never null, so a consumer need not test for both.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
