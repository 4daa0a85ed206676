package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sync"

	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/models"
	"sessdb/store/transcript"
)

var cmdPromote = &command{
	name:  "promote",
	usage: "promote [--sessions-dir DIR | --etcd-endpoints URLS --transcripts-dir DIR] --job-dir DIR --pi-version V [--require answered] [--allow-rewrite] [--models FILE] [--context-window W] [--context-tokens N]",
	short: "take a completed run's transcript back into the store, once, onto what the job was given",
	long: `
Reads the ticket resolve wrote in --job-dir and promotes the staged
transcript: only onto the generation the job was given (else superseded),
only when it begins with the bytes the job was given (else
transcript-rewritten, unless --allow-rewrite), and once per ticket (a retry
repeats the first result). The context reading and the model come from the
transcript itself. Prints one JSON object:
{"key","promoted","reason","bytes","gen","run","repeat","superseded_by","rewritten"}
(docs/json.md).

Every outcome exits 0, refusals and promote-failed included (the cause of a
failure is written on stderr). A missing or unreadable ticket exits 1, as does
one edited under the promote into another key's, and one whose job_dir names
another directory that is there: a ticket copied from another job dir, or moved
from one whose name was used again since (a job dir moved since its resolve,
its old name free, promotes), and one whose job_dir this user cannot look up.
Each writes nothing on stdout and nothing in the store. A ticket from another
sessions root exits 2 and writes nothing, as does a --pi-version longer than
4096 bytes (a legacy sidecar's most), or a sessions root (on a fleet, a
transcripts dir) that is the filesystem root, as resolve refuses it; a sessions
root (on a fleet, a transcripts dir) anyone may write to without the sticky bit
is taken, with resolve's warning. An answer that cannot be written on stdout (a
full disk, a reader gone) exits 1 after the promotion, its stderr line naming
the key and the outcome ("promoted gen 7, but the answer was not written on
stdout ..."): promote again with the same ticket to read it (a repeat). A
signal (SIGTERM, Ctrl-C) kills promote as a crash would, nothing on stdout (one
that comes after the answer was written leaves it whole there: act only on the
answer of a promote that exited 0): the promotion is committed whole or not at
all, and promote run again with the same ticket repeats it or makes it.

On a fleet (--etcd-endpoints, docs/fleet.md) the transcript is written as a
new generation file in the transcripts dir, then committed by one etcd
transaction guarded by the ticket's base. An etcd that does not answer
within --etcd-timeout (or refuses the credentials) is promote-failed (exit
0), its cause on stderr and the job's transcript left in its job dir; a
retry with the same ticket repeats the promotion if it had landed. A
transcripts dir that is another fleet's (docs/fleet.md: one transcripts
dir per fleet) exits 2 and writes nothing, the job's transcript left in
its job dir.`,
	example: `  sessdb promote --sessions-dir /var/lib/pi/sessions --job-dir /run/jobs/1234 --pi-version 0.58.3 --require answered
  PI_SESSIONS_ETCD_ENDPOINTS=http://127.0.0.1:2379 PI_SESSIONS_TRANSCRIPTS_DIR=/srv/pi/transcripts \
      sessdb promote --job-dir /run/jobs/1234 --pi-version 0.58.3 --require answered`,
	exits:   []int{exitOK, exitFault, exitUsage},
	bind:    bindPromote,
	changes: true,
}

// readTicket reads a job dir's ticket for promote. A variable, so that a
// test can resolve the job dir again between this read and the promotion,
// the window TicketFromJobDir closes.
var readTicket = store.ReadTicket

