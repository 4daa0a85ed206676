package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sessdb/internal/pientry"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store"
	"sessdb/store/transcript"
)

// A Maintainer runs what an operator runs beside the jobs, for RunModel.
type Maintainer interface {
	// Inspect reports key as dump does, its verdict judged for job with
	// opts' bounds and clock, with its whole history; found is false when
	// the instance reports nothing for key (no key dir, no record).
	Inspect(key string, opts store.Options, job store.Job) (r store.KeyReport, found bool, err error)
	// Reap removes the keys expired under opts.Bounds.TTL as of opts.Now,
	// and returns them.
	Reap(opts store.Options) (removed []string, err error)
	// Check examines every key as of opts.Now (and repairs what it finds,
	// with repair), and returns its findings.
	Check(opts store.Options, repair bool) ([]store.Finding, error)
}

// A Migrator rolls every key back to the layout before the backend's
// (migrate --to-legacy), and migrates every key in it forward again
// (migrate): the key-dir store.
type Migrator interface {
	ToLegacy(opts store.Options) error
	ToDB(opts store.Options) error
}

// A Mover moves every key of the instance to another backend, or back
// (a sessions root into a fleet, and back into a root at the same path:
// docs/fleet.md); the keys are judged as if they had never moved. Side
// names where they are now: a ticket issued on another side is another
// store's there (store.ErrWrongRoot).
type Mover interface {
	Move(opts store.Options) error
	Side() string
}

// Reviser is an instance whose bases name, for a key with a record, that
// record's revision too while Revisions says so (a fleet's: docs/job.md,
// "which etcd never gives twice"): the model then wants one in every such
// ticket, and holds it only in the key's life it was read in. An instance
// that is no Reviser (a sessions root) names none. The model is told, not shown by
// the tickets: a fleet that dropped the revision from its bases would
// otherwise be judged as a root, and its promotion onto a key made anew
// with the same bytes passed.
type Reviser interface {
	Revisions() bool
}

// RunModel runs random sequences of jobs and an operator's commands on
// fresh instances of h, and compares every outcome with the reference
// model (model.go). The default is a few short sequences;
// SESSDB_MODEL_SEEDS (how many seeds, from SESSDB_MODEL_FIRST_SEED, 1 by
// default) and SESSDB_MODEL_STEPS (operations per sequence) run more, as
// .ci/long does. A mismatch prints the seed and the shortest sequence
// found that fails the same way. The fixed sequences (modelfixed.go) run
// first, every time.
func RunModel(t *testing.T, h Harness) {
	seeds, steps, first := uint64(3), uint64(40), uint64(1)
	defaults := true
	for name, p := range map[string]*uint64{"SESSDB_MODEL_SEEDS": &seeds, "SESSDB_MODEL_STEPS": &steps, "SESSDB_MODEL_FIRST_SEED": &first} {
		if v := os.Getenv(name); v != "" {
			defaults = false
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			*p = n
		}
	}
	runScenarios(t, h)
	began, ran := time.Now(), 0
	seen := map[string]int{}
	for seed := first; seed < first+seeds; seed++ {
		ops := genOps(seed, int(steps))
		step, msg, first, counts := runOpsCounting(t, h, ops)
		ran += len(ops)
		for k, n := range counts {
			seen[k] += n
		}
		if step < 0 {
			continue
		}
		short := shrink(t, h, ops[:step+1], msg)
		_, msg2, log := runOps(t, h, short)
		if msg2 == "" {
			// Not again (the order of a concurrent group is the
			// scheduler's): the sequence as it failed.
			short, log, msg2 = ops[:step+1], first, msg
		}
		t.Fatalf("seed %d: step %d of %d: %s\nshortest failing sequence found (%d operations):\n%s\n=> %s\n(again: SESSDB_MODEL_FIRST_SEED=%d SESSDB_MODEL_SEEDS=1 SESSDB_MODEL_STEPS=%d)",
			seed, step, len(ops), msg, len(short), strings.Join(log, "\n"), msg2, seed, steps)
	}
	t.Logf("model: %d seeds from %d, %d operations, in %v; outcomes %v", seeds, first, ran, time.Since(began).Round(time.Millisecond), seen)
	if !defaults {
		return
	}
	// The default sequences are few: they must still hold the retries
	// docs/job.md names, or a backend whose retries do not repeat (or
	// repeat for another transcript) passes the suite; nor may a backend
	// that lets two jobs on one base, run at once, both promote (in any
	// order of a group with a job to promote, one promotes; of one with
	// two, the other is superseded).
	for _, o := range []string{
		"retry (the same transcript) promoted (repeat)",
		"retry (the same transcript, the key moved on) promoted (repeat)",
		"retry (another of its size, the key moved on) superseded",
		"concurrent promote promoted",
		"concurrent promote superseded",
	} {
		if seen[o] == 0 {
			t.Errorf("the default sequences hold no %q: the model no longer checks it", o)
		}
	}
}

// shrink removes operations from a failing prefix, one at a time, for as
// long as what is left still fails at its last operation with the same
// kind of mismatch, in passes until one removes nothing (at most 300
// runs).
func shrink(t *testing.T, h Harness, ops []mOp, msg string) []mOp {
	kind := func(m string) string { k, _, _ := strings.Cut(m, ":"); return k }
	tries := 0
	for again := true; again && tries < 300; {
		again = false
		for i := len(ops) - 2; i >= 0 && tries < 300; i-- {
			cand := slices.Delete(slices.Clone(ops), i, i+1)
			tries++
			if step, m, _ := runOps(t, h, cand); step == len(cand)-1 && kind(m) == kind(msg) {
				ops, again = cand, true
			}
		}
	}
	return ops
}

