package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"
	"sessdb/internal/walk"
)

// Kind names what Check found. The tokens are a contract (check --json
// prints them; README.md and docs/json.md list them).
type Kind string

// Problems: each makes Check's caller report "problems found".
const (
	KindMetaDamaged        Kind = "meta-damaged"        // meta.db refused on open (pre-check, bbolt): resolve says meta-unreadable
	KindMetaNewerSchema    Kind = "meta-newer-schema"   // meta.db written by a newer sessdb
	KindMetaPageInvalid    Kind = "meta-page-invalid"   // one bbolt meta page is invalid: a fall-back, or none left
	KindMetaCheckFailed    Kind = "meta-check-failed"   // bbolt's consistency check failed, died or timed out
	KindRecordUndecodable  Kind = "record-undecodable"  // a sidecar, meta or history record does not decode
	KindTranscriptMismatch Kind = "transcript-mismatch" // current.jsonl is not what its record describes
	KindPendingPromotion   Kind = "pending-promotion"   // a promotion committed but not renamed into place
	KindStrayTemp          Kind = "stray-temp"          // a promotion or meta.db temp file no record names
	KindLink               Kind = "link"                // a symbolic link under the root, or a hard-linked file in a key dir
	KindNotRegular         Kind = "not-a-regular-file"  // current.jsonl, meta.db or a legacy file is a FIFO, a directory, ...
	KindNotADirectory      Kind = "not-a-directory"     // a key's name that is not a directory
	KindLocked             Kind = "locked"              // the key's lock was not had in time: not checked
	KindUnreadable         Kind = "unreadable"          // an I/O error while checking
	KindReapInterrupted    Kind = "reap-interrupted"    // a reap-owned dir a killed reap left: reap or repair removes it (or moves it back)
	KindMode               Kind = "mode"                // the root, a key dir, meta.db, current.jsonl or a legacy sidecar without the owner's bits the store needs of it
	KindOwner              Kind = "owner"               // a key dir, meta.db, current.jsonl or legacy sidecar another user owns, which the root's owner may not use
)

// Notices: reported, but nothing is wrong with what resumes.
const (
	KindNotAKey        Kind = "not-a-key"        // a name under the root that is not a key
	KindLegacyBesideDB Kind = "legacy-beside-db" // legacy sidecar files beside meta.db (ignored by resolve)
	KindMovedAside     Kind = "moved-aside"      // a damaged meta.db that check --repair moved aside
	KindUnknownEntry   Kind = "unknown-entry"    // a file in a key dir that the store does not write
	KindQuarantined    Kind = "quarantined"      // a key dir check --quarantine moved aside
	KindLegacyLeftover Kind = "legacy-leftover"  // the legacy lock or a legacy writer's temp in a key still in the legacy layout
)

// An operator action's outcome, printed only by the check that took it
// (check --repair --accept, --quarantine): a notice, Repaired when it was
// done.
const (
	KindAccepted Kind = "accepted" // the transcript in place recorded as the key's identity (Store.Accept)
)

// Severity is "problem" or "notice".
type Severity string

// The severities. Only problems that remain make sessdb check exit 3.
const (
	SeverityProblem Severity = "problem" // something is wrong, or could not be checked
	SeverityNotice  Severity = "notice"  // reported for the operator; nothing that resumes is wrong
)

// Severity returns the kind's severity.
func (k Kind) Severity() Severity {
	switch k {
	case KindNotAKey, KindLegacyBesideDB, KindMovedAside, KindUnknownEntry, KindQuarantined, KindAccepted, KindLegacyLeftover:
		return SeverityNotice
	}
	return SeverityProblem
}

// StaleTempAge is how old a stray temp file must be before Reap removes
// it. A promotion's temp lives for one copy and a meta.db temp for one
// bbolt initialisation, both far shorter; the margin keeps a clock step or
// a stalled disk from removing a live one. A repairing Check needs no age:
// it removes temps under the key's exclusive lock, where no promotion can
// be writing one.
const StaleTempAge = time.Hour