// promoteOutput is the one JSON object promote prints (docs/json.md). Its
// field names are the runner contract; every field is always present.
type promoteOutput struct {
	Key      string `json:"key"`
	Promoted bool   `json:"promoted"`
	Reason   string `json:"reason"`
	// Bytes is the promoted transcript's size; for a refusal, the staged
	// file's; null when there is no regular staged file.
	Bytes *int64 `json:"bytes"`
	// Gen is the generation promoted (a repeat's: the first promotion's);
	// null when nothing was promoted.
	Gen *uint64 `json:"gen"`
	// Run is the shape of what the job appended; null when the staged file
	// was never read.
	Run          *string `json:"run"`
	Repeat       bool    `json:"repeat"`
	SupersededBy *uint64 `json:"superseded_by"` // null unless superseded
	Rewritten    bool    `json:"rewritten"`
}

func bindPromote(fs *flag.FlagSet) func(*invocation) int {
	cfg := bindConfig(fs)
	fk := bindFleet(fs)
	jobDir := fs.String("job-dir", "", "the job's `DIR`, as given to resolve; required")
	piVersion := fs.String("pi-version", "", "the pi `VERSION` that wrote the transcript (\"\" = unknown: the next job cold-starts; white space around it is trimmed); required")
	tokens := fs.String("context-tokens", "", "override the context tokens, `N`, computed from the transcript (pi's own end-of-run reading)")
	window := fs.String("context-window", "", "the model's context window `W`; default: looked up in --models, then in pi 0.58.3's built-in models")
	require := knob{env: "PI_SESSION_PROMOTE_REQUIRE", flag: "require", help: "refuse any run but an `answered` one (run-incomplete); the only value is answered"}
	require.bind(fs)
	modelsFile := knob{env: "PI_SESSION_MODELS_FILE", flag: "models", help: "a models `FILE` in pi's models.json format, for context windows"}
	modelsFile.bind(fs)
	allowRewrite := fs.Bool("allow-rewrite", false, "promote a staged file that does not begin with the bytes the job was given (recorded as rewritten)")
	return func(inv *invocation) int {
		switch {
		case *jobDir == "":
			return inv.rep.usage(errors.New("--job-dir is required"))
		case !inv.given("pi-version"):
			return inv.rep.usage(errors.New("--pi-version is required (pass --pi-version \"\" when it is unknown)"))
		}
		if err := utf8Flags(inv.fs, "job-dir", "pi-version"); err != nil {
			return inv.rep.usage(err)
		}
		trimStamps(piVersion)
		if err := valueLengths(inv.fs, "pi-version"); err != nil {
			return inv.rep.usage(err)
		}
		if err := pathLength("--job-dir", *jobDir); err != nil {
			return inv.rep.usage(err)
		}
		req := store.PromoteRequest{PiVersion: *piVersion, AllowRewrite: *allowRewrite, TicketFromJobDir: true}
		var err error
		if req.Tokens, req.Window, err = parseReading(*tokens, *window); err != nil {
			return inv.rep.usage(err)
		}
		switch raw, name := require.get(os.Getenv); raw {
		case "":
		case string(transcript.Answered):
			req.Require = transcript.Answered
		default:
			return inv.rep.config(fmt.Errorf("%s: %s is not a requirement (the only one is %q)", name, brief(raw), transcript.Answered))
		}
		var windows store.Windows
		if path, name := modelsFile.get(os.Getenv); path != "" {
			if err := literalName(name, path, "a models file's name has none"); err != nil {
				return inv.rep.config(err)
			}
			if err := pathLength(name, path); err != nil {
				return inv.rep.config(err)
			}
			m, err := models.Load(path)
			if err != nil {
				return inv.rep.config(fmt.Errorf("%s: %w", name, err))
			}
			windows = m
		}
		// The ticket is read once: before the fleet claims its dir, which
		// it does for a ticket the promotion takes (see openJobStore).
		ticket := sync.OnceValues(func() (store.Session, error) { return readTicket(*jobDir) })
		st, onFleet, done, code := openJobStore(inv, cfg, fk, ticket, func(o *store.Options) { o.Models = windows })
		if st == nil {
			return code
		}
		defer done()
		sess, err := ticket()
		if err != nil {
			return inv.rep.fault(err)
		}
		// A promotion makes a sessions root that does not exist (a new
		// deployment's first must), but resolve warned that it was missing
		// (a misspelt root would pass for a new conversation): the root a
		// promotion made is said too, never refused. Said by the store,
		// which made it, not by a look before and after: jobs of a new
		// deployment promote at once, and each saw the root missing.
		res, err := st.Promote(sess, req)
		if !onFleet && st.MadeRoot() {
			inv.rep.warn(fmt.Sprintf("the sessions root %s did not exist: promote made it (0700, with its missing parents; is PI_SESSIONS_DIR or --sessions-dir misspelt?)", quoteName(st.Root())))
		}
		// The key names every line about it (when the ticket's is one).
		key := ""
		if store.ValidKey(sess.Key) {
			key = sess.Key
		}
		if errors.Is(err, store.ErrWrongRoot) {
			// Nothing was written: the job is pointed at the wrong store.
			return inv.rep.configOn(key, err)
		}
		if err != nil && res.Reason == "" {
			// A Session the store refused before trying anything (its
			// ticket file changed under this read into one of another
			// key): no outcome to print, and no reason a worker's code
			// knows; a fault, as a ticket that could not be read is.
			return inv.rep.faultOn(key, err)
		}
		if err != nil {
			// promote-failed is an outcome like any other (exit 0); its
			// cause is for the operator, reported once, with the key.
			inv.rep.keyFault(key, err.Error())
		}
		outcome := "refused (" + string(res.Reason) + ")"
		switch {
		case res.Promoted && res.Repeat:
			outcome = fmt.Sprintf("promoted gen %d (a repeat)", res.Gen)
		case res.Promoted:
			outcome = fmt.Sprintf("promoted gen %d", res.Gen)
		case res.Reason == gates.PromoteFailed:
			outcome = "promote-failed (the key holds the old transcript or this one)"
		}
		return writeAnswer(inv, key, outcome, "promote again with the same ticket to read it", promoteJSON(res, *jobDir))
	}
}

