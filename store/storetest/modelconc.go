package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// RunModel's operations that run at once with others, or beside a lock
// another holder has: what the model accepts of them is every outcome
// some order of them would have had (they are linearizable), and exactly
// those outcomes.

// A Locker holds a key's lock as another process would, for RunModel.
type Locker interface {
	// Lock takes key's lock and holds it until unlock is called.
	// blocksJobs says whether a job's resolve and promote on the key
	// wait for it (a sessions root's meta.db lock) or never take it (a
	// fleet's lease-backed lock, which only reap and repair take:
	// docs/fleet.md). errors.ErrUnsupported: the key has no lock to take.
	Lock(key string) (unlock func(), blocksJobs bool, err error)
}

// lockWait is the jobs' lock wait while another holder has a key's lock.
const lockWait = 50 * time.Millisecond

// locked runs a resolve or a promote on a key whose lock another holder
// has: locked, where the job waits for that lock (README.md; a resolve's
// ticket then has no base, docs/job.md), the outcome it would have had
// otherwise where it does not.
func (r *run) locked(op mOp) error {
	lk, ok := r.inst.(Locker)
	key := modelKeys[op.a%len(modelKeys)]
	if m := r.keys[key]; !ok || m.gen == 0 || m.legacy {
		r.logf("lock: none (%s gen %d)", key[:6], m.gen)
		return nil
	}
	unlock, blocks, err := lk.Lock(key)
	if errors.Is(err, errors.ErrUnsupported) {
		r.logf("lock: none (%s: %v)", key[:6], err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("lock: %v", err)
	}
	defer func() { unlock(); r.lock.key, r.lock.blocks = "", false }()
	r.lock.key, r.lock.blocks = key, blocks
	r.logf("lock %s held by another (jobs wait for it: %v)", key[:6], blocks)
	if op.b%2 == 0 {
		return r.resolve(mOp{kind: opResolve, a: op.a, b: op.c, c: op.d, d: op.b/2 + 1})
	}
	// A promote of one of the key's tickets.
	var on []int
	for i, tk := range r.tickets {
		if tk.key == key && tk.side == r.side() {
			on = append(on, i)
		}
	}
	if len(on) == 0 {
		r.logf("     no ticket on %s", key[:6])
		return nil
	}
	i := on[len(on)-1-op.c%min(len(on), 3)]
	tk := r.tickets[i]
	// Never the ticket edited to name the other key: the lock is this one's.
	pop := mOp{kind: opPromote, a: op.a, b: op.d, c: op.c - op.c%13 + 1, d: op.d}
	staged, variant, err := r.stageFor(tk, op.d, 1000+pop.c%199000)
	linked := errors.Is(err, errLinked)
	if err != nil && !linked {
		return fmt.Errorf("stage: %v", err)
	}
	return r.promoteStaged(pop, i, tk, staged, variant, linked, "promote")
}

// conc is one operation of a concurrent group, and what it returned.
type conc struct {
	what string // "promote", "resolve", "reap", "check"
	// promote
	i        int
	tk       *mTicket
	staged   []byte
	variant  string
	linked   bool
	req      store.PromoteRequest
	reading  *int64
	maxBytes int64
	res      store.PromoteResult
	lockWait time.Duration // the promote's lock wait; 0: the default
	// resolve
	job    store.Job
	bounds gates.Bounds
	jobDir string
	sess   store.Session
	// reap
	removed []string
	// check
	repair bool
	found  []store.Finding

	err error
}

// concurrent resolves two or three jobs on one key, one after another,
// stages their runs, and then promotes them all at once, with, at times,
// another job's resolve, a reap (the clock first moved past the TTL) and
// a check running at the same time. One order of the group must give
// every result it gave and leave the record and history the key has.
func (r *run) concurrent(op mOp) error {
	rng := rand.New(rand.NewPCG(uint64(op.a), uint64(op.b)<<20|uint64(op.c)))
	ki := op.a % len(modelKeys)
	key := modelKeys[ki]
	n := 2 + rng.IntN(2)
	r.logf("concurrent: %d jobs on %s", n, key[:6])
	first := len(r.tickets)
	for range n {
		if err := r.resolve(mOp{kind: opResolve, a: ki, b: rng.IntN(6), c: rng.IntN(len(modelBounds)), d: 1}); err != nil {
			return err
		}
	}
	_, maint := r.inst.(Maintainer)
	withReap := maint && rng.IntN(3) == 0
	if withReap && rng.IntN(2) == 0 {
		r.now = r.now.Add(ttl + time.Hour)
		r.logf("clock +%v", ttl+time.Hour)
	}
	var group []*conc
	for i := first; i < len(r.tickets); i++ {
		tk := r.tickets[i]
		c := &conc{what: "promote", i: i, tk: tk}
		pop := mOp{kind: opPromote, c: rng.IntN(1 << 20), d: rng.IntN(1 << 20)}
		pop.c -= pop.c%13 - 1 // the ticket as issued
		var err error
		c.staged, c.variant, err = r.stageFor(tk, rng.IntN(16), 1000+pop.c%199000)
		c.linked = errors.Is(err, errLinked)
		if err != nil && !c.linked {
			return fmt.Errorf("stage: %v", err)
		}
		c.req, c.reading, c.maxBytes = promoteRequest(pop, tk, c.staged, c.variant)
		group = append(group, c)
	}
	if rng.IntN(2) == 0 {
		job := modelJobs[rng.IntN(6)]
		job.ID = fmt.Sprint("job-", len(r.tickets)+len(group))
		group = append(group, &conc{what: "resolve", job: job, bounds: modelBounds[rng.IntN(len(modelBounds))], jobDir: r.t.TempDir()})
	}
	if withReap {
		group = append(group, &conc{what: "reap"})
	}
	if maint && rng.IntN(3) == 0 {
		group = append(group, &conc{what: "check", repair: rng.IntN(2) == 0})
	}
	return r.runGroup(key, group, false)
}

// runGroup runs group's operations on key at once, and finds an order of
// them that gives every result they gave and the records the instance
// holds after them; the model is then the model after that order. lined:
// the group is promotes only, lined up where the instance is a Starter.
func (r *run) runGroup(key string, group []*conc, lined bool) error {
	mt, _ := r.inst.(Maintainer)
	left, done := func() {}, func() {}
	if st, ok := r.inst.(Starter); ok && lined {
		left, done = st.Line(len(group))
	}
	for _, c := range group {
		switch c.what {
		case "promote":
			r.logf("     promote ticket %d (%s, resolved %s) staged %s (%d bytes), %+v, max bytes %d", c.i, c.tk.job.ID, c.tk.reason, c.variant, len(c.staged), showReq(c.req), c.maxBytes)
		case "resolve":
			r.logf("     resolve %s as %s (%+v) with %+v", key[:6], c.job.ID, c.job, c.bounds)
		case "reap":
			r.logf("     reap, TTL %v", ttl)
		case "check":
			r.logf("     check, repair %v", c.repair)
		}
	}

	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range group {
		wg.Go(func() {
			<-start
			defer left()
			switch c.what {
			case "promote":
				o := r.opts(gates.Bounds{MaxBytes: c.maxBytes})
				o.LockTimeout = c.lockWait
				c.res, c.err = r.inst.Open(o).Promote(c.tk.sess, c.req)
			case "resolve":
				c.sess, c.err = r.inst.Open(r.opts(c.bounds)).Resolve(key, c.job, c.jobDir)
			case "reap":
				c.removed, c.err = mt.Reap(r.opts(gates.Bounds{TTL: ttl}))
			case "check":
				c.found, c.err = mt.Check(r.opts(gates.Bounds{}), c.repair)
			}
		})
	}
	close(start)
	wg.Wait()
	done()

	var ordered []*conc // those whose outcome depends on the order
	for _, c := range group {
		switch c.what {
		case "promote":
			r.logf("     = %+v, %v", c.res, c.err)
			ordered = append(ordered, c)
		case "resolve":
			r.logf("     = resolve {%v %s} %d bytes, base gen %d, %v", c.sess.Resume, c.sess.Reason, c.sess.Bytes, c.sess.Base.Gen, c.err)
			if c.err != nil {
				return fmt.Errorf("resolve: %v", c.err)
			}
			ordered = append(ordered, c)
		case "reap":
			r.logf("     = reap removed %v, %v", c.removed, c.err)
			if c.err != nil {
				return fmt.Errorf("reap: %v", c.err)
			}
			ordered = append(ordered, c)
		case "check":
			r.logf("     = check %d findings, %v", len(c.found), c.err)
			if c.err != nil {
				return fmt.Errorf("check: %v", c.err)
			}
			if err := r.judgeFindings(c.found, c.repair); err != nil {
				return fmt.Errorf("concurrent %v", err)
			}
			r.counts[fmt.Sprint("concurrent check, repair ", c.repair)]++
		}
	}
	got, err := r.readRecords()
	if err != nil {
		return err
	}
	var why []string
	for _, order := range permutations(len(ordered)) {
		keys, tickets, err := r.inOrder(ordered, order, key)
		if err == nil {
			err = matchRecords(got, keys)
		}
		if err != nil {
			if len(why) < 6 {
				why = append(why, fmt.Sprintf("in the order %v: %v", order, err))
			}
			continue
		}
		r.keys = keys
		for _, c := range ordered {
			if c.what == "promote" && c.res.Promoted && !c.res.Repeat {
				c.tk.promoted, c.tk.promotedGen = c.staged, c.res.Gen
			}
			what := "concurrent " + c.what
			switch c.what {
			case "promote":
				what += " " + string(c.res.Reason)
			case "resolve":
				what += " " + string(c.sess.Reason)
			case "reap":
				what += fmt.Sprint(" removed ", len(c.removed))
			}
			r.counts[what]++
		}
		r.tickets = append(r.tickets, tickets...)
		r.logf("     as in the order %v", order)
		return nil
	}
	return fmt.Errorf("concurrent: no order of the %d operations gives what they did:\n%s", len(ordered), strings.Join(why, "\n"))
}

// inOrder applies the group's operations, in order, to a copy of the
// model, and returns it and the tickets the resolves issued, or why an
// outcome was not what that order gives.
func (r *run) inOrder(group []*conc, order []int, key string) (map[string]*mKey, []*mTicket, error) {
	keys := map[string]*mKey{}
	for k, m := range r.keys {
		keys[k] = m.clone()
	}
	var tickets []*mTicket
	reaped := false
	for _, o := range order {
		c := group[o]
		switch c.what {
		case "promote":
			m := keys[c.tk.key]
			before := m.clone()
			p := mPromote{staged: c.staged, linked: c.linked, req: c.req, reading: c.reading, maxBytes: c.maxBytes, now: r.now, newFile: r.newFile}
			want := m.promote(c.tk, p)
			if c.err == nil && c.res == want {
				continue
			}
			*m = *before
			switch {
			case c.err == nil && !c.res.Promoted && c.res.Reason == gates.Locked:
				// The lock's wait ended: nothing changes.
				p.unheld = gates.Locked
				if want = m.clone().promote(c.tk, p); c.res == want {
					continue
				}
			case c.err != nil && c.res.Reason == gates.PromoteFailed && reaped:
				// Waiting for the key's lock while a reap removed it:
				// it fails cleanly, never promoted (docs/operations.md).
				continue
			}
			return nil, nil, fmt.Errorf("%s: promote: %+v, %v; the model %+v", c.tk.job.ID, c.res, c.err, want)
		case "resolve":
			tk, err := r.judgeResolve(keys[key], c.bounds, c.job, c.jobDir, c.sess, gates.Locked)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %v", c.job.ID, err)
			}
			tickets = append(tickets, tk)
		case "reap":
			was := keys[key].gen != 0
			if err := reapModel(keys, r.now, c.removed); err != nil {
				return nil, nil, err
			}
			reaped = reaped || was && keys[key].gen == 0
		}
	}
	return keys, tickets, nil
}

