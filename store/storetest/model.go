package storetest

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"slices"
	"strings"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store"
	"sessdb/store/transcript"
)

// The reference model of RunModel: the job contract as docs/job.md and
// README.md state it, one key and one ticket at a time, written to be
// read rather than to be fast. It keeps, per key, what its record and
// history must say, and per ticket what its resolve saw; every outcome a
// backend reports is compared with what the model says it must be.

// mKey is one key as the model holds it; the zero mKey is no key.
type mKey struct {
	gen        uint64 // the generation the key holds; 0: none
	data       []byte // its transcript
	promotedAt time.Time
	// ownMtime: promotedAt is the transcript's own mtime, which the model
	// does not know to the nanosecond (a transcript changed in place,
	// moved to the legacy layout, keeps it: docs/migration.md). It is
	// the real clock's, which the model's is behind (modelStart), so the
	// key is never expired by it.
	ownMtime  bool
	piVersion string
	venue     string
	chain     uint64
	context   *db.Context
	history   []db.HistoryEntry // oldest first, at most db.HistoryLimit
	// legacy: the key is in the legacy layout (migrate --to-legacy): its
	// transcript and stamps in files, no record, no history.
	legacy bool
	file   uint64 // which transcript file is in place: a new one per promotion
	// disk is the transcript in place when it is not what the record
	// describes (DamageTranscriptChanged: a byte changed, its size kept);
	// nil when it is.
	disk []byte
	// life counts the times the key was made anew (reaped, quarantined,
	// accepted, its record made again by a move: docs/job.md), which a
	// base with a revision tells apart whatever the bytes.
	life uint64
}

// remove is the key reaped or quarantined: no key, in a life after the
// one it had.
func (k *mKey) remove() { *k = mKey{life: k.life + 1} }

func (k *mKey) clone() *mKey {
	c := *k
	c.history = slices.Clone(k.history)
	return &c
}

// mBase is what a ticket was resolved from: a generation's number, size
// and CRC32C, or a legacy key's transcript file, or nothing.
type mBase struct {
	gen  uint64
	size int64
	crc  uint32
	file uint64
	// elsewhere: the base is another key's record's, at a revision
	// (a fleet's, docs/job.md), which no other record has.
	elsewhere bool
	// rev: the base names its record's revision too (a fleet's), which
	// etcd never gives twice (docs/job.md): a key made anew since, in
	// another life than the base's, does not hold it, even with the very
	// generation, size and CRC32C.
	rev  bool
	life uint64
}

func (k *mKey) base() mBase {
	switch {
	case k.gen == 0:
		return mBase{}
	case k.legacy:
		return mBase{file: k.file}
	}
	return mBase{gen: k.gen, size: int64(len(k.data)), crc: crc32.Checksum(k.data, castagnoli)}
}

// holds reports whether the key still holds base b (docs/job.md): the
// same generation, or for a ticket of the legacy layout the same file,
// whatever record the key has gained since; none, while it holds none.
func (k *mKey) holds(b mBase) bool {
	switch {
	case b.elsewhere:
		return false
	case b.file != 0:
		return k.gen != 0 && k.file == b.file
	case b.gen != 0:
		return k.base() == mBase{gen: b.gen, size: b.size, crc: b.crc} && (!b.rev || k.life == b.life)
	}
	return k.gen == 0
}

// recGen is the generation the key's record names: 0 for none.
func (k *mKey) recGen() uint64 {
	if k.legacy {
		return 0
	}
	return k.gen
}

// lastGen is the highest generation the key remembers: its record's, or
// any in its history.
func (k *mKey) lastGen() uint64 {
	g := k.recGen()
	for _, e := range k.history {
		g = max(g, e.Gen)
	}
	return g
}

// mTicket is one resolved job.
type mTicket struct {
	key    string
	job    store.Job
	sess   store.Session // as the backend issued it: its ticket id
	resume bool
	reason gates.Reason
	given  []byte // what the job was handed
	base   mBase
	jobDir string
	side   string // where it was issued (Mover); "" for an instance that never moves
	// promoted is the staged file of the ticket's last promotion that made
	// a generation (nil: none), for a retry to stage again.
	promoted    []byte
	promotedGen uint64 // the generation it made
}