type opKind int

const (
	opResolve opKind = iota
	opPromote
	opRetry
	opAdvance
	opInspect
	opReap
	opCheck
	opRoundTrip
	opToLegacy
	opToDB
	opMove
	opDamage
	opConcurrent
	opLocked
	opSettle
	opUnavailable
	// Only in the fixed sequences (modelfixed.go):
	opRace
)

// mOp is one operation; its numbers are interpreted against the state
// when it runs (a ticket index modulo the tickets issued), so that any
// subsequence of a sequence is a sequence.
type mOp struct {
	kind       opKind
	a, b, c, d int
}

func genOps(seed uint64, n int) []mOp {
	r := rand.New(rand.NewPCG(seed, 0x5e55db))
	ops := make([]mOp, n)
	for i := range ops {
		var k opKind
		switch x := r.IntN(100); {
		case x < 27:
			k = opResolve
		case x < 52:
			k = opPromote
		case x < 62:
			k = opRetry
		case x < 71:
			k = opAdvance
		case x < 79:
			k = opInspect
		case x < 82:
			k = opReap
		case x < 83:
			k = opDamage
		case x < 87:
			k = opCheck
		case x < 88:
			k = opRoundTrip
		case x < 89:
			k = opToLegacy
		case x < 90:
			k = opToDB
		case x < 92:
			k = opMove
		case x < 96:
			k = opConcurrent
		case x < 97:
			k = opLocked
		case x < 98:
			k = opUnavailable
		default:
			k = opSettle
		}
		ops[i] = mOp{k, r.IntN(1 << 20), r.IntN(1 << 20), r.IntN(1 << 20), r.IntN(1 << 20)}
	}
	return ops
}

// modelStart is where a sequence's clock starts: years behind the real
// one, which the files' mtimes are in, so that no advance takes it past
// them: a fleet takes a promotion date later than its file's mtime by
// more than a commit can take for a clock that is wrong, and judges the
// key by the mtime (docs/fleet.md), which no model of the job contract
// should have to know.
var modelStart = time.Date(2000, 1, 1, 12, 0, 0, 0, time.UTC)

var modelKeys = []string{store.Key("github", "acme/model", "k0"), store.Key("github", "acme/model", "k1")}

var (
	modelJobs = []store.Job{
		{PiVersion: piVersion, Venue: "local", Model: model},
		{PiVersion: piVersion, Venue: "local", Model: model},
		{PiVersion: piVersion, Venue: "local", Model: model},
		{PiVersion: piVersion, Venue: "local", Model: model},
		{PiVersion: piVersion, Venue: "local", Model: model},
		{PiVersion: piVersion, Venue: "local", Model: "openai/gpt-5"},
		{PiVersion: piVersion, Venue: "podman", Model: model},
		{PiVersion: "0.59.0", Venue: "local", Model: model},
		{PiVersion: "", Venue: "local", Model: model},
		{PiVersion: piVersion, Venue: "", Model: model},
	}
	ttl         = 14 * 24 * time.Hour
	modelBounds = []gates.Bounds{
		{}, {}, {TTL: ttl}, {MaxResumeChain: 2}, {MaxContextPct: 50}, {MaxBytes: 1500},
		{TTL: ttl, MaxResumeChain: 3, MaxContextPct: 80},
		{MaxAge: 10 * 24 * time.Hour},
	}
	advances = []time.Duration{time.Second, time.Minute, time.Hour, 3 * 24 * time.Hour, ttl}
)

// run is one sequence's state: the instance, the model, the tickets.
type run struct {
	t       *testing.T
	inst    Instance
	now     time.Time
	keys    map[string]*mKey
	tickets []*mTicket
	log     []string
	turn    int
	counts  map[string]int
	files   uint64 // transcript files promoted
	// lock is the key whose lock another holder has (opLocked), and
	// whether the jobs' resolves and promotes wait for it.
	lock struct {
		key    string
		blocks bool
	}
	// cut is a store on the instance whose metadata does not answer
	// (opUnavailable), for the jobs to run on; nil: none.
	cut func(store.Options) *store.Store
}

// store is a store on the instance with opts, for a job: the cut one
// while the metadata does not answer.
func (r *run) store(opts store.Options) *store.Store {
	if r.cut != nil {
		return r.cut(opts)
	}
	return r.inst.Open(opts)
}

// jobOpts are the options of a job's resolve or promote: a short lock
// wait while another holder has a key's lock.
func (r *run) jobOpts(b gates.Bounds) store.Options {
	o := r.opts(b)
	if r.lock.key != "" {
		o.LockTimeout = lockWait
	}
	return o
}

// lockedOut reports whether a job on key waits for the lock another
// holder has, past the lock wait.
func (r *run) lockedOut(key string) bool { return r.lock.blocks && r.lock.key == key }

// unheld is why a promote on key cannot have it for writing ("": it can).
func (r *run) unheld(key string) gates.Reason {
	switch {
	case r.lockedOut(key):
		return gates.Locked
	case r.cut != nil:
		return gates.PromoteFailed
	}
	return ""
}

// underLock names, for the counts, how key's lock is held.
func (r *run) underLock(key string) string {
	switch {
	case r.lock.key != key:
		return ""
	case r.lock.blocks:
		return " under a held lock"
	}
	return " beside a held lease lock"
}

func (r *run) side() string {
	if mv, ok := r.inst.(Mover); ok {
		return mv.Side()
	}
	return ""
}