// promoteJSON applies the null rule to a promote result.
func promoteJSON(res store.PromoteResult, jobDir string) promoteOutput {
	out := promoteOutput{Key: res.Key, Promoted: res.Promoted, Reason: string(res.Reason), Repeat: res.Repeat, Rewritten: res.Rewritten}
	if res.Promoted {
		bytes, gen := res.Bytes, res.Gen
		out.Bytes, out.Gen = &bytes, &gen
	} else if res.Reason != gates.NotARegularFile || res.Run != "" {
		// Refused not-a-regular-file unread (no Run): the store found a
		// link, a FIFO, a directory, a device or a file of two names
		// there, and bytes is null whatever a look now finds (a second
		// name removed since would give the size of a file the store
		// never took for the run's).
		out.Bytes = stagedBytes(jobDir)
	}
	if res.Run != "" {
		run := string(res.Run)
		out.Run = &run
	}
	if res.Reason == gates.Superseded {
		by := res.SupersededBy
		out.SupersededBy = &by
	}
	return out
}

// stagedBytes is the size of the staged file a refused promotion was
// offered (too-large among them), or nil when there is no regular file
// there. The store does not report it for a refusal, so it is looked up
// here, as the store looked: the job dir opened as given, and below it
// no link followed, its session/ dir's included (a lstat of the joined
// path would follow that one), and a file of more than one name (a hard
// link) no regular file either: the store refuses it not-a-regular-file
// unread, as it refuses a link or a FIFO, and its size is some other
// name's file's.
func stagedBytes(jobDir string) *int64 {
	jd, err := fsat.OpenDir(jobDir)
	if err != nil {
		return nil
	}
	defer jd.Close()
	sd, err := fsat.OpenDirAt(jd, store.StagedDirName)
	if err != nil {
		return nil
	}
	defer sd.Close()
	st, err := fsat.LstatAt(sd, store.TranscriptName)
	if err != nil || !fsat.IsRegular(&st) || st.Nlink != 1 {
		return nil
	}
	n := st.Size
	return &n
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