// madeBy reports whether e is the entry of t's last promotion.
func (t *mTicket) madeBy(e db.HistoryEntry) bool {
	return e.Ticket == t.sess.Ticket && e.Outcome == "" && e.Gen == t.promotedGen
}

// verdict is the ladder of README.md, for the values a store's own
// promotions leave (every key the model holds has a record, a regular
// transcript of at least one byte with a pi session header, and every
// stamp present).
func (k *mKey) verdict(b gates.Bounds, job store.Job, now time.Time) gates.Reason {
	switch {
	case k.gen == 0:
		return gates.Absent
	case b.MaxBytes > 0 && int64(len(k.data)) > b.MaxBytes:
		return gates.TooLarge
	case b.TTL > 0 && now.Sub(k.promotedAt) > b.TTL:
		return gates.Expired
	case job.Venue == "" || strings.Contains(job.Venue, "(") || k.venue != job.Venue:
		return gates.VenueChanged
	case job.PiVersion == "" || k.piVersion == "" || k.piVersion != job.PiVersion:
		return gates.PiVersionChanged
	case b.MaxResumeChain > 0 && k.chain >= b.MaxResumeChain:
		return gates.ResumeChainTooLong
	case b.MaxContextPct > 0 && k.context != nil && (k.context.Model == "" || job.Model == "" || k.context.Model == job.Model) &&
		k.context.Tokens*100 >= k.context.Window*int64(b.MaxContextPct):
		return gates.ContextTooFull
	case b.MaxAge > 0 && now.Sub(headerTime(k.data)) > b.MaxAge:
		return gates.ConversationTooOld
	case k.disk != nil:
		return gates.TranscriptReplaced // the copy does not match the record
	}
	return gates.Resumed
}

// mPromote is what a promote request is, to the model.
type mPromote struct {
	staged   []byte // the staged file; nil: missing or empty
	linked   bool   // the staged file is a link (symbolic or hard)
	req      store.PromoteRequest
	reading  *int64 // pi's own reading at the end of the run, for a request with no Tokens
	maxBytes int64
	now      time.Time
	newFile  func() uint64 // a new transcript file's number
	// unheld is why the key could not be had for writing: locked (its
	// lock held past the lock wait: README.md, nothing changes), or
	// promote-failed (a fleet's etcd silent: docs/fleet.md, nothing
	// changes, the transcript kept for a retry); "" when it could. The
	// promote meets it once it has read the staged file (json.md: run is
	// null only when it was never read).
	unheld gates.Reason
}