func (r *run) opts(b gates.Bounds) store.Options {
	return store.Options{Bounds: b, Now: func() time.Time { return r.now }}
}

// runOps runs ops on a fresh instance of h and returns the index of the
// first operation whose outcome is not the model's, with why (-1: none),
// and a line per operation run.
func runOps(t *testing.T, h Harness, ops []mOp) (int, string, []string) {
	step, msg, log, _ := runOpsCounting(t, h, ops)
	return step, msg, log
}

// runOpsCounting is runOps, and counts the outcomes seen.
func runOpsCounting(t *testing.T, h Harness, ops []mOp) (int, string, []string, map[string]int) {
	r := &run{t: t, inst: h.New(t), now: modelStart, keys: map[string]*mKey{}, counts: map[string]int{}}
	for _, k := range modelKeys {
		r.keys[k] = &mKey{}
	}
	for i, op := range ops {
		t0 := time.Now()
		err := r.step(op)
		if d := time.Since(t0); d > 100*time.Millisecond && os.Getenv("SESSDB_MODEL_SLOW") != "" {
			t.Logf("slow %v: %s", d, r.log[len(r.log)-1])
		}
		if err != nil {
			return i, err.Error(), r.log, r.counts
		}
		if err := r.compareRecords(); err != nil {
			return i, err.Error(), r.log, r.counts
		}
	}
	return -1, "", r.log, r.counts
}

func (r *run) newFile() uint64 { r.files++; return r.files }

func (r *run) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%3d  ", len(r.log))+fmt.Sprintf(format, args...))
}

// compareRecords compares what the instance records for every key with
// the model.
func (r *run) compareRecords() error {
	got, err := r.readRecords()
	if err != nil {
		return err
	}
	return matchRecords(got, r.keys)
}

// recorded is what an instance records for a key.
type recorded struct {
	sc db.Sidecars
	h  []db.HistoryEntry
}

func (r *run) readRecords() (map[string]recorded, error) {
	got := map[string]recorded{}
	for _, key := range modelKeys {
		sc, h, err := r.inst.Record(key)
		if err != nil {
			return nil, fmt.Errorf("record: %s: %v", key[:6], err)
		}
		for i := range h {
			h[i].Seq = 0
		}
		got[key] = recorded{sc, h}
	}
	return got, nil
}

// matchRecords compares what an instance records (got) with the model's
// keys.
func matchRecords(got map[string]recorded, keys map[string]*mKey) error {
	for _, key := range modelKeys {
		sc, h, m := got[key].sc, got[key].h, keys[key]
		want := m.sidecars()
		if m.ownMtime && sc.Transcript != nil && want.Transcript != nil {
			// The transcript's own mtime, set by the real clock when the
			// sequence changed it, which the model knows to a day.
			if at := time.Unix(0, sc.Transcript.PromotedAt); time.Since(at) > 24*time.Hour {
				return fmt.Errorf("record: %s promoted at %v, the model the transcript's own mtime (today)", key[:6], at)
			}
			want.Transcript.PromotedAt = sc.Transcript.PromotedAt
		}
		if !reflect.DeepEqual(sc, want) {
			return fmt.Errorf("record: %s holds %s, the model %s", key[:6], showSidecars(sc), showSidecars(want))
		}
		if len(h) == 0 && len(m.history) == 0 {
			continue
		}
		if !reflect.DeepEqual(h, m.history) {
			return fmt.Errorf("history: %s:\n%s\nthe model:\n%s", key[:6], showHistory(h), showHistory(m.history))
		}
	}
	return nil
}

func (r *run) step(op mOp) error {
	switch op.kind {
	case opResolve:
		return r.resolve(op)
	case opPromote:
		return r.promote(op)
	case opRetry:
		return r.retry(op)
	case opAdvance:
		d := advances[op.a%len(advances)]
		r.now = r.now.Add(d)
		r.logf("clock +%v", d)
	case opInspect:
		return r.inspect(op)
	case opReap:
		return r.reap()
	case opCheck:
		return r.check(op.a%2 == 1)
	case opRoundTrip:
		if err := r.migrate(true); err != nil {
			return err
		}
		return r.migrate(false)
	case opToLegacy:
		return r.migrate(true)
	case opToDB:
		return r.migrate(false)
	case opDamage:
		return r.damage(op)
	case opConcurrent:
		return r.concurrent(op)
	case opLocked:
		return r.locked(op)
	case opSettle:
		return r.settle(op)
	case opUnavailable:
		return r.unavailable(op)
	case opRace:
		return r.race(op)
	case opMove:
		mv, ok := r.inst.(Mover)
		if !ok {
			r.logf("move: not a Mover")
			return nil
		}
		if err := mv.Move(r.opts(gates.Bounds{})); err != nil {
			return fmt.Errorf("move: %v", err)
		}
		for _, m := range r.keys {
			m.life++ // every record made again on the other side, anew
		}
		r.logf("moved to %s", mv.Side())
	}
	return nil
}