// permutations is every order of n things, the given one first.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := len(p); i >= 0; i-- {
			out = append(out, slices.Insert(slices.Clone(p), i, n-1))
		}
	}
	return out
}

// A Settler carries out an operator's decision about one key (check
// --repair --accept KEY, or --quarantine KEY: docs/operations.md), where
// the backend has those commands (a sessions root).
type Settler interface {
	// Settle accepts the transcript in place as key's identity (accept),
	// or moves the key dir aside, and returns check's findings.
	// errors.ErrUnsupported: the instance has no such command.
	Settle(key string, opts store.Options, accept bool) ([]store.Finding, error)
}

// settle accepts a key's transcript (at times first changed out of band,
// as damage does) or quarantines the key. Accept records what is in place
// as the next generation, its stamps and promotion time kept, with a
// history entry accepted (transcript-replaced), or leaves a record that
// already describes it as it is; quarantine leaves no key (absent; a
// ticket from before is superseded by nothing, as after a reap), and a
// dir that no reap, migration or move takes for a key.
func (r *run) settle(op mOp) error {
	st, ok := r.inst.(Settler)
	key := modelKeys[op.a%len(modelKeys)]
	m := r.keys[key]
	accept := op.b%2 == 0
	if !ok || m.gen == 0 || accept && m.legacy {
		r.logf("settle: none (%s gen %d)", key[:6], m.gen)
		return nil
	}
	if accept && op.c%3 != 0 && m.disk == nil {
		if err := r.damage(mOp{kind: opDamage, a: op.a}); err != nil {
			return err
		}
	}
	r.logf("check --repair --accept %v --quarantine %v %s", accept, !accept, key[:6])
	found, err := st.Settle(key, r.opts(gates.Bounds{}), accept)
	if errors.Is(err, errors.ErrUnsupported) {
		r.logf("     not here: %v", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("settle: %v", err)
	}
	// The damage the sequence made is the operator's to settle: judged
	// as it was before the decision.
	if err := r.judgeFindings(found, true); err != nil {
		return err
	}
	want := store.KindQuarantined
	what := "quarantine"
	if accept {
		want, what = store.KindAccepted, "accept"
		if m.disk == nil {
			what += " (already)"
		} else {
			gen := m.lastGen() + 1
			m.gen, m.data, m.disk = gen, m.disk, nil
			m.life++ // a key made anew (docs/job.md); a root's bases name no life
			// The entry has the transcript's size and the chain kept; its checksum, which
			// only a promotion's entry needs (for a retry to be told by),
			// no doc names: the record holds it.
			m.record(db.HistoryEntry{Gen: gen, At: r.now.UnixNano(), Outcome: store.AcceptedOutcome, Reason: string(gates.TranscriptReplaced),
				Bytes: int64(len(m.data)), Chain: m.chain})
		}
	} else {
		m.remove()
	}
	var saw bool
	for _, f := range found {
		saw = saw || f.Kind == want && f.Key == key
	}
	if !saw {
		return fmt.Errorf("settle: no %s finding for %s: %+v", want, key[:6], found)
	}
	r.logf("     = %s", what)
	r.counts[what]++
	return nil
}

// A Cutter cuts jobs off the instance's metadata, as a fleet's etcd gone
// silent does (docs/fleet.md).
type Cutter interface {
	// Cut returns a store on the instance, with opts, whose every request
	// for a key's record goes unanswered: cli says whether as the CLI
	// runs a job when the fleet's Open found etcd unavailable
	// (fleet.Unreachable), or as an opened store whose etcd stops
	// answering. errors.ErrUnsupported: the instance has no such metadata
	// (a sessions root, or a root's keys not moved into a fleet).
	Cut(opts store.Options, cli bool) (*store.Store, error)
}

// unavailable runs a resolve or a promote while the instance's metadata
// does not answer: a resolve is store-unavailable, a cold start whose
// ticket has no base (README.md), a promote promote-failed with its
// cause, nothing changed, the run's transcript left in its job dir
// (docs/fleet.md).
func (r *run) unavailable(op mOp) error {
	ct, ok := r.inst.(Cutter)
	if !ok {
		r.logf("unavailable: not a Cutter")
		return nil
	}
	cli := op.c%2 == 0
	if _, err := ct.Cut(r.opts(gates.Bounds{}), cli); errors.Is(err, errors.ErrUnsupported) {
		r.logf("unavailable: %v", err)
		return nil
	} else if err != nil {
		return fmt.Errorf("cut: %v", err)
	}
	r.cut = func(o store.Options) *store.Store {
		s, err := ct.Cut(o, cli)
		if err != nil {
			r.t.Fatalf("cut: %v", err)
		}
		return s
	}
	defer func() { r.cut = nil }()
	r.logf("the metadata silent (as the CLI runs a job then: %v)", cli)
	if op.b%2 == 0 {
		return r.resolve(mOp{kind: opResolve, a: op.a, b: op.c / 2, c: op.d, d: op.b/2 + 1})
	}
	return r.promote(mOp{kind: opPromote, a: op.a, b: op.d, c: op.c, d: op.d / 2})
}

// LockKeyDir holds the exclusive lock of the meta.db in the key dir dir,
// as a promotion in another process would (a sessions root's Locker);
// errors.ErrUnsupported where dir has no meta.db to lock.
func LockKeyDir(dir string) (unlock func(), blocksJobs bool, err error) {
	if _, err := os.Lstat(filepath.Join(dir, db.FileName)); err != nil {
		return nil, false, fmt.Errorf("%w: %v", errors.ErrUnsupported, err)
	}
	d, err := fsat.OpenDir(dir)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	w, err := db.OpenWriter(d, db.FileName, db.Options{})
	if err != nil {
		return nil, false, err
	}
	return func() { w.Close() }, true, nil
}

// SettleOnRoot runs check --repair --accept key (accept) or --quarantine
// key on s, a store on a sessions root (a Settler's), and returns its
// findings.
func SettleOnRoot(s *store.Store, key string, accept bool) ([]store.Finding, error) {
	o := store.CheckOptions{Repair: true, Quarantine: key}
	if accept {
		o = store.CheckOptions{Repair: true, Accept: key}
	}
	var found []store.Finding
	_, err := s.Check(context.Background(), o, func(f store.Finding) error {
		found = append(found, f)
		return nil
	})
	return found, err
}