// A Finding is one thing Check found.
type Finding struct {
	Path     string   `json:"path"`     // relative to the root
	Key      string   `json:"key"`      // the key dir it is in, when it is in one
	Kind     Kind     `json:"kind"`     // what was found
	Severity Severity `json:"severity"` // Kind.Severity, carried for the JSON
	// Detail says what was found, for an operator: paths in it are
	// relative to the root, and a transcript's contents never appear.
	Detail string `json:"detail"`
	// Repair says what a repairing Check did about it, or why it did
	// nothing; empty without repair.
	Repair string `json:"repair"`
	// Repaired is true when the repair acted successfully; it may still
	// Remain (a second look can find the same kind again).
	Repaired bool `json:"repaired"`
	// RepairFailed is true when the repair was tried and failed (an I/O
	// error, a full disk, the key's lock not had): its Repair says
	// "not repaired: ..." (on a fleet, "not removed: ..."). The CLI counts
	// it as failed (exit 1), as an entry it could not examine.
	RepairFailed bool `json:"-"`
	// Remains is whether it is still there when Check returns: always for
	// a check without repair, else as found by a second look after the
	// repair.
	Remains bool `json:"remains"`

	tmpWhole bool // pending-promotion: the temp matches the record
	// tmpNotRegular: pending-promotion whose temp is not a regular file
	tmpNotRegular bool
	resolves      string // transcript-mismatch: what a resolve of the key says now
	unproven      bool   // meta-check-failed: the check did not complete, so proves nothing
	// historyFull: record-undecodable for a history whose newest entry
	// holds the last sequence number, all else of meta.db decoding.
	historyFull bool
	// historyDamaged: record-undecodable for history entries that do not
	// decode, the record, stamps and meta/ decoding.
	historyDamaged bool
	hardLink       bool // link: a file with more than one name, not a symbolic link
	keyFile        bool // link: and that file is the key's meta.db or current.jsonl
	// examinedDB is meta.db as the look that found a damage finding saw
	// it, for a repair to move aside only that file, unchanged since.
	examinedDB *unix.Stat_t
}

// notRepaired records a repair (or an operator action) that was tried
// and failed with err.
func (f *Finding) notRepaired(err error) {
	f.Repair, f.RepairFailed = "not repaired: "+err.Error(), true
}

// CheckOptions says how Check runs. The zero value checks without
// repairing and without bbolt's full consistency check.
type CheckOptions struct {
	// Repair acts on what the check proved: it gives a key dir, meta.db or
	// transcript the owner's bits the store needs of it where the mode
	// lacks them (KindMode; bits are only added), then, each key under its
	// exclusive lock, it rolls a pending promotion forward, then moves a
	// meta.db shown to be damaged aside (renamed to meta.db.damaged-<UTC
	// time>, never deleted; a history at the last sequence number in an
	// otherwise sound meta.db is numbered again in place instead, the
	// record and stamps kept), then removes every temp file no promotion in
	// flight needs, whatever its age; then it looks again. A deep check
	// that did not complete proves nothing and moves nothing.
	Repair bool
	// Accept, with Repair, limits the check to the key it names and, after
	// that key's repairs, records the transcript in place as its identity
	// (Store.Accept): the operator's decision. The outcome is a finding of
	// kind KindAccepted.
	Accept string
	// Quarantine, with Repair, limits the check to the key it names and,
	// instead of repairing it, moves its dir aside (Store.Quarantine). The
	// outcome is a finding of kind KindQuarantined, whose path is where the
	// dir went.
	Quarantine string
	// DeepCheck runs bbolt's full consistency check on a key's meta.db
	// (see DeepCheckDB) and returns what it found. It is called only for
	// a meta.db that passed the pre-check, while Check holds the key's
	// shared lock, so the file cannot change between the two looks. An
	// error means the check could not be run at all (or ctx ended); it
	// stops Check, which returns it. nil skips the full check.
	DeepCheck func(ctx context.Context, key string) (DeepResult, error)
	// Workers is as in InspectOptions.
	Workers int
	// Progress is as in InspectOptions, counting entries examined.
	Progress func(done, total int)
}

