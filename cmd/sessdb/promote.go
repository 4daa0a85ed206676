package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"sessdb/store"
	"sessdb/store/models"
	"sessdb/store/transcript"
)

var cmdPromote = &command{
	name:  "promote",
	usage: "promote --sessions-dir DIR --job-dir DIR --pi-version V [--require answered] [--allow-rewrite] [--models FILE] [--context-window W] [--context-tokens N]",
	short: "take a completed run's transcript back into the store, once, onto what the job was given",
	run:   runPromote,
}

type promoteOutput struct {
	Key          string `json:"key"`
	Promoted     bool   `json:"promoted"`
	Reason       string `json:"reason"`
	Bytes        int64  `json:"bytes"`
	Gen          uint64 `json:"gen"`
	Run          string `json:"run,omitempty"`
	Repeat       bool   `json:"repeat,omitempty"`
	SupersededBy uint64 `json:"superseded_by,omitempty"`
	Rewritten    bool   `json:"rewritten,omitempty"`
}

func runPromote(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("promote", stderr)
	cfg := bindConfig(fs)
	jobDir := fs.String("job-dir", "", "the job's directory, as given to resolve")
	piVersion := fs.String("pi-version", "", "the pi version that wrote the transcript (\"\" = unknown: the next job cold-starts)")
	tokens := fs.String("context-tokens", "", "override the context tokens computed from the transcript (pi's own end-of-run reading)")
	window := fs.String("context-window", "", "the model's context window; default: looked up in --models, then in pi 0.58.3's built-in models")
	require := knob{env: "PI_SESSION_PROMOTE_REQUIRE", flag: "require", help: "refuse any run but an answered one (run-incomplete); the only value is answered"}
	fs.StringVar(&require.value, require.flag, "", require.help+" [$"+require.env+"]")
	modelsFile := knob{env: "PI_SESSION_MODELS_FILE", flag: "models", help: "a models file in pi's models.json format, for context windows"}
	fs.StringVar(&modelsFile.value, modelsFile.flag, "", modelsFile.help+" [$"+modelsFile.env+"]")
	allowRewrite := fs.Bool("allow-rewrite", false, "promote a staged file that does not begin with the bytes the job was given (recorded as rewritten)")
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
	req := store.PromoteRequest{PiVersion: *piVersion, AllowRewrite: *allowRewrite}
	var err error
	if req.Tokens, req.Window, err = parseReading(*tokens, *window); err != nil {
		return usageError(stderr, "promote", err)
	}
	switch raw, name := require.get(os.Getenv); raw {
	case "":
	case string(transcript.Answered):
		req.Require = transcript.Answered
	default:
		return usageError(stderr, "promote", fmt.Errorf("%s: not a requirement (the only one is %q)", name, transcript.Answered))
	}
	var windows store.Windows
	if path, name := modelsFile.get(os.Getenv); path != "" {
		m, err := models.Load(path)
		if err != nil {
			return usageError(stderr, "promote", fmt.Errorf("%s: %w", name, err))
		}
		windows = m
	}
	st, _, code := openStore(cfg, "promote", "", stderr, func(o *store.Options) { o.Models = windows })
	if st == nil {
		return code
	}
	sess, err := store.ReadTicket(*jobDir)
	if err != nil {
		fmt.Fprintf(stderr, "sessdb promote: %v\n", err)
		return exitFault
	}
	res, err := st.Promote(sess, req)
	if errors.Is(err, store.ErrWrongRoot) {
		// Nothing was written: the job is pointed at the wrong store.
		return usageError(stderr, "promote", err)
	}
	if err != nil {
		// promote-failed is an outcome like any other; its cause is for
		// the operator.
		fmt.Fprintf(stderr, "sessdb promote: %v\n", err)
	}
	return writeJSON(stdout, stderr, promoteOutput{
		Key: res.Key, Promoted: res.Promoted, Reason: string(res.Reason), Bytes: res.Bytes, Gen: res.Gen,
		Run: string(res.Run), Repeat: res.Repeat, SupersededBy: res.SupersededBy, Rewritten: res.Rewritten,
	})
}

// parseReading takes the runner's overrides of the reading: the tokens,
// the window, either, or neither.
func parseReading(tokens, window string) (*int64, int64, error) {
	var t *int64
	if tokens != "" {
		n, err := parseUint("--context-tokens", tokens, math.MaxInt64)
		if err != nil {
			return nil, 0, err
		}
		v := int64(n)
		t = &v
	}
	var w int64
	if window != "" {
		n, err := parseUint("--context-window", window, math.MaxInt64)
		if err != nil {
			return nil, 0, err
		}
		if n == 0 {
			return nil, 0, errors.New("--context-window: must be greater than 0")
		}
		w = int64(n)
	}
	return t, w, nil
}
