package gates_test

import (
	"fmt"
	"time"

	"sessdb/gates"
)

// A key that misses two rungs reports only the first, in ladder order: the
// operator reads "this, and nothing checked before it, stopped the
// resume". Mending that rung shows the next miss; mending both resumes.
func ExampleEvaluate() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	bounds := gates.Bounds{
		MaxBytes:       8 << 20,
		TTL:            14 * day,
		MaxAge:         30 * day,
		MaxResumeChain: 8,
		MaxContextPct:  90,
	}
	obs := gates.Observation{
		Transcript:    gates.Transcript{Exists: true, Regular: true, Size: 48211, ModTime: now.Add(-2 * day)},
		LastPromotion: now.Add(-2 * day),
		Venue:         gates.Stamp{State: gates.StampAbsent}, // written before venues were stamped: "local"
		PiVersion:     gates.Stamp{State: gates.StampPresent, Value: "0.58.2"},
		ResumeChain:   3,
		Context:       &gates.Context{Tokens: 185000, Window: 200000, Model: "anthropic/claude-sonnet-4-5"},
		Header:        gates.Header{IsSession: true, Timestamp: now.Add(-5 * day), TimestampOK: true},
	}
	job := gates.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}

	show := func(v gates.Verdict) {
		if v.Resume {
			fmt.Println("resume:", v.Reason)
			return
		}
		for _, g := range gates.Ladder() {
			if g.Reason == v.Reason {
				fmt.Printf("cold: %s (rung %s, fails %q): %s\n", v.Reason, g.Number, g.Polarity, g.Summary)
				return
			}
		}
	}
	// The stamp says 0.58.2, the job runs 0.58.3; the context (92.5% full)
	// would miss too, but rung 9 comes after rung 7.
	show(gates.Evaluate(obs, bounds, job, now))

	obs.PiVersion.Value = "0.58.3"
	show(gates.Evaluate(obs, bounds, job, now))

	// A reading stamped with another model is no measurement, and no
	// measurement passes (rung 9 fails open).
	obs.Context.Model = "openai/gpt-5"
	show(gates.Evaluate(obs, bounds, job, now))
	// Output:
	// cold: pi-version-changed (rung 7, fails "closed"): job declares no pi version, or the stamp is unknown, unreadable or different
	// cold: context-too-full (rung 9, fails "open"): same-model context reading at or over the percentage
	// resume: resumed
}

// Every bound is off at its zero value: with the zero Bounds only the rungs
// that judge the file and its stamps can miss.
func ExampleBounds() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	obs := gates.Observation{
		Transcript:  gates.Transcript{Exists: true, Regular: true, Size: 1 << 30, ModTime: now.AddDate(-1, 0, 0)},
		Venue:       gates.Stamp{State: gates.StampPresent, Value: "local"},
		PiVersion:   gates.Stamp{State: gates.StampPresent, Value: "0.58.3"},
		ResumeChain: 1000,
		Header:      gates.Header{IsSession: true},
	}
	job := gates.Job{PiVersion: "0.58.3", Venue: "local"}
	fmt.Println(gates.Evaluate(obs, gates.Bounds{}, job, now).Reason)
	fmt.Println(gates.Evaluate(obs, gates.Bounds{MaxBytes: 8 << 20}, job, now).Reason)
	// Output:
	// resumed
	// too-large
}