// DeepResult is what one deep check said about a meta.db.
type DeepResult struct {
	// Problems are what a check that ran to completion found wrong: the
	// only proof of damage a deep check gives. Empty with Incomplete
	// unset means the file is consistent.
	Problems []string
	// Incomplete, when set, says why the check did not run to completion
	// (it timed out, its process was killed or exited): that proves
	// nothing about the file, and a repair moves nothing for it.
	Incomplete string
	// DirDev and DirIno name the key dir the check ran in, opened by the
	// key's name: Check takes the result as proof only about the key dir
	// it holds itself, which the name may no longer lead to (the A,B,A
	// swap). Both 0: not known, taken to be that dir.
	DirDev, DirIno uint64
	// FileDev and FileIno name the meta.db the check ran on, the file the
	// name led to before and after it: Check takes the result as proof
	// only about the file it holds under its shared lock. Both 0: not
	// known (no file at the name), taken to be that file.
	FileDev, FileIno uint64
}

// CheckSummary counts what Check found and did.
type CheckSummary struct {
	Entries   int `json:"entries"`   // names under the root examined
	Keys      int `json:"keys"`      // of which key dirs
	Problems  int `json:"problems"`  // problem findings delivered (with a repair: before it, and what the look after it found anew)
	Notices   int `json:"notices"`   // notice findings delivered, an operator action's outcome among them
	Repaired  int `json:"repaired"`  // findings a repair acted on successfully
	Remaining int `json:"remaining"` // problems still there at the end
}

// Check examines the root's own mode (its finding, path ".", comes
// first; not with an operator action, which looks at its key alone) and
// every entry under the root, and passes each finding to visit, in name
// order. Without Repair it is as read-only as InspectWith:
// nothing is created, changed or removed. A visit error, a DeepCheck error
// or the end of ctx stops the walk; the summary then counts what was
// examined so far. After a DeepCheck error, as after the end of ctx, the
// entries under way beside it are finished and delivered (their repairs
// are done for good) before the error is returned. A nil visit is no
// callback: the summary alone tells what was found.
func (s *Store) Check(ctx context.Context, opts CheckOptions, visit func(Finding) error) (CheckSummary, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	if visit == nil {
		visit = func(Finding) error { return nil }
	}
	var sum CheckSummary
	only := opts.Accept + opts.Quarantine
	switch {
	case only != "" && !opts.Repair:
		return sum, errors.New("check: an operator action (accept, quarantine) needs Repair")
	case opts.Accept != "" && opts.Quarantine != "":
		return sum, errors.New("check: accept or quarantine a key, not both")
	case only != "" && !ValidKey(only):
		return sum, fmt.Errorf("check %q: %w", only, ErrInvalidKey)
	}
	// One descriptor for the listing and every look after it: a root
	// renamed during the walk, another made at its path, must not have
	// its keys reported as the listed root's (a repair through it is
	// refused by its still-at-key guard, which goes by the path).
	root, names, err := s.listRoot(only)
	if err != nil && only == "" && errors.Is(err, fs.ErrPermission) {
		// A root its owner may not list (0300) or enter (0600) is judged
		// through a descriptor that needs neither bit, and with Repair
		// given them back and listed after all; else the error that stops
		// the check says so (a failed check prints no finding).
		if f := s.unreadRoot(opts.Repair); f != nil && f.Repaired && !f.Remains {
			sum.count(*f)
			if verr := visit(*f); verr != nil {
				return sum, verr
			}
			root, names, err = s.listRoot(only)
		} else if f != nil {
			err = fmt.Errorf("%w: %s (%s)", err, f.Detail, cmp.Or(f.Repair, "check --repair gives its owner the bits back"))
		}
	}
	if err != nil {
		return sum, err
	}
	defer root.Close()
	// The root's own mode, before its entries (an operator action looks
	// at its key alone).
	if f := judgeRoot(root); f != nil && only == "" {
		if opts.Repair {
			repairRoot(s.disk.disk(), root, f)
			f.Remains = judgeRoot(root) != nil
		} else {
			f.Remains = true
		}
		sum.count(*f)
		if err := visit(*f); err != nil {
			return sum, err
		}
	}
	type result struct {
		key      bool
		findings []Finding
		err      error
	}
	unroot := s.unrooter()
	work := func(i int) result {
		fs, err := s.checkEntry(ctx, root, names[i], opts)
		for j := range fs {
			fs[j].Detail, fs[j].Repair = unroot.Replace(fs[j].Detail), unroot.Replace(fs[j].Repair)
		}
		return result{ValidKey(names[i]), fs, err}
	}
	interrupted := false
	// An entry that stops the check (its deep check could not be run)
	// stops no entry already under way beside it, and with Repair those
	// may have repaired: they are delivered too, as after an interrupt,
	// and the walk then returns the entry's error.
	wctx, halt := walk.WithHalt(ctx)
	defer halt.Release()
	deliver := func(r result) error {
		if r.err != nil && r.findings == nil {
			if ctx.Err() != nil && errors.Is(r.err, ctx.Err()) {
				// Cut short before anything was done: not examined. The
				// entries started after it may have repaired, so they are
				// still delivered.
				interrupted = true
				return nil
			}
			return halt.Stop(r.err)
		}
		sum.Entries++
		if r.key {
			sum.Keys++
		}
		for _, f := range r.findings {
			sum.count(f)
			if err := visit(f); err != nil {
				return err
			}
		}
		if opts.Progress != nil {
			opts.Progress(sum.Entries, len(names))
		}
		if r.err != nil && ctx.Err() != nil && errors.Is(r.err, ctx.Err()) {
			interrupted = true
			return nil
		}
		if r.err != nil {
			return halt.Stop(r.err)
		}
		return nil
	}
	_, err = walk.Ordered(wctx, len(names), walk.Workers(opts.Workers), work, deliver)
	if err == nil && interrupted {
		err = ctx.Err()
	}
	return sum, halt.Err(err)
}

