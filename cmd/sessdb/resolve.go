package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"sessdb/fleet"
	"sessdb/internal/fsat"
	"sessdb/store"
)

var cmdResolve = &command{
	name:  "resolve",
	usage: "resolve [--sessions-dir DIR | --etcd-endpoints URLS --transcripts-dir DIR] (--key KEY | --kind K --repo R --ref REF) --job-dir DIR --pi-version V [--venue NAME] [--model PROVIDER/ID] [--job ID]",
	short: "stage a key's transcript (or a cold start) for a job and say why",
	long: `
Stages <job-dir>/session/current.jsonl (the dir is made 0700): a copy of the
key's transcript when the read-gate ladder lets it resume (a last line with no
newline gets one, or pi would glue its first entry to it and lose both), else
a 0-byte file (pi writes its own header into an empty file). Writes the job's
ticket, <job-dir>/session.ticket, which promote reads back. Prints one JSON
object: {"key","resume","reason","bytes","staged"} (docs/json.md).

Every verdict, cold or warm, exits 0: a cold start is a result. A store fault
exits 1 and leaves no staged file and no ticket behind. An answer that cannot
be written on stdout (a full disk, a reader gone) exits 1 too, its stderr line
naming the key and the verdict ("resolved (...), but the answer was not written
on stdout ..."), after the ticket and the staged file were written: they may
stay, and a retried resolve replaces both. A signal (SIGTERM, Ctrl-C) kills
resolve, nothing on stdout (one that comes after the answer was written leaves
it whole there: act only on the answer of a resolve that exited 0); the staged
file and the ticket may stay, and a retried resolve replaces both.

The key is --key (32 lowercase hex) or derived from --kind/--repo/--ref as the
legacy store derived it: all three, but --kind local, whose key has no
repository, takes no --repo (its --ref is the trigger id). --pi-version is
required: --pi-version "" declares no version, which never resumes. A
--pi-version, --venue, --model or --job longer than 4096 bytes (a legacy
sidecar's most) is a usage error (exit 2): no key stamped with it could be
migrated back. --job-dir is created (0700) if it is missing (as root on Linux,
it and what resolve writes in it are made the owner's and group's of the dir
each is made in, as everything sessdb makes as root is); a parent that does not
exist is a usage error (exit 2), as is a job dir that is the sessions root (on
a fleet, the transcripts dir), lies inside one of its key dirs (or a dir a reap
or a quarantine moved aside), or holds it, links resolved (or whose links
cannot be resolved: past PATH_MAX, or a relative path's working directory
gone): the container is given <job-dir>/session, and a job dir is removed after
its job (one under the root but outside every key is left alone, as check's
not-a-key). A sessions root that does not exist makes every key absent, as the
legacy store did, with a warning on stderr (a misspelt root would otherwise
pass for a new conversation). A sessions root (on a fleet, a transcripts dir)
that is the filesystem root, however spelled, is a usage error (exit 2, naming
the flag or variable; nothing made): a key made there no walk could reach, and
no reap expire. A sessions root (on a fleet, a transcripts dir) anyone may
write to without the sticky bit (o+w, no +t), which every walk refuses, is
taken, with one warning on stderr naming it and its mend, chmod +t (promote
warns alike).

On a fleet (--etcd-endpoints, docs/fleet.md) the key's record is read from
etcd and the generation it names copied from the transcripts dir, checked
against the record's size and CRC32C. An etcd that does not answer within
--etcd-timeout is store-unavailable: a cold start like any other (exit 0),
its cause on stderr. Refused credentials are a fault (exit 1).`,
	example: `  sessdb resolve --sessions-dir /var/lib/pi/sessions --kind github --repo acme/widget --ref pi/issue-42 \
      --job-dir /run/jobs/1234 --pi-version 0.58.3 --venue local --model anthropic/claude-sonnet-4-5 --job 1234
  PI_SESSIONS_ETCD_ENDPOINTS=http://127.0.0.1:2379 PI_SESSIONS_TRANSCRIPTS_DIR=/srv/pi/transcripts \
      sessdb resolve --kind github --repo acme/widget --ref pi/issue-42 --job-dir /run/jobs/1234 --pi-version 0.58.3`,
	exits:   []int{exitOK, exitFault, exitUsage},
	bind:    bindResolve,
	changes: true,
}