func (r *run) resolve(op mOp) error {
	key := modelKeys[op.a%len(modelKeys)]
	job := modelJobs[op.b%len(modelJobs)]
	job.ID = fmt.Sprint("job-", len(r.tickets))
	b := modelBounds[op.c%len(modelBounds)]
	jobDir, reused := r.t.TempDir(), ""
	if op.d%6 == 0 && len(r.tickets) > 0 {
		// A job dir reused: the resolve replaces what an earlier job left.
		prev := r.tickets[len(r.tickets)-1-op.d/6%min(len(r.tickets), 3)]
		jobDir, reused = prev.jobDir, " in "+prev.job.ID+"'s job dir"
	}
	r.logf("resolve %s as %s (%+v) with %+v%s", key[:6], job.ID, job, b, reused)
	sess, err := r.store(r.jobOpts(b)).Resolve(key, job, jobDir)
	if err != nil {
		return fmt.Errorf("resolve: %v", err)
	}
	var unread gates.Reason
	switch {
	case r.lockedOut(key):
		unread = gates.Locked
	case r.cut != nil:
		unread = gates.StoreUnavailable
	}
	tk, err := r.judgeResolve(r.keys[key], b, job, jobDir, sess, unread)
	if err != nil {
		return err
	}
	if unread != "" && sess.Reason != unread {
		return fmt.Errorf("verdict: resolve of %s = {%v %s}, the model %s", key[:6], sess.Resume, sess.Reason, unread)
	}
	r.tickets = append(r.tickets, tk)
	r.logf("     = {%v %s} %d bytes, base gen %d", sess.Resume, sess.Reason, sess.Bytes, sess.Base.Gen)
	r.counts["resolve "+string(sess.Reason)+r.underLock(key)]++
	return nil
}

// judgeResolve compares what a resolve issued (sess, and the job dir's
// staged file) with the model's m, judged for job with b, and returns the
// ticket as the model holds it. A resolve that could not have the key's
// lock (locked) read nothing of it: a cold start with no base, which the
// ticket's promote then treats as a key that holds nothing (docs/job.md).
// unread is the reason a resolve may give for a key it could not read
// (locked, store-unavailable), or "".
func (r *run) judgeResolve(m *mKey, b gates.Bounds, job store.Job, jobDir string, sess store.Session, unread gates.Reason) (*mTicket, error) {
	key := sess.Key
	reason := m.verdict(b, job, r.now)
	tk := &mTicket{key: key, job: job, sess: sess, resume: reason == gates.Resumed, reason: reason, base: m.base(), jobDir: jobDir, side: r.side()}
	locked := unread != "" && sess.Reason == unread
	if locked {
		tk.resume, tk.reason, tk.base = false, unread, mBase{}
		reason = unread
	}
	if rv, ok := r.inst.(Reviser); ok && rv.Revisions() && tk.base.gen != 0 {
		// A fleet's base: its record's revision, the key's life.
		tk.base.rev, tk.base.life = true, m.life
	}
	if tk.resume {
		tk.given = bytes.Clone(m.data)
	}
	got, err := os.ReadFile(stagedPath(jobDir))
	if err != nil {
		return nil, fmt.Errorf("resolve: staged: %v", err)
	}
	base := store.Base{Gen: tk.base.gen, Size: tk.base.size, CRC32C: store.Checksum(tk.base.crc)}
	if tk.base.rev {
		base.Rev = sess.Base.Rev // which revision, the model does not know
	}
	if tk.base.file != 0 {
		// The file's identity, which the model does not know, and
		// (docs/job.md) the size and checksum of what was delivered.
		base.File = sess.Base.File
		if tk.resume {
			base.Size, base.CRC32C = int64(len(tk.given)), store.Checksum(crc32.Checksum(tk.given, castagnoli))
		}
	}
	switch {
	case tk.base.rev && sess.Base.Rev <= 0:
		return nil, fmt.Errorf("base: %+v names no revision; a fleet's names its record's (docs/job.md)", sess.Base)
	case (sess.Base.File != nil) != (tk.base.file != 0):
		return nil, fmt.Errorf("base: %+v, the model %+v (a legacy key's file: %v)", sess.Base, base, tk.base.file != 0)
	case sess.Resume != tk.resume || sess.Reason != reason:
		return nil, fmt.Errorf("verdict: resolve of %s = {%v %s}, the model {%v %s}", key[:6], sess.Resume, sess.Reason, tk.resume, reason)
	case !bytes.Equal(got, tk.given) || sess.Bytes != int64(len(tk.given)):
		return nil, fmt.Errorf("staged: %d bytes staged (session says %d), the model %d", len(got), sess.Bytes, len(tk.given))
	case tk.resume && sess.CRC32C != store.Checksum(crc32.Checksum(tk.given, castagnoli)):
		return nil, fmt.Errorf("staged: CRC32C %s", sess.CRC32C)
	case sess.Base != base:
		return nil, fmt.Errorf("base: %+v, the model %+v", sess.Base, base)
	}
	if back, err := store.ReadTicket(jobDir); err != nil || !reflect.DeepEqual(back, sess) {
		return nil, fmt.Errorf("ticket: read back %+v, %v; issued %+v", back, err, sess)
	}
	return tk, nil
}

