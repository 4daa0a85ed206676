package migrate

import (
	"encoding/json"

	"sessdb/store"
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
	var context *store.ContextReport
	if c := v.Context; c != nil {
		context = store.NewContextReport(c.Tokens, c.Window, c.Model)
	}
	return json.Marshal(struct {
		Record      *Transcript          `json:"record"`
		PiVersion   *string              `json:"pi_version"`
		Venue       *string              `json:"venue"`
		ResumeChain *uint64              `json:"resume_chain"`
		Context     *store.ContextReport `json:"context"`
	}{v.Transcript, pv, v.Venue, v.ResumeChain, context})
}

// orEmpty is s, or an empty list for nil: docs/json.md writes an empty
// list as [], never null, so a consumer need not test for both.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
