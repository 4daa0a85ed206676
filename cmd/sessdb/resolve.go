package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"sessdb/store"
)

var cmdResolve = &command{
	name:  "resolve",
	usage: "resolve --sessions-dir DIR (--key KEY | --kind K --repo R --ref REF) --job-dir DIR --pi-version V [--venue NAME] [--model PROVIDER/ID] [--job ID]",
	short: "stage a key's transcript (or a cold start) for a job and say why",
	run:   runResolve,
}

// resolveOutput is the one JSON object resolve prints.
type resolveOutput struct {
	Key    string `json:"key"`
	Resume bool   `json:"resume"`
	Reason string `json:"reason"`
	Bytes  int64  `json:"bytes"`
	Staged string `json:"staged"`
}

func runResolve(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("resolve", stderr)
	cfg := bindConfig(fs)
	key := fs.String("key", "", "the conversation's key (32 lowercase hex)")
	kind := fs.String("kind", "", "key material: the forge kind (github, gitlab, ..., local)")
	repo := fs.String("repo", "", "key material: the base repository")
	ref := fs.String("ref", "", "key material: the head ref or issue branch")
	jobDir := fs.String("job-dir", "", "the job's directory; the transcript is staged in its session/ dir")
	piVersion := fs.String("pi-version", "", "the pi version the job's image declares (\"\" declares none: never resumes)")
	venue := fs.String("venue", "local", "the backend the job runs on")
	model := fs.String("model", "", "the job's provider/model id, for the context bound")
	jobID := fs.String("job", "", "the job's id, recorded in the key's history by promote")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "resolve", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	k, err := keyFromFlags(*key, *kind, *repo, *ref, flagGiven(fs, "kind"))
	if err != nil {
		return usageError(stderr, "resolve", err)
	}
	if *jobDir == "" {
		return usageError(stderr, "resolve", errors.New("--job-dir is required"))
	}
	if !flagGiven(fs, "pi-version") {
		return usageError(stderr, "resolve", errors.New("--pi-version is required (pass --pi-version \"\" for an image that declares none)"))
	}
	st, log, code := openStore(cfg, "resolve", "", stderr)
	if st == nil {
		return code
	}
	// Resolve writes the ticket, and on a fault removes both the staged
	// file and any ticket: nothing is left here to clean up.
	sess, err := st.Resolve(k, store.Job{PiVersion: *piVersion, Venue: *venue, Model: *model, ID: *jobID}, *jobDir)
	if err != nil {
		log.Error().Err(err).Msg("resolve")
		fmt.Fprintf(stderr, "sessdb resolve: %v\n", err)
		return exitFault
	}
	return writeJSON(stdout, stderr, resolveOutput{
		Key: sess.Key, Resume: sess.Resume, Reason: string(sess.Reason), Bytes: sess.Bytes,
		Staged: filepath.Join(*jobDir, store.StagedDirName, store.TranscriptName),
	})
}

// keyFromFlags takes --key, or derives it from --kind/--repo/--ref.
func keyFromFlags(key, kind, repo, ref string, kindGiven bool) (string, error) {
	switch {
	case key != "" && kindGiven:
		return "", errors.New("give --key or --kind/--repo/--ref, not both")
	case key != "":
		if !store.ValidKey(key) {
			return "", fmt.Errorf("--key %q: %w", key, store.ErrInvalidKey)
		}
		return key, nil
	case kind != "" && ref != "":
		return store.Key(kind, repo, ref), nil
	}
	return "", errors.New("a key is required: --key KEY, or --kind K --repo R --ref REF")
}

// openStore builds the store from the configuration, or reports the
// configuration error and the exit status to return.
func openStore(cfg *config, cmd, dirArg string, stderr io.Writer, with ...func(*store.Options)) (*store.Store, zerolog.Logger, int) {
	log, err := cfg.logger(stderr)
	if err != nil {
		return nil, log, usageError(stderr, cmd, err)
	}
	dir, err := cfg.dir(os.Getenv, dirArg)
	if err != nil {
		return nil, log, usageError(stderr, cmd, err)
	}
	b, err := cfg.bounds(os.Getenv)
	if err != nil {
		return nil, log, usageError(stderr, cmd, err)
	}
	opts := store.Options{Bounds: b, Logger: log, Now: clock}
	for _, f := range with {
		f(&opts)
	}
	st, err := store.New(dir, opts)
	if err != nil {
		return nil, log, usageError(stderr, cmd, err)
	}
	return st, log, exitOK
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = stdout.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintf(stderr, "sessdb: write result: %v\n", err)
		return exitFault
	}
	return exitOK
}