// stageFor writes the job dir's staged file as variant v, and returns it
// (nil: none), with the variant's name.
func (r *run) stageFor(tk *mTicket, v, tokens int) ([]byte, string, error) {
	p := stagedPath(tk.jobDir)
	cur, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		cur, err = nil, nil
	}
	if err != nil {
		return nil, "", err
	}
	from := tk.given
	if len(from) == 0 {
		from = header(r.now) // pi writes its header into an empty file
	}
	r.turn++
	tag := fmt.Sprint("t", r.turn)
	lines := bytes.SplitAfter(tk.given, []byte("\n"))
	lines = lines[:len(lines)-1]
	var data []byte
	var name string
	switch v % 16 {
	case 0, 1, 2, 3:
		name, data = "grown, answered", modelTurn(from, tag, int64(tokens))
	case 4:
		name, data = "grown, unanswered", pientry.Message(from, "u-"+tag, "user", "prompt "+tag, "", 0)
	case 5:
		name, data = "grown, errored", pientry.Message(pientry.Message(from, "u-"+tag, "user", "q", "", 0), "a-"+tag, "assistant", "", "error", 0)
	case 6:
		name, data = "unchanged", bytes.Clone(tk.given)
	case 7:
		name, data = "emptied", []byte{}
	case 8:
		name = "removed"
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
		return nil, name, nil
	case 9:
		if len(lines) < 3 {
			name, data = "replaced", modelTurn(header(r.now.Add(time.Second)), tag, int64(tokens))
		} else {
			name, data = "shrunk", bytes.Join(lines[:len(lines)-1], nil)
		}
	case 10:
		name, data = "replaced", modelTurn(header(r.now.Add(time.Second)), tag, int64(tokens))
	case 11:
		name, data = "torn", append(modelTurn(from, tag, int64(tokens)), `{"type":"message","id":"00`...)
	case 12:
		name = "kept"
		if fi, err := os.Lstat(p); err == nil && (fi.Mode()&os.ModeSymlink != 0 || linkCount(fi) > 1) {
			return nil, name, errLinked
		}
		return cur, name, nil
	case 14, 15:
		// A link in the staged file's place (a symbolic one to a run's
		// transcript outside, or a hard link): never read.
		name = "a symbolic link"
		outside := filepath.Join(r.t.TempDir(), "outside.jsonl")
		if err := os.WriteFile(outside, modelTurn(from, tag, int64(tokens)), 0o600); err != nil {
			return nil, "", err
		}
		os.Remove(p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, "", err
		}
		link := os.Symlink
		if v%16 == 15 {
			name, link = "a hard link", os.Link
		}
		if err := link(outside, p); err != nil {
			return nil, "", err
		}
		return nil, name, errLinked
	case 13:
		base := cur
		if len(base) == 0 || base[len(base)-1] != '\n' {
			base = from
		}
		name, data = "grown again", modelTurn(base, tag, int64(tokens))
	}
	if err := os.MkdirAll(filepathDir(p), 0o700); err != nil {
		return nil, "", err
	}
	os.Remove(p)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return nil, "", err
	}
	return data, name, nil
}

// modelTurn is turn with entry ids of the sequence's own (tag is new to
// each staged file): turn numbers its ids by a count of the whole
// process, whose digits would make a sequence's sizes, and so its
// verdicts under a byte bound, depend on what ran before it, and a seed
// fail in a long run but not when run again alone.
func modelTurn(data []byte, tag string, total int64) []byte {
	data = pientry.Message(data, "u-"+tag, "user", "prompt "+tag, "", 0)
	return pientry.Message(data, "a-"+tag, "assistant", "answer "+tag, "stop", total)
}

func filepathDir(p string) string { return filepath.Dir(p) }

// linkCount is fi's number of hard links, 1 where the system says none.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// errLinked is stageFor's word for a staged file that is a link.
var errLinked = errors.New("the staged file is a link")

func (r *run) promote(op mOp) error {
	if len(r.tickets) == 0 {
		r.logf("promote: no ticket yet")
		return nil
	}
	// Recent tickets more often than old ones.
	i := len(r.tickets) - 1 - op.a%min(len(r.tickets), 1+op.a%6)
	tk := r.tickets[i]
	staged, variant, err := r.stageFor(tk, op.b, 1000+op.c%199000)
	linked := errors.Is(err, errLinked)
	if err != nil && !linked {
		return fmt.Errorf("stage: %v", err)
	}
	return r.promoteStaged(op, i, tk, staged, variant, linked, "promote")
}

// retry promotes again a ticket that made a generation, as a runner does
// after a timeout or a lost answer (docs/job.md): its job dir holding the
// very transcript it promoted, which repeats the first result, or (pi run
// again in the job dir) another of the same size, which does not, also
// once the key has moved on. op.b chooses which, each half the time.
func (r *run) retry(op mOp) error {
	var done []int
	for i, tk := range r.tickets {
		if tk.promoted != nil {
			done = append(done, i)
		}
	}
	if len(done) == 0 {
		r.logf("retry: no ticket promoted yet")
		return nil
	}
	i := done[len(done)-1-op.a%min(len(done), 2)]
	tk := r.tickets[i]
	other := op.b%2 == 1
	if m := r.keys[tk.key]; op.b/2%3 != 0 && tk.side == r.side() && m.recGen() == tk.promotedGen && slices.ContainsFunc(m.history, tk.madeBy) {
		// Mostly the harder case: another job promotes onto the key
		// first, so that its record no longer describes the ticket's
		// generation and the retry is told by the history alone.
		if err := r.moveOn(tk); err != nil {
			return err
		}
	}
	staged, variant := bytes.Clone(tk.promoted), "the same transcript"
	if other {
		// Another answer of the same length: the first letter of the last
		// message's text changes case.
		for j := len(staged); j > 0; {
			j = bytes.LastIndex(staged[:j], []byte(`"text":"`))
			if j < 0 {
				break
			}
			if c := staged[j+len(`"text":"`)]; 'a' <= c && c <= 'z' {
				staged[j+len(`"text":"`)] ^= 0x20
				variant = "another of its size"
				break
			}
		}
	}
	p := stagedPath(tk.jobDir)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("stage: %v", err)
	}
	os.Remove(p)
	if err := os.WriteFile(p, staged, 0o600); err != nil {
		return fmt.Errorf("stage: %v", err)
	}
	if op.c%13 != 0 && r.movedOn(tk) { // not edited to name the other key (promoteStaged)
		variant += ", the key moved on"
	}
	return r.promoteStaged(op, i, tk, staged, variant, false, "retry")
}

