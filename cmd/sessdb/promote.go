package main

import (
	"errors"
	"fmt"
	"io"
	"math"

	"sessdb/store"
)

var cmdPromote = &command{
	name:  "promote",
	usage: "promote --sessions-dir DIR --job-dir DIR --pi-version V [--context-tokens N --context-window W]",
	short: "take a completed run's transcript back into the store (completed runs only)",
	run:   runPromote,
}

type promoteOutput struct {
	Key      string `json:"key"`
	Promoted bool   `json:"promoted"`
	Reason   string `json:"reason"`
	Bytes    int64  `json:"bytes"`
	Gen      uint64 `json:"gen"`
}

func runPromote(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("promote", stderr)
	cfg := bindConfig(fs)
	jobDir := fs.String("job-dir", "", "the job's directory, as given to resolve")
	piVersion := fs.String("pi-version", "", "the pi version that wrote the transcript (\"\" = unknown: the next job cold-starts)")
	tokens := fs.String("context-tokens", "", "the run's context reading: tokens in use")
	window := fs.String("context-window", "", "the run's context reading: the model's window")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "promote", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *jobDir == "" {
		return usageError(stderr, "promote", errors.New("--job-dir is required"))
	}
	if !flagGiven(fs, "pi-version") {
		return usageError(stderr, "promote", errors.New("--pi-version is required (pass --pi-version \"\" when it is unknown)"))
	}
	reading, err := parseReading(*tokens, *window)
	if err != nil {
		return usageError(stderr, "promote", err)
	}
	st, _, code := openStore(cfg, "promote", "", stderr)
	if st == nil {
		return code
	}
	sess, err := store.ReadTicket(*jobDir)
	if err != nil {
		fmt.Fprintf(stderr, "sessdb promote: %v\n", err)
		return exitFault
	}
	res, err := st.Promote(sess, store.PromoteRequest{PiVersion: *piVersion, Context: reading})
	if err != nil {
		// promote-failed is an outcome like any other; its cause is for
		// the operator.
		fmt.Fprintf(stderr, "sessdb promote: %v\n", err)
	}
	return writeJSON(stdout, stderr, promoteOutput{Key: res.Key, Promoted: res.Promoted, Reason: string(res.Reason), Bytes: res.Bytes, Gen: res.Gen})
}

// parseReading takes both halves of a context reading or neither.
func parseReading(tokens, window string) (*store.Reading, error) {
	if tokens == "" && window == "" {
		return nil, nil
	}
	if tokens == "" || window == "" {
		return nil, errors.New("--context-tokens and --context-window go together")
	}
	t, err := parseUint("--context-tokens", tokens, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	w, err := parseUint("--context-window", window, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	if w == 0 {
		return nil, errors.New("--context-window: must be greater than 0")
	}
	return &store.Reading{Tokens: int64(t), Window: int64(w)}, nil
}