// unrooter strips the root from the paths in error texts: a report names
// entries relative to the root, as Finding.Path does, so it reads the same
// wherever the root is.
func (s *Store) unrooter() *strings.Replacer {
	return strings.NewReplacer(strings.TrimSuffix(s.root, "/")+"/", "")
}

// count adds f to the summary. Problems and Notices count every finding
// delivered, by its severity: what the first look found (so that a
// repair's report still says what was wrong), what only the look after
// the repair found (a meta.db moved aside), and an operator action's own
// finding; the summary so agrees with the lines printed.
func (sum *CheckSummary) count(f Finding) {
	if f.Repaired {
		sum.Repaired++
	}
	if f.Severity == SeverityProblem && f.Remains {
		sum.Remaining++
	}
	if f.Severity == SeverityProblem {
		sum.Problems++
	} else {
		sum.Notices++
	}
}

// checkEntry examines one name under the root and, when asked, repairs
// what it found and looks again. An error stops the whole check: the deep
// check could not be run, or ctx ended.
func (s *Store) checkEntry(ctx context.Context, root *os.File, name string, opts CheckOptions) ([]Finding, error) {
	var deepCheck func(key string) (DeepResult, error)
	var memo deepMemo
	if opts.DeepCheck != nil {
		deepCheck = func(key string) (DeepResult, error) {
			return memo.run(func() (DeepResult, error) { return opts.DeepCheck(ctx, key) })
		}
	}
	found, err := s.examine(ctx, root, name, deepCheck)
	if err != nil {
		return nil, err // nothing done: the entry is not reported
	}
	if !opts.Repair {
		for i := range found {
			found[i].Remains = true
		}
		return found, nil
	}
	if opts.Quarantine == name {
		return s.quarantineFindings(name, found), nil
	}
	if s.repair(ctx, root, name, found) || !memo.about(root, name) {
		// meta.db was written or moved, or the repair's writer gave a
		// hard-linked one a file of its own: the first verdict is about
		// another file.
		memo.forget()
	}
	var action *Finding
	if opts.Accept == name {
		action = s.acceptFinding(ctx, name, found)
		memo.forget()
	}
	after, err := s.examine(ctx, root, name, deepCheck)
	// A key dir its owner could not enter hid what is in it, and a
	// meta.db it could not read hid the rest (a stray temp): given their
	// bits, each look after finds what the one before could not see, and
	// it is repaired in this run, not the next (ownrev3, ownrev4), and
	// looked at again; at most twice.
	for range 2 {
		hidden := hiddenBehind(found, after)
		if err != nil || len(hidden) == 0 {
			break
		}
		if s.repair(ctx, root, name, hidden) {
			memo.forget()
		}
		found = append(found, hidden...)
		after, err = s.examine(ctx, root, name, deepCheck)
	}
	if err != nil {
		// The repair acted and the look after it was cut short (ctx
		// ended, the deep check failed): what was done is still
		// reported, with the error; what it did not act on remains.
		for i := range found {
			found[i].Remains = found[i].Severity == SeverityProblem && !found[i].Repaired
		}
		if action != nil {
			found = append(found, *action)
		}
		return found, err
	}
	still := map[[2]string]bool{}
	for _, f := range after {
		still[[2]string{f.Path, string(f.Kind)}] = true
	}
	seen := map[[2]string]bool{}
	for i := range found {
		id := [2]string{found[i].Path, string(found[i].Kind)}
		seen[id] = true
		found[i].Remains = still[id]
	}
	// A transcript left as is: what a resolve says of it is what the look
	// after the repair found (a roll-forward can change it).
	for _, f := range after {
		for i := range found {
			if g := &found[i]; g.Kind == KindTranscriptMismatch && f.Kind == g.Kind && f.Path == g.Path && !g.Repaired {
				g.resolves = f.resolves
				g.Repair = "left as is: " + advice(g)
			}
		}
	}
	// A hard link the repair's own write broke (its writer's open gives a
	// hard-linked meta.db a file of its own; a roll-forward renames over
	// current.jsonl; its sweep removes a temp that was the other name):
	// "remove it by hand" is no longer true of it.
	for i := range found {
		if g := &found[i]; g.hardLink && !g.Remains && !g.Repaired {
			g.Repair = "left as is: after the repair the name has a file of its own (the repair's writer copied it, or removed a temp that was its other name)"
		}
	}
	// A key dir its runner could not open for want of the owner's bits,
	// given them by the repair, was read by the look after it.
	modeRepaired := slices.ContainsFunc(found, func(f Finding) bool { return f.Kind == KindMode && f.Repaired })
	for i := range found {
		if g := &found[i]; modeRepaired && g.Kind == KindUnreadable && !g.Remains && !g.Repaired {
			g.Repair = "left as is: read by the look after the repair, once the owner had its bits back (mode)"
		}
	}
	// What the repair left that was not there before (a meta.db moved
	// aside, say) is reported too.
	for _, f := range after {
		if !seen[[2]string{f.Path, string(f.Kind)}] {
			f.Remains = true
			found = append(found, f)
		}
	}
	if action != nil {
		found = append(found, *action)
	}
	return found, nil
}