// movedOn reports whether tk's key holds a later generation than tk's
// promotion, whose entry its history still holds.
func (r *run) movedOn(tk *mTicket) bool {
	m := r.keys[tk.key]
	return m.recGen() > tk.promotedGen && slices.ContainsFunc(m.history, tk.madeBy)
}

// moveOn resolves a new job on tk's key and promotes its answer: a plain
// job, no bound, no interruption.
func (r *run) moveOn(tk *mTicket) error {
	r.logf("     first another job on key %s:", tk.key[:6])
	if err := r.resolve(mOp{kind: opResolve, a: slices.Index(modelKeys, tk.key), d: 1}); err != nil {
		return err
	}
	i := len(r.tickets) - 1
	nt := r.tickets[i]
	plain := mOp{kind: opPromote, c: 1, d: 2}
	staged, variant, err := r.stageFor(nt, 0, 1000+plain.c)
	if err != nil {
		return fmt.Errorf("stage: %v", err)
	}
	return r.promoteStaged(plain, i, nt, staged, variant, false, "promote")
}

// promoteRequest is the request op chooses for tk's promote, its job dir
// holding the variant named, with pi's own reading of the run where the
// request gives no tokens, and the byte cap to promote under.
func promoteRequest(op mOp, tk *mTicket, staged []byte, variant string) (req store.PromoteRequest, reading *int64, maxBytes int64) {
	req = store.PromoteRequest{PiVersion: tk.job.PiVersion}
	if op.d%5 == 0 {
		req.PiVersion = "0.59.0"
	}
	if op.d%4 == 1 {
		req.Require = transcript.Answered
	}
	if op.d%7 == 2 || op.d%7 == 3 {
		req.AllowRewrite = true
	}
	tokens := int64(1000 + op.c%199000)
	req.Tokens = &tokens
	// pi's own reading, where the run ended in an answer whose usage is
	// tokens: the context is that usage (docs/job.md), nothing after it.
	switch variant {
	case "grown, answered", "replaced", "grown again", "torn":
		if op.c%3 == 0 {
			reading, req.Tokens = &tokens, nil
		}
	default:
		// The run's own reading where the docs settle it: an answer
		// the job was given, nothing appended after it.
		if r, known := branchReading(staged); known && op.c%3 == 0 {
			reading, req.Tokens = r, nil
		}
	}
	if op.d%3 == 0 {
		req.Window = 100000
	}
	if op.d%9 == 4 {
		maxBytes = 1500
	}
	return req, reading, maxBytes
}

// promoteStaged promotes ticket i, tk, its job dir holding staged (the
// variant named), with a request and an interruption chosen by op.
func (r *run) promoteStaged(op mOp, i int, tk *mTicket, staged []byte, variant string, linked bool, what string) error {
	req, reading, maxBytes := promoteRequest(op, tk, staged, variant)
	if op.c%13 == 0 {
		// A ticket edited to name the other key: its base, its ticket id
		// and what it was given are the first key's.
		x := *tk
		x.key = modelKeys[0]
		if tk.key == x.key {
			x.key = modelKeys[1]
		}
		x.sess.Key = x.key
		x.base.elsewhere = x.sess.Base.Rev != 0
		tk = &x
		r.logf("     the ticket edited to name key %s", x.key[:6])
	}
	m := r.keys[tk.key]
	trial := m.clone()
	want := trial.promote(tk, mPromote{staged: staged, linked: linked, req: req, reading: reading, maxBytes: maxBytes, now: r.now, newFile: r.newFile, unheld: r.unheld(tk.key)})
	// An interruption, armed only for a promotion that writes: it stays
	// armed for the next promotion otherwise.
	var stop Point
	if in, ok := r.inst.(Interrupter); ok && want.Promoted && !want.Repeat {
		switch op.d % 11 {
		case 5:
			stop = BeforeCommit
		case 6:
			stop = AfterCommit
		}
		if stop != "" {
			in.Interrupt(stop)
		}
	}
	r.logf("%s ticket %d (%s, key %s, resolved %s) staged %s (%d bytes), %+v, max bytes %d, interrupted %q",
		what, i, tk.job.ID, tk.key[:6], tk.reason, variant, len(staged), showReq(req), maxBytes, stop)
	res, err := r.store(r.jobOpts(gates.Bounds{MaxBytes: maxBytes})).Promote(tk.sess, req)
	if tk.side != r.side() {
		// Another store's ticket: exit 2, nothing written.
		if !errors.Is(err, store.ErrWrongRoot) || res.Promoted {
			return fmt.Errorf("promote: a ticket issued on %s, promoted on %s: %+v, %v; want ErrWrongRoot", tk.side, r.side(), res, err)
		}
		r.logf("     = %v", err)
		r.counts["promote of another side's ticket"]++
		return nil
	}
	if stop != "" {
		// A crash or a lost answer: promote-failed with its cause; the
		// key as it was before the commit, the new generation after.
		if err == nil || res.Promoted || res.Reason != gates.PromoteFailed {
			return fmt.Errorf("promote: interrupted %s: %+v, %v; want promote-failed with its cause", stop, res, err)
		}
		if stop == AfterCommit {
			*m = *trial
			tk.promoted, tk.promotedGen = staged, want.Gen
		}
		r.logf("     = %s (%v)", res.Reason, err)
		r.counts["promote interrupted "+string(stop)]++
		return nil
	}
	if want.Reason == gates.PromoteFailed {
		// The metadata silent: a fault, nothing changed, the run's
		// transcript left in the job dir for a retry (docs/fleet.md).
		if err == nil || res != want {
			return fmt.Errorf("promote: %+v, %v; the model %+v, with its cause", res, err, want)
		}
		// The harness made the job dir and plays its container: its path
		// is trusted.
		if now, err := os.ReadFile(stagedPath(tk.jobDir)); err != nil || !bytes.Equal(now, staged) {
			return fmt.Errorf("promote: the job dir holds %d bytes after a promote-failed (%v), not the run's %d", len(now), err, len(staged))
		}
		r.logf("     = %s (%v)", res.Reason, err)
		r.counts["promote promote-failed (metadata silent)"]++
		return nil
	}
	if err != nil {
		return fmt.Errorf("promote: %v", err)
	}
	*m = *trial
	if res != want {
		return fmt.Errorf("promote: %+v\nthe model %+v", res, want)
	}
	r.logf("     = %+v", res)
	if res.Promoted && !res.Repeat {
		tk.promoted, tk.promotedGen = staged, res.Gen
	}
	o := "promote " + string(res.Reason)
	if what == "retry" {
		o = "retry (" + variant + ") " + string(res.Reason)
	}
	if res.Repeat {
		o += " (repeat)"
	}
	if tk.base.file != 0 {
		o += " (a legacy key's ticket)"
	}
	r.counts[o+r.underLock(tk.key)]++
	if req.Tokens == nil && res.Promoted && !res.Repeat {
		r.counts["promoted with the run's own reading ("+variant+")"]++
	}
	return nil
}