// promote is the job contract's promote, in README.md's order: nothing
// staged, over the cap, a retry, a moved base, a rewritten prefix, a
// required shape; then the new generation. It changes k as the backend
// must, and returns the result the backend must return.
func (k *mKey) promote(t *mTicket, p mPromote) store.PromoteResult {
	res := store.PromoteResult{Key: t.key}
	size := int64(len(p.staged))
	torn := size > 0 && p.staged[size-1] != '\n'
	whole := p.staged
	if torn {
		whole = append(bytes.Clone(p.staged), '\n')
	}
	switch {
	case p.linked:
		res.Reason = gates.NotARegularFile
		return res
	case size == 0:
		res.Reason = gates.Absent
		return res
	case p.maxBytes > 0 && int64(len(whole)) > p.maxBytes:
		res.Reason = gates.TooLarge
		return res
	}
	prefixOK := size >= int64(len(t.given)) && bytes.Equal(p.staged[:len(t.given)], t.given)
	res.Run = shapeOf(p.staged)
	if prefixOK && lastMessageAt(p.staged) < len(t.given) {
		res.Run = transcript.Unanswered // the run appended no message
	}
	if prefixOK && size == int64(len(t.given)) {
		res.Run = transcript.Unchanged
	}
	if p.unheld != "" {
		res.Reason = p.unheld
		return res
	}
	refuse := func(r gates.Reason) store.PromoteResult {
		res.Reason = r
		if r == gates.Superseded {
			res.SupersededBy = k.recGen()
		}
		if k.recGen() == 0 {
			return res // no record, no history
		}
		for _, e := range k.history {
			if e.Ticket == t.sess.Ticket && e.Outcome == string(r) {
				return res
			}
		}
		k.record(db.HistoryEntry{
			Gen: k.recGen(), At: p.now.UnixNano(), Outcome: string(r), Resumed: t.resume, Reason: string(t.reason),
			Bytes: int64(len(t.given)), Job: t.job.ID, Ticket: t.sess.Ticket, Run: string(res.Run), BaseGen: t.base.gen,
		})
		return res
	}
	// A retry: the ticket's promotion, if the key still holds it or has
	// moved on from it, repeats for the same transcript only. An accept
	// since made the file then in place the key's, which held nothing of
	// the run: no repeat, the retry judged on its base. The record's own
	// generation whose file changed since is no repeat either: the retry
	// is promoted again onto the record (docs/job.md).
	stranded := false
	for i := len(k.history) - 1; i >= 0; i-- {
		e := k.history[i]
		if e.Ticket != t.sess.Ticket || e.Outcome != "" || e.Gen > k.recGen() {
			continue
		}
		if slices.ContainsFunc(k.history[i+1:], func(l db.HistoryEntry) bool { return l.Outcome == store.AcceptedOutcome }) {
			break
		}
		if e.Bytes != int64(len(whole)) || e.CRC32C != uint64(crc32.Checksum(whole, castagnoli)) {
			return refuse(gates.Superseded)
		}
		if e.Gen == k.recGen() && k.disk != nil {
			stranded = true
			break
		}
		res.Promoted, res.Repeat, res.Reason = true, true, gates.Promoted
		res.Bytes, res.Gen, res.Run, res.Rewritten, res.TornTail = e.Bytes, e.Gen, transcript.Shape(e.Run), e.Rewritten, e.TornTail
		return res
	}
	// A cold start's run holds nothing of the key's: onto a key that
	// holds nothing now (reaped since its resolve) it replaces nothing,
	// as a ticket resolved on an absent key does not; a resumed run is
	// superseded there (docs/job.md).
	if !stranded && !k.holds(t.base) && (t.resume || !k.holds(mBase{})) {
		return refuse(gates.Superseded)
	}
	if !prefixOK && !p.req.AllowRewrite {
		return refuse(gates.TranscriptRewritten)
	}
	if p.req.Require != "" && res.Run != p.req.Require {
		return refuse(gates.RunIncomplete)
	}
	gen := k.lastGen() + 1
	var chain uint64
	if t.resume {
		chain = k.chain + 1
	}
	venue := t.job.Venue
	if venue == "" {
		venue = "(pending)"
	}
	var ctx *db.Context
	resumesWith := branchModel(whole)
	window := p.req.Window
	if window == 0 && resumesWith == model {
		window = 200000 // claude-sonnet-4-5, in pi's built-in table
	}
	tokens := p.req.Tokens
	if tokens == nil {
		tokens = p.reading
	}
	if tokens != nil && window != 0 {
		ctx = &db.Context{Tokens: *tokens, Window: window, Model: resumesWith}
	}
	k.gen, k.data, k.promotedAt, k.ownMtime, k.legacy, k.file, k.disk = gen, whole, p.now, false, false, p.newFile(), nil
	k.piVersion, k.venue, k.chain, k.context = p.req.PiVersion, venue, chain, ctx
	k.record(db.HistoryEntry{
		Gen: gen, At: p.now.UnixNano(), Resumed: t.resume, Reason: string(t.reason), Bytes: int64(len(whole)),
		Chain: chain, Job: t.job.ID, TornTail: torn, Ticket: t.sess.Ticket, Run: string(res.Run), Rewritten: !prefixOK, BaseGen: t.base.gen,
		CRC32C: uint64(crc32.Checksum(whole, castagnoli)),
	})
	res.Promoted, res.Reason, res.Bytes, res.Gen, res.TornTail, res.Rewritten = true, gates.Promoted, int64(len(whole)), gen, torn, !prefixOK
	return res
}

// record appends e to the key's history, keeping the newest entries.
func (k *mKey) record(e db.HistoryEntry) {
	k.history = append(k.history, e)
	if n := len(k.history); n > db.HistoryLimit {
		k.history = slices.Clone(k.history[n-db.HistoryLimit:])
	}
}

// sidecars is the record the key must hold.
func (k *mKey) sidecars() db.Sidecars {
	if k.recGen() == 0 {
		return db.Sidecars{}
	}
	pv, venue, chain := k.piVersion, k.venue, k.chain
	sc := db.Sidecars{
		Transcript: &db.Transcript{Gen: k.gen, Size: int64(len(k.data)), CRC32C: uint64(crc32.Checksum(k.data, castagnoli)), PromotedAt: k.promotedAt.UnixNano()},
		PiVersion:  &pv, Venue: &venue, ResumeChain: &chain,
	}
	if k.context != nil {
		c := *k.context
		sc.Context = &c
	}
	return sc
}