// resolveOutput is the one JSON object resolve prints (docs/json.md).
type resolveOutput struct {
	Key    string `json:"key"`
	Resume bool   `json:"resume"`
	Reason string `json:"reason"`
	Bytes  int64  `json:"bytes"`  // the bytes staged: 0 on a cold start
	Staged string `json:"staged"` // the staged file's path
}

func bindResolve(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	fk := bindFleet(fs)
	key := fs.String("key", "", "the conversation's `KEY` (32 lowercase hex)")
	kind := fs.String("kind", "", "key material: `KIND`, the forge (github, gitlab, ..., local)")
	repo := fs.String("repo", "", "key material: `REPO`, the base repository (none for --kind local)")
	ref := fs.String("ref", "", "key material: `REF`, the head ref or issue branch (for --kind local, the trigger id)")
	jobDir := fs.String("job-dir", "", "the job's `DIR`; the transcript is staged in its session/ dir (a name with white space around it, or with a ~ or $VAR only a shell expands, is refused)")
	piVersion := fs.String("pi-version", "", "the pi `VERSION` the job's image declares (\"\" declares none: never resumes; white space around it is trimmed); required")
	venue := fs.String("venue", "local", "the backend, `NAME`, the job runs on (\"\" = unknown: never resumes, and its promotion stamps (pending), which no venue matches; white space around it is trimmed)")
	model := fs.String("model", "", "the job's `PROVIDER/ID`, for the context bound (white space around it is trimmed)")
	jobID := fs.String("job", "", "the job's `ID`, recorded in the key's history by promote")
	return func(inv *invocation) int {
		k, err := keyFromFlags(*key, *kind, *repo, *ref)
		if err == nil {
			err = utf8Flags(inv.fs, "job-dir", "pi-version", "venue", "job")
		}
		switch {
		case err != nil:
			return inv.rep.usage(err)
		case *jobDir == "":
			return inv.rep.usage(errors.New("--job-dir is required"))
		case !inv.given("pi-version"):
			return inv.rep.usage(errors.New("--pi-version is required (pass --pi-version \"\" for an image that declares none)"))
		}
		trimStamps(piVersion, venue, model)
		if err := valueLengths(inv.fs, "pi-version", "venue", "model", "job"); err != nil {
			return inv.rep.usage(err)
		}
		if w := legacyVenue(inv.given("venue"), os.Getenv("PI_BACKENDS")); w != "" {
			inv.rep.warn(w)
		}
		if err := literalName("--job-dir", *jobDir, "a job dir's name has none"); err != nil {
			return inv.rep.usage(err)
		}
		if err := pathLength("--job-dir", *jobDir); err != nil {
			return inv.rep.usage(err)
		}
		// Resolve makes the job dir, its last component only: a parent
		// that does not exist is the caller's mistake, not the store's.
		// The parent is the one the system reaches, a ".." after a link
		// included (fsat.SplitLast), as resolve's own mkdir takes it.
		parent, _ := fsat.SplitLast(*jobDir)
		if _, err := os.Stat(parent); errors.Is(err, os.ErrNotExist) {
			return inv.rep.usage(fmt.Errorf("--job-dir %s: its parent directory does not exist (resolve makes the job dir, not its parents)", quoteName(*jobDir)))
		}
		st, onFleet, done, code := openJobStore(inv, cfg, fk, nil)
		if st == nil {
			return code
		}
		defer done()
		// A missing root is every key's cold start, absent, as the legacy
		// store gave; but a typo in the root must not pass for a new
		// conversation without a word.
		if _, err := os.Stat(st.Root()); !onFleet && errors.Is(err, os.ErrNotExist) {
			inv.rep.warn(fmt.Sprintf("the sessions root %s does not exist: every key is absent (is PI_SESSIONS_DIR or --sessions-dir misspelt?)", quoteName(st.Root())))
		}
		// Resolve writes the ticket, and on a fault removes both the staged
		// file and any ticket: nothing is left here to clean up. A job dir
		// another resolve or promote is using (store.ErrJobDirBusy) is left
		// as that one leaves it.
		sess, err := st.Resolve(k, store.Job{PiVersion: *piVersion, Venue: *venue, Model: *model, ID: *jobID}, *jobDir)
		var rootErr error
		if errors.Is(err, store.ErrJobDirInStore) && !onFleet {
			_, rootErr = fsat.ResolvedPath(st.Root())
		}
		switch {
		case rootErr != nil:
			// The store's side of the comparison failed (a link loop, a
			// parent the worker may not search): the root's to fix, not
			// the job dir's.
			_, name := cfg.dirSetting(os.Getenv, "")
			return inv.rep.config(fmt.Errorf("%s: where the sessions root %s leads cannot be told (%v), so no job dir can be told apart from it", name, quoteName(st.Root()), rootErr))
		case errors.Is(err, store.ErrJobDirInStore):
			return inv.rep.usage(fmt.Errorf("--job-dir: %w", err))
		case errors.Is(err, store.ErrRootNotUTF8):
			return inv.rep.configOn(k, err)
		case errors.Is(err, fleet.ErrOtherFleet):
			// A key with no record under a prefix whose dir is marked
			// for another fleet: a misspelt prefix, exit 2 as promote's.
			return fleetError(inv, fk, err)
		case err != nil:
			return inv.rep.faultOn(k, err)
		}
		if w := legacySweep(sess.Reason, os.Getenv("PI_SWEEP_INTERVAL_HOURS")); w != "" {
			inv.rep.warnOn(k, w)
		}
		outcome := fmt.Sprintf("resolved (%s, %d bytes staged)", sess.Reason, sess.Bytes)
		return writeAnswer(inv, k, outcome, "the ticket and the staged file are written; resolve again to read it (the retry replaces both)", resolveOutput{
			Key: sess.Key, Resume: sess.Resume, Reason: string(sess.Reason), Bytes: sess.Bytes,
			Staged: stagedPath(*jobDir),
		})
	}
}