func (r *run) inspect(op mOp) error {
	mt, ok := r.inst.(Maintainer)
	if !ok {
		r.logf("inspect: not a Maintainer")
		return nil
	}
	key := modelKeys[op.a%len(modelKeys)]
	job := modelJobs[op.b%len(modelJobs)]
	b := modelBounds[op.c%len(modelBounds)]
	r.logf("inspect %s for %+v with %+v", key[:6], job, b)
	rep, found, err := mt.Inspect(key, r.opts(b), job)
	if err != nil {
		return fmt.Errorf("inspect: %v", err)
	}
	m := r.keys[key]
	if !found {
		if m.gen != 0 {
			return fmt.Errorf("inspect: %s reports nothing, the model gen %d", key[:6], m.gen)
		}
		return nil
	}
	reason := m.verdict(b, job, r.now)
	var got string
	if rep.Verdict != nil {
		got = rep.Verdict.Reason
	}
	if got != string(reason) {
		return fmt.Errorf("inspect: %s verdict %q (%+v), the model %q", key[:6], got, rep.Verdict, reason)
	}
	if m.gen == 0 {
		return nil
	}
	if m.legacy {
		if rep.Layout != store.LayoutLegacy {
			return fmt.Errorf("inspect: %s layout %q, the model legacy", key[:6], rep.Layout)
		}
		return nil
	}
	sc := m.sidecars()
	var ctx *store.ContextReport
	if c := sc.Context; c != nil {
		ctx = store.NewContextReport(c.Tokens, c.Window, c.Model)
	}
	last := m.promotedAt.UTC()
	switch {
	case rep.Gen != m.gen || rep.RecordBytes == nil || *rep.RecordBytes != int64(len(m.data)):
		return fmt.Errorf("inspect: %s gen %d bytes %v, the model %d, %d", key[:6], rep.Gen, rep.RecordBytes, m.gen, len(m.data))
	case rep.LastPromotion == nil || !m.ownMtime && !rep.LastPromotion.Equal(last):
		return fmt.Errorf("inspect: %s last promotion %v, the model %v", key[:6], rep.LastPromotion, last)
	case !reflect.DeepEqual(rep.PiVersion, sc.PiVersion) || !reflect.DeepEqual(rep.Venue, sc.Venue) || !reflect.DeepEqual(rep.ResumeChain, sc.ResumeChain):
		return fmt.Errorf("inspect: %s stamps %v %v %v, the model %v %v %v", key[:6], deref(rep.PiVersion), deref(rep.Venue), deref(rep.ResumeChain),
			deref(sc.PiVersion), deref(sc.Venue), deref(sc.ResumeChain))
	case !reflect.DeepEqual(rep.Context, ctx):
		return fmt.Errorf("inspect: %s context %+v, the model %+v", key[:6], rep.Context, ctx)
	}
	var hist []db.HistoryEntry
	for _, x := range rep.History {
		if x.Outcome == string(gates.Promoted) {
			x.Outcome = "" // docs/json.md: a promotion's outcome is "promoted"
		}
		hist = append(hist, db.HistoryEntry{Gen: x.Gen, At: x.At.UnixNano(), Outcome: x.Outcome, Resumed: x.Resumed, Reason: x.Reason,
			Bytes: x.Bytes, Chain: x.Chain, Job: x.Job, Ticket: x.Ticket, BaseGen: x.BaseGen, Run: x.Run, TornTail: x.TornTail, Rewritten: x.Rewritten})
	}
	want := slices.Clone(m.history)
	for i := range want {
		want[i].CRC32C = 0 // dump reports none
	}
	if !reflect.DeepEqual(hist, want) && !(len(hist) == 0 && len(want) == 0) {
		return fmt.Errorf("inspect: %s history:\n%s\nthe model:\n%s", key[:6], showHistory(hist), showHistory(want))
	}
	return nil
}

func (r *run) reap() error {
	mt, ok := r.inst.(Maintainer)
	if !ok {
		r.logf("reap: not a Maintainer")
		return nil
	}
	r.logf("reap, TTL %v", ttl)
	removed, err := mt.Reap(r.opts(gates.Bounds{TTL: ttl}))
	if err != nil {
		return fmt.Errorf("reap: %v", err)
	}
	if err := reapModel(r.keys, r.now, removed); err != nil {
		return err
	}
	r.logf("     = removed %d", len(removed))
	return nil
}