// hiddenBehind returns the findings of the look after a repair that the
// first look did not make, where that repair gave the key dir or a file
// in it its owner's bits: what the key dir, unentered, or its meta.db,
// unread, hid (a meta.db 0000 in a key dir its owner enters hid a stray
// temp's judgement, mutcheck). A key dir the first look could not open is
// unreadable, which the look after does not find again: it is not among
// them.
func hiddenBehind(found, after []Finding) []Finding {
	if !slices.ContainsFunc(found, func(f Finding) bool { return f.Kind == KindMode && f.Repaired }) {
		return nil
	}
	var hidden []Finding
	for _, f := range after {
		if !slices.ContainsFunc(found, func(g Finding) bool { return g.Path == f.Path && g.Kind == f.Kind }) {
			hidden = append(hidden, f)
		}
	}
	return hidden
}

// deepMemo keeps a key's deep-check result for the look after a repair
// that left meta.db alone: the file is the one already checked, and a
// second run of a check that hangs would cost its timeout twice more.
type deepMemo struct {
	done bool
	res  DeepResult
}

// run returns the result kept, or runs check and keeps its result. An
// error is not kept: it stops the whole check anyway.
func (m *deepMemo) run(check func() (DeepResult, error)) (DeepResult, error) {
	if m.done {
		return m.res, nil
	}
	res, err := check()
	if err == nil {
		m.done, m.res = true, res
	}
	return res, err
}

// about reports whether the kept result, if any, is about the file now at
// the key's meta.db. Its name can lead to another file after a repair that
// wrote nothing: a writer's open copies a meta.db with a second name.
func (m *deepMemo) about(root *os.File, name string) bool {
	if !m.done || m.res.FileIno == 0 {
		return true
	}
	dir, err := fsat.OpenDirAt(root, name)
	if err != nil {
		return false
	}
	defer dir.Close()
	st, err := fsat.LstatAt(dir, db.FileName)
	return err == nil && uint64(st.Dev) == m.res.FileDev && uint64(st.Ino) == m.res.FileIno
}

// forget drops the kept result, for a meta.db a repair wrote or moved.
func (m *deepMemo) forget() { m.done = false }