// stagedPath is the staged file's path, <job-dir>/session/current.jsonl,
// the job dir as given: cleaned, "jobs/link/../1234" would name jobs/1234,
// where the system, following the link first, reached another directory
// (resolve opened the job dir as given). Its trailing slashes alone are
// dropped by the join ("jobs/1/" gives jobs/1/session/…, as a worker's
// path join gives it; docs/json.md says so).
func stagedPath(jobDir string) string {
	return fsat.JoinUncleaned(jobDir, store.StagedDirName+"/"+store.TranscriptName)
}

// localKind is the one kind whose legacy key has no repository: a local
// job's key material is ("local", "", its trigger id).
const localKind = "local"

// keyFromFlags takes --key, or derives it from --kind/--repo/--ref as the
// legacy store did: all three, but a local key's repository, which is
// always "". A flag given an empty value counts as not given.
func keyFromFlags(key, kind, repo, ref string) (string, error) {
	material := kind != "" || repo != "" || ref != ""
	switch {
	case key != "" && material:
		return "", errors.New("give --key or --kind/--repo/--ref, not both")
	case key != "":
		if !store.ValidKey(key) {
			return "", fmt.Errorf("--key %s: %w", brief(key), store.ErrInvalidKey)
		}
		return key, nil
	case !material:
		return "", errors.New("a key is required: --key KEY, or --kind K --repo R --ref REF")
	case kind == "":
		return "", errors.New("--kind is required with --repo and --ref (the forge, or local)")
	case ref == "":
		return "", fmt.Errorf("--ref is required with --kind %s", brief(kind))
	case kind == localKind && repo != "":
		return "", fmt.Errorf("--repo %s: a local key has no repository (its material is local, \"\", the trigger id): leave --repo out", brief(repo))
	case kind != localKind && repo == "":
		return "", fmt.Errorf("--repo is required with --kind %s (the base repository; only a local key has none)", brief(kind))
	}
	return store.Key(kind, repo, ref), nil
}

// openStore builds the store from the configuration and the positional
// DIR (dirArg), or reports the configuration error and returns nil and
// the exit status.
func openStore(inv *invocation, cfg *config, dirArg string, with ...func(*store.Options)) (*store.Store, int) {
	dir, err := cfg.dir(os.Getenv, dirArg)
	if err != nil {
		return nil, inv.rep.config(err)
	}
	opts, err := storeOptions(cfg, inv, with...)
	if err != nil {
		return nil, inv.rep.config(err)
	}
	st, err := store.New(dir, opts)
	if err != nil {
		return nil, inv.rep.config(err)
	}
	return st, exitOK
}

// openWalk is openStore for a command that walks the root (dump, check,
// reap): the root must also be one a walk may descend (checkWalkRoot).
func openWalk(inv *invocation, cfg *config, with ...func(*store.Options)) (*store.Store, int) {
	st, code := openStore(inv, cfg, inv.arg(0), with...)
	if st == nil {
		return nil, code
	}
	if err := checkWalkRoot(st.Root()); err != nil {
		return nil, inv.rep.config(err)
	}
	return st, exitOK
}