// reapModel reaps keys as of now, as a reap that removed the keys named
// must have, and says how it did not.
func reapModel(keys map[string]*mKey, now time.Time, removed []string) error {
	var want []string
	for _, key := range modelKeys {
		if m := keys[key]; m.gen != 0 && now.Sub(m.promotedAt) > ttl {
			want = append(want, key)
			m.remove()
		}
	}
	// An empty key dir (a refused first promotion's, docs/operations.md)
	// holds no key, and its reap by the dir's own clock is the backend's:
	// a key the model holds nothing for may be removed too.
	removed = slices.DeleteFunc(slices.Sorted(slices.Values(removed)), func(k string) bool {
		m, ok := keys[k]
		return ok && m.gen == 0 && !slices.Contains(want, k)
	})
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		return fmt.Errorf("reap: removed %v, the model %v", removed, want)
	}
	return nil
}

// damage changes a byte of a key's transcript out of band, its size
// kept: transcript-replaced where it would resume, until the next
// promotion, which the cold jobs make onto the record's base; a rollback
// stamps the key's venue (pending) (docs/migration.md). Promotions left
// pending by an interruption are rolled forward first (check --repair),
// so that the byte changed is the key's transcript's.
func (r *run) damage(op mOp) error {
	dm, ok := r.inst.(Damager)
	key := modelKeys[op.a%len(modelKeys)]
	m := r.keys[key]
	if !ok || m.gen == 0 || m.legacy || m.disk != nil {
		r.logf("damage: none (%s gen %d)", key[:6], m.gen)
		return nil
	}
	if err := r.check(true); err != nil {
		return err
	}
	r.logf("damage %s: a byte of its transcript changed", key[:6])
	if err := dm.Damage(key, DamageTranscriptChanged); err != nil {
		return fmt.Errorf("damage: %v", err)
	}
	m.disk = bytes.Clone(m.data)
	m.disk[len(m.disk)-5] ^= 0x20
	// Written in place: its mtime, and so a legacy ticket's base, is new.
	r.files++
	m.file = r.files
	return nil
}

func (r *run) check(repair bool) error {
	mt, ok := r.inst.(Maintainer)
	if !ok {
		r.logf("check: not a Maintainer")
		return nil
	}
	r.logf("check, repair %v", repair)
	found, err := mt.Check(r.opts(gates.Bounds{}), repair)
	if err != nil {
		return fmt.Errorf("check: %v", err)
	}
	return r.judgeFindings(found, repair)
}

// judgeFindings says which of a check's findings a store that only its
// jobs wrote must not have.
func (r *run) judgeFindings(found []store.Finding, repair bool) error {
	for _, f := range found {
		// An interrupted promotion's pending temp is a crash's, which the
		// sequence had, and its repair a roll-forward (the records after
		// it must be the model's still).
		if f.Kind == store.KindPendingPromotion && (!repair || f.Repaired && !f.Remains) {
			continue
		}
		if m, ok := r.keys[f.Key]; ok && m.disk != nil {
			continue // the damage the sequence made: an operator's to settle
		}
		if f.Severity == store.SeverityProblem {
			return fmt.Errorf("check: a store only its jobs wrote has a problem: %+v", f)
		}
	}
	return nil
}

// migrate rolls every key back to the legacy layout (docs/migration.md:
// the record and the history dropped, the stamps in sidecar files, the
// transcript's mtime the last promotion), or migrates every legacy key
// forward (the transcript generation 1, promoted at that mtime, no
// history). Every verdict is kept either way.
func (r *run) migrate(toLegacy bool) error {
	mg, ok := r.inst.(Migrator)
	if !ok {
		r.logf("migrate: not a Migrator")
		return nil
	}
	var err error
	if toLegacy {
		r.logf("migrate --to-legacy")
		err = mg.ToLegacy(r.opts(gates.Bounds{}))
	} else {
		r.logf("migrate")
		err = mg.ToDB(r.opts(gates.Bounds{}))
	}
	if err != nil {
		return fmt.Errorf("migrate: %v", err)
	}
	for _, m := range r.keys {
		switch {
		case m.gen == 0:
		case toLegacy && m.disk != nil:
			// No record to hold the transcript to: the key stays cold,
			// and its transcript keeps its own mtime (the damage's, on
			// the real clock), not the record's date, which would make it
			// a legacy ticket's base again.
			m.legacy, m.history, m.data, m.disk, m.venue = true, nil, m.disk, nil, "(pending)"
			m.promotedAt, m.ownMtime = time.Now(), true
		case toLegacy:
			m.legacy, m.history = true, nil
		case m.legacy:
			m.legacy, m.gen = false, 1
		}
	}
	return nil
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func showReq(q store.PromoteRequest) string {
	return fmt.Sprintf("{pi %q require %q allow-rewrite %v tokens %v window %d}", q.PiVersion, q.Require, q.AllowRewrite, deref(q.Tokens), q.Window)
}

func showSidecars(sc db.Sidecars) string {
	return fmt.Sprintf("{transcript %+v pi %v venue %v chain %v context %+v}", deref(sc.Transcript), deref(sc.PiVersion), deref(sc.Venue), deref(sc.ResumeChain), deref(sc.Context))
}

func showHistory(h []db.HistoryEntry) string {
	var b strings.Builder
	for _, e := range h {
		fmt.Fprintf(&b, "  %+v\n", e)
	}
	return b.String()
}