// headerTime is the timestamp of the session header data begins with
// (every transcript the model writes has one).
func headerTime(data []byte) time.Time {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var h struct{ Timestamp time.Time }
	if err := json.Unmarshal(line, &h); err != nil {
		panic(err)
	}
	return h.Timestamp
}

// lastMessageAt is the byte offset of data's last whole message line,
// -1 for none (the transcripts the model writes have one branch).
func lastMessageAt(data []byte) int {
	end := bytes.LastIndexByte(data, '\n') + 1 // a torn last line is no entry
	for end > 0 {
		start := bytes.LastIndexByte(data[:end-1], '\n') + 1
		var v struct{ Type string }
		if json.Unmarshal(data[start:end], &v) == nil && v.Type == "message" {
			return start
		}
		end = start
	}
	return -1
}

// shapeOf is the shape of a run whose transcript is data, as docs/job.md
// defines it, for the transcripts the model writes (one branch, no
// compaction): the last whole message line decides.
func shapeOf(data []byte) transcript.Shape {
	lines := bytes.Split(data, []byte("\n"))
	lines = lines[:len(lines)-1] // a torn last line, or the "" after the final newline
	for i := len(lines) - 1; i >= 0; i-- {
		var v struct {
			Type    string
			Message struct {
				Role       string
				StopReason string
				Content    []struct{ Type string }
			}
		}
		if json.Unmarshal(lines[i], &v) != nil || v.Type != "message" {
			continue
		}
		if v.Message.Role != "assistant" {
			return transcript.Unanswered
		}
		switch v.Message.StopReason {
		case "error", "aborted":
			return transcript.Errored
		}
		for _, c := range v.Message.Content {
			if c.Type == "toolCall" {
				return transcript.Unanswered
			}
		}
		return transcript.Answered
	}
	return transcript.Unanswered
}

// branch is the entries of the branch that ends in data's last entry,
// following parentId, the last first (docs/job.md). A line that is not
// JSON (a byte changed out of band, then accepted) is no entry, and a
// branch that reaches it ends there.
func branch(data []byte) []branchEntry {
	byID := map[string]branchEntry{}
	var leaf *branchEntry
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e branchEntry
		if json.Unmarshal(line, &e) != nil || e.ID == "" {
			continue
		}
		byID[e.ID] = e
		leaf = &e
	}
	var out []branchEntry
	for e, ok := leaf, leaf != nil; ok && len(out) <= len(byID); {
		out = append(out, *e)
		if e.ParentID == nil {
			break
		}
		next, found := byID[*e.ParentID]
		e, ok = &next, found
	}
	return out
}

// branchEntry is what the model reads of a transcript's entry.
type branchEntry struct {
	Type     string
	ID       string
	ParentID *string
	Provider string
	ModelID  string
	Message  struct {
		Role, Provider, Model, StopReason string
		Usage                             *struct{ TotalTokens int64 }
	}
}

// branchModel is the model pi resumes data with (docs/job.md): the last
// model_change or assistant message on its branch; "" for none.
func branchModel(data []byte) string {
	for _, e := range branch(data) {
		switch {
		case e.Type == "model_change":
			return e.Provider + "/" + e.ModelID
		case e.Type == "message" && e.Message.Role == "assistant":
			return e.Message.Provider + "/" + e.Message.Model
		}
	}
	return ""
}

// branchReading is pi's own reading at the end of a run whose transcript
// is data, where the docs settle it without pi's estimate (docs/job.md:
// the last valid usage plus chars/4 of what follows it): the usage of an
// answer that ends the branch, nothing after it. known is false for the
// rest: something follows the last usage, or there is none yet (chars/4
// of the whole branch), or the last answer is an error's.
func branchReading(data []byte) (tokens *int64, known bool) {
	for _, e := range branch(data) {
		if e.Type != "message" {
			continue
		}
		if e.Message.Role != "assistant" || e.Message.Usage == nil || e.Message.StopReason == "error" || e.Message.StopReason == "aborted" {
			return nil, false
		}
		t := e.Message.Usage.TotalTokens
		return &t, true
	}
	return nil, false
}
