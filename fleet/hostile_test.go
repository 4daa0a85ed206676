package fleet

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A record that names another key's file (a tenant's or an older binary's
// write under the prefix) is foreign input: reaping its key removes its
// record and never the other key's transcript.
func TestReapOfARecordNamingAnotherKeysFileRemovesOnlyItsOwn(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	victim, hostile := store.Key("github", "hostile", "victim"), store.Key("github", "hostile", "rogue")
	f.run(victim, "one")
	own := f.recordFile(victim)
	old := time.Now().Add(-30 * 24 * time.Hour).UnixNano()
	rec := etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: 1, Size: 1, PromotedAt: old, File: own}}
	if _, err := f.b.meta.Put(t.Context(), hostile, 0, rec, etcdmeta.HistoryEntry{Gen: 1, At: old}); err != nil {
		t.Fatal(err)
	}
	r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || len(r.Removed) != 1 || r.Removed[0] != hostile {
		t.Fatalf("reap = %+v, %v; want the hostile key removed", r, err)
	}
	if files := f.files(victim); len(files) != 1 || files[0] != own {
		t.Fatalf("the victim's files are %v, want its record's %s", files, own)
	}
	f.holds(victim, "one", 1)
}

// A name under the records that is no key is foreign input, never a path:
// check reports it from etcd and looks nothing up outside the transcripts
// dir by it (here, a link beside the dir, which it would report with its
// target).
func TestCheckLooksNothingUpOutsideTheDirByARecordsName(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	outside := filepath.Join(filepath.Dir(f.dir), "outside")
	if err := os.Symlink("/etc/passwd", outside); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../outside", "../../" + filepath.Base(filepath.Dir(f.dir)) + "/outside", "./", "."} {
		if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/"+name, "\xc1"); err != nil {
			t.Fatal(err)
		}
	}
	var found []store.Finding
	_, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range found {
		if !strings.HasPrefix(fd.Path, f.prefix+"/record/") || fd.Kind != store.KindNotAKey {
			t.Errorf("finding %+v: want only the records whose names are no key, reported from etcd", fd)
		}
	}
	if len(found) != 4 {
		t.Fatalf("found %d, want the 4 records", len(found))
	}
}

// A history entry above the last slot a history has, 2^64-1 (another
// binary's, an older sessdb's, or written by hand) leaves no slot above
// it: the key's history is damaged, which check reports at the entry's
// path and a promotion is refused for, never a store that is taken for
// unavailable. (check --repair numbers it again:
// TestARepairRenumbersAHistoryWhoseNewestEntryIsAboveTheLastSlot.)
func TestHistoryEntryInTheLastSlotIsDamage(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "hostile", "lastslot")
	f.run(key, "one")
	cli := c.Client(t)
	hist := f.prefix + "/history/" + key + "/"
	got, err := cli.Get(t.Context(), hist+"0000000000000001")
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("the key's first entry: %v, %v", got, err)
	}
	if _, err := cli.Put(t.Context(), hist+"ffffffffffffffff", string(got.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	var found []store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Path != hist+"ffffffffffffffff" || found[0].Kind != store.KindRecordUndecodable {
		t.Fatalf("check found %+v; want the entry reported undecodable", found)
	}
	sess, _ := f.job(key, "two")
	res, err := f.promote(sess)
	if res.Promoted || !errors.Is(err, etcdmeta.ErrDamaged) {
		t.Fatalf("promote = %+v, %v; want refused for the damaged history", res, err)
	}
	f.holds(key, "one", 1)
}

// A key's directory that is a link (to a dir outside the transcripts dir,
// holding a file of the record's name) is never followed by dump either:
// the report gives nothing of the file beyond the link.
func TestInspectNeverFollowsALinkedKeyDir(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "hostile", "linkeddir")
	f.run(key, "one")
	name := f.recordFile(key)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, filepath.Base(name)), make([]byte, 12345), 0o600); err != nil {
		t.Fatal(err)
	}
	kd := filepath.Join(f.dir, key)
	if err := os.Rename(kd, kd+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, kd); err != nil {
		t.Fatal(err)
	}
	var got []Report
	if err := f.b.Inspect(t.Context(), InspectOptions{Only: key}, func(r Report) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Transcript == nil || got[0].Transcript.Bytes != 0 || !got[0].Transcript.ModTime.IsZero() {
		t.Fatalf("inspect = %+v; want the file behind the link unreported", got)
	}
}

// A record at the last generation (another binary's, or written by hand)
// is promoted onto at that generation again (the count saturates), so a
// file of it in flight is not above the record's: the sweep still keeps
// it through the in-flight window, as it does a generation above.
func TestSweepKeepsAPromotionInFlightAtTheLastGeneration(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "hostile", "lastgen")
	f.run(key, "a")
	data, err := os.ReadFile(filepath.Join(f.dir, f.recordFile(key)))
	if err != nil {
		t.Fatal(err)
	}
	name, size, crc, err := shared.Write(t.Context(), f.dir, key, math.MaxUint64, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	rec := st.Record
	rec.Transcript = &etcdmeta.Transcript{Gen: math.MaxUint64, Size: size, CRC32C: uint64(crc), PromotedAt: time.Now().Add(-time.Minute).UnixNano(), File: name}
	if _, err := f.b.meta.Put(t.Context(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: math.MaxUint64}); err != nil {
		t.Fatal(err)
	}
	sess, _ := f.job(key, "b")
	var swept []string
	f.b.hook = func(p, _ string) error {
		if p == hookCommit {
			f.b.hook = nil
			// A minute on, the new file is older than the grace, well
			// within the in-flight window.
			later := func() time.Time { return time.Now().Add(time.Minute) }
			r, err := f.open().Reap(t.Context(), ReapOptions{Grace: 10 * time.Millisecond, Now: later})
			if err != nil {
				t.Errorf("reap during the commit window: %v", err)
			}
			swept = r.Swept
		}
		return nil
	}
	res, err := f.promote(sess)
	if err != nil || !res.Promoted || res.Gen != math.MaxUint64 {
		t.Fatalf("promote = %+v, %v", res, err)
	}
	for _, n := range swept {
		if n == f.recordFile(key) {
			t.Fatalf("reap swept %s, the promotion in flight that its record names now", n)
		}
	}
	f.holds(key, "b", math.MaxUint64)
}

// A record larger than etcd takes in one request (a venue of megabytes,
// here over etcd's request limit and over gRPC's message limit) can never
// be written: its commit fails at once with etcdmeta.ErrTooLarge, and the
// promotion's file goes with its txn, never as etcd unavailable. The
// larger one was ErrUnavailable (gRPC's ResourceExhausted), retried for
// the whole request timeout, its file left for reap as a commit that may
// have landed. The store now refuses a job's values over 4 KiB
// (store.ErrValueTooLong), so this is the backend's own answer, asked
// through the seam the store commits by.
func TestARecordTooLargeForEtcdIsNoOutage(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	// A commit retried until the request timeout takes the whole 10 s;
	// one that fails at once took up to 0.99 s (two cores, -race, other
	// test binaries beside it: writing the file, fsyncs, marshalling and
	// sending 2 MB), so "at once" is under 3 s: the bound was 1 s, which
	// that run missed by 9 ms.
	const timeout, atOnce = 10 * time.Second, 3 * time.Second
	f := newFixture(t, c, func(cfg *Config) { cfg.RequestTimeout = timeout })
	data := []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	for i, n := range []int{1552 << 10, 2112 << 10} {
		key := store.Key("github", "huge", strconv.Itoa(i))
		txn, err := f.b.Begin(key, store.Base{})
		if err != nil {
			t.Fatal(err)
		}
		txn.State()
		st, err := txn.Stage(1, bytes.NewReader(data), int64(len(data)), false)
		if err != nil {
			t.Fatal(err)
		}
		venue, pi, chain := strings.Repeat("v", n), "0.58.3", uint64(0)
		rec := db.Sidecars{
			Transcript: &db.Transcript{Gen: 1, Size: st.Size, CRC32C: uint64(st.CRC32C), PromotedAt: db.RecordedAt(time.Now())},
			PiVersion:  &pi, Venue: &venue, ResumeChain: &chain,
		}
		began := time.Now()
		err = txn.Commit(st, rec, db.HistoryEntry{Gen: 1, At: db.RecordedAt(time.Now()), Outcome: string(gates.Promoted), Ticket: strings.Repeat("a", 32)})
		if took := time.Since(began); !errors.Is(err, etcdmeta.ErrTooLarge) || errors.Is(err, etcdmeta.ErrUnavailable) || took > atOnce {
			t.Errorf("venue of %d bytes: commit = %v after %v; want too large, at once", n, err, took)
		}
		if err := txn.Close(); err != nil {
			t.Error(err)
		}
		if files := f.files(key); len(files) != 0 {
			t.Errorf("venue of %d bytes: the key's files are %v, want none", n, files)
		}
	}
}

// A fleet's keys live under its prefix's record/, history/ and lock/: a
// prefix that reaches into another's (here one fleet's history dir of a
// key) is refused, since the other fleet's writes and deletes would take
// its records for their own. Opened, the inner fleet's records were
// deleted by the outer's reap of the key its prefix names.
func TestAPrefixNestedInAnotherFleetsKeysIsRefused(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	outer := newFixture(t, c)
	key := store.Key("github", "nest", "outer")
	old := time.Now().Add(-30 * 24 * time.Hour)
	outer.now = old
	outer.run(key, "one")
	for _, sub := range []string{"/history/" + key, "/record", "/lock/" + key, "/history"} {
		cfg := Config{Config: etcdmeta.Config{Endpoints: c.Endpoints(), Prefix: outer.prefix + sub}, TranscriptsDir: t.TempDir()}
		b, err := Open(cfg)
		if err == nil {
			inner := &fixture{t: t, c: c, prefix: cfg.Prefix, dir: cfg.TranscriptsDir, b: b}
			inner.s = store.NewOn(b, store.Options{Now: inner.clock})
			k := store.Key("github", "nest", "inner")
			inner.run(k, "inner")
			res, err := outer.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, DryRun: true})
			st, gerr := b.meta.GetRecord(t.Context(), k)
			t.Errorf("prefix %s was opened; the outer fleet's (dry) reap: %+v, %v; the inner key's record after: rev %d, %v", sub, res, err, st.Rev, gerr)
			b.Close()
			continue
		}
		if !errors.Is(err, etcdmeta.ErrInvalidConfig) || !strings.Contains(err.Error(), "Prefix") {
			t.Errorf("prefix %s: %v, want an invalid Prefix", sub, err)
		}
	}
	for _, ok := range []string{"/sessdb/a", "/sessdb/records", "/histories", "locks/x"} {
		if _, err := (etcdmeta.Config{Endpoints: c.Endpoints(), Prefix: ok}).Validate(); err != nil {
			t.Errorf("prefix %s: %v", ok, err)
		}
	}
}

// A record dated in the future (its promoter's clock a year ahead) still
// expires: past the TTL since its file was written (the file server's
// clock), a resolve cold-starts it as expired and reap removes it. It
// resumed, and reap kept it, until the promoter's date came: a year here.
func TestAPromotionDatedInTheFutureStillExpires(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key, sane := store.Key("github", "future", "ahead"), store.Key("github", "future", "sane")
	f.now = time.Now().Add(365 * 24 * time.Hour)
	f.run(key, "one")
	// Ten minutes short of the TTL by its date.
	saneAt := time.Now().Add(-14*24*time.Hour + 10*time.Minute)
	f.now = saneAt
	f.run(sane, "one")
	f.now = time.Time{}
	then := time.Now().Add(-20 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, f.recordFile(key)), then, then); err != nil {
		t.Fatal(err)
	}
	behind := saneAt.Add(-25 * time.Minute)
	if err := os.Chtimes(filepath.Join(f.dir, f.recordFile(sane)), behind, behind); err != nil {
		t.Fatal(err)
	}
	if sess, _ := resolveOn(t, f.s, key); sess.Resume || sess.Reason != gates.Expired {
		t.Errorf("resolve = %s, want a cold start, expired", sess.Reason)
	}
	// A record whose date is within a commit's reach of its file's mtime
	// is judged by its date alone (here a file server 25 minutes behind,
	// which by the mtime would have expired the key).
	f.holds(sane, "one", 1)
	r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || !slices.Equal(r.Removed, []string{key}) {
		t.Fatalf("reap = %+v, %v; want %s removed", r, err, key)
	}
}

// A record dated in the future that has expired stays expired as time
// goes on: its date coming does not make it young again. Judged by
// whether its date was in the future at the judge's now, it counted from
// its file's mtime until then and from its date after, so a key expired
// today (its file 20 days old, its date 5 days ahead) resumed 6 days
// later, and a resolve on a worker whose clock was 6 days ahead resumed
// it at the moment a reaper with the right clock removed it.
func TestAnExpiredPromotionDatedInTheFutureStaysExpired(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "future", "revived")
	f.now = time.Now().Add(5 * 24 * time.Hour)
	f.run(key, "one")
	then := time.Now().Add(-20 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, f.recordFile(key)), then, then); err != nil {
		t.Fatal(err)
	}
	for _, ahead := range []time.Duration{0, 6 * 24 * time.Hour} {
		at := time.Now().Add(ahead)
		f.now = at
		if sess, _ := resolveOn(t, f.s, key); sess.Resume || sess.Reason != gates.Expired {
			t.Errorf("%v ahead: resolve = %s, want a cold start, expired", ahead, sess.Reason)
		}
		r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, DryRun: true, Now: func() time.Time { return at }})
		if err != nil || !slices.Equal(r.Removed, []string{key}) {
			t.Errorf("%v ahead: reap = %+v, %v; want %s removed", ahead, r, err, key)
		}
	}
}

// A record whose name is no key and longer than a file name may be (a
// tool's or a newer binary's key under the prefix: etcd takes names of up
// to its request limit) is a notice, as every such name is, and nothing
// else: check looked the name up in the transcripts dir, and the lookup's
// ENAMETOOLONG was a problem, `unreadable`, counted failed, which made
// every check of the fleet exit 1 while the name stayed.
func TestARecordNameLongerThanAFileNameIsOnlyANotice(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "hostile", "long-name")
	f.run(key, "one")
	long := strings.Repeat("b", 300)
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/"+long, "x"); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		var found []store.Finding
		sum, err := f.b.Check(t.Context(), CheckOptions{Repair: repair}, func(fd store.Finding) error {
			found = append(found, fd)
			return nil
		})
		if err != nil || sum.Problems != 0 || len(found) != 1 || found[0].Kind != store.KindNotAKey || found[0].Path != f.prefix+"/record/"+long {
			t.Errorf("check (repair %v) = %+v, %v, found %+v; want the name's notice alone", repair, sum, err, found)
		}
	}
	f.holds(key, "one", 1)
}

// The other half of that rule: a record's name that is no key is looked
// up in the transcripts dir when the dir's listing has an entry by that
// name, and the entry is reported beside the record, as every entry that
// is no key is. Nothing else held it: skipping the lookup of every such
// name that has a record passed every test, and the entry went
// unreported.
func TestANameThatIsNoKeyInEtcdAndInTheDirIsReportedInBoth(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.run(store.Key("github", "hostile", "both"), "one")
	const name = "not-a-key"
	if err := os.Mkdir(filepath.Join(f.dir, name), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/"+name, "x"); err != nil {
		t.Fatal(err)
	}
	var found []string
	sum, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
		found = append(found, fd.Path+" "+string(fd.Kind))
		return nil
	})
	want := []string{f.prefix + "/record/" + name + " " + string(store.KindNotAKey), name + " " + string(store.KindNotAKey)}
	if err != nil || sum.Problems != 0 || !slices.Equal(found, want) {
		t.Errorf("check = %+v, %v, found %q; want %q", sum, err, found, want)
	}
}

// A key under a key's history dir with a path of more than one segment
// (another tool's, or another fleet's nested under it), whose last
// segment is a slot's name and whose value is an entry (here a copy of
// the key's first), is no entry of the key's: it is damage, named by its
// whole name under the dir. It was read as the key's newest entry, since
// only the name's last segment was parsed: check found nothing, and
// every promotion of the key lost its slot's compare to it 16 times and
// was promote-failed as etcd unavailable, for as long as it stayed.
func TestANestedNameUnderAKeysHistoryIsDamage(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	// The second's last segment is the name above the last slot, which
	// is damage of its own (check --repair numbers such a history again):
	// nested, it is no entry of the key's at all.
	for i, nested := range []string{"x/0000000000000009", "x/ffffffffffffffff"} {
		t.Run(nested, func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "hostile", "nested-history-"+strconv.Itoa(i))
			f.run(key, "one")
			cli := c.Client(t)
			hist := f.prefix + "/history/" + key + "/"
			got, err := cli.Get(t.Context(), hist+"0000000000000001")
			if err != nil || len(got.Kvs) != 1 {
				t.Fatalf("the key's first entry: %v, %v", got, err)
			}
			if _, err := cli.Put(t.Context(), hist+nested, string(got.Kvs[0].Value)); err != nil {
				t.Fatal(err)
			}
			var found []store.Finding
			if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
				found = append(found, fd)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(found) != 1 || found[0].Path != hist || found[0].Kind != store.KindRecordUndecodable || !strings.Contains(found[0].Detail, strconv.Quote(nested)) {
				t.Errorf("check found %+v; want the key's history reported, naming %q", found, nested)
			}
			sess, _ := f.job(key, "two")
			res, err := f.promote(sess)
			if res.Promoted || !errors.Is(err, etcdmeta.ErrDamaged) || errors.Is(err, etcdmeta.ErrUnavailable) {
				t.Errorf("promote = %+v, %v; want refused for the damaged history, not etcd unavailable", res, err)
			}
			f.holds(key, "one", 1)
		})
	}
}

// A record that decodes but names no file of its key's generation (a
// generation of 0 beside a file of gen 1, a transcript with no name, a
// file of another key's: put by hand, or by another binary) is damage:
// a resolve is meta-unreadable, and the cold job's promotion is refused,
// never written over it, as for a record that does not decode. The key's
// file and record stay for the operator (check names what removes them).
func TestARecordNamingNoFileOfItsGenerationIsNeverWrittenOver(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	other := store.Key("github", "hostile", "other")
	f.run(other, "theirs")
	for i, damage := range []func(t *etcdmeta.Transcript){
		func(t *etcdmeta.Transcript) { t.Gen = 0 },
		func(t *etcdmeta.Transcript) { *t = etcdmeta.Transcript{} },
		func(t *etcdmeta.Transcript) { t.Gen = 0; t.File = "" },
		func(t *etcdmeta.Transcript) { t.Gen = 7 },
		func(t *etcdmeta.Transcript) { t.Size = -1 },
		// Generation 0 with a name of generation 0: the name agrees,
		// but no promotion records generation 0 (db.Transcript.Fault).
		func(t *etcdmeta.Transcript) {
			t.Gen = 0
			k, _, _ := strings.Cut(t.File, "/")
			t.File = k + "/" + strings.Repeat("0", 16) + t.File[len(k)+1+16:]
		},
	} {
		key := store.Key("github", "hostile", "nofile"+strconv.Itoa(i))
		f.run(key, "one")
		st, err := f.b.meta.GetRecord(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		file := st.Record.Transcript.File
		bad := *st.Record.Transcript
		damage(&bad)
		rec := st.Record
		rec.Transcript = &bad
		if _, err := f.b.meta.Put(t.Context(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: bad.Gen, At: bad.PromotedAt}); err != nil {
			t.Fatal(err)
		}
		damaged, err := f.b.meta.GetRecord(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		sess, _ := f.job(key, "cold")
		if sess.Resume || sess.Reason != gates.MetaUnreadable {
			t.Fatalf("damage %d: resolve = %s, want meta-unreadable", i, sess.Reason)
		}
		res, err := f.promote(sess)
		if res.Promoted || res.Reason == gates.Superseded || !errors.Is(err, etcdmeta.ErrDamaged) {
			t.Fatalf("damage %d: promote of the cold job = %+v, %v; want refused for the damaged record, as one that does not decode", i, res, err)
		}
		now, err := f.b.meta.GetRecord(t.Context(), key)
		if err != nil || now.Rev != damaged.Rev {
			t.Fatalf("damage %d: the record is at %d (%v), want the damaged one at %d, left for the operator", i, now.Rev, err, damaged.Rev)
		}
		if files := f.files(key); len(files) != 1 || files[0] != file {
			t.Fatalf("damage %d: the key's files are %v, want its gen 1 alone, %s", i, files, file)
		}
	}
	f.holds(other, "theirs", 1)
}

// A record whose CRC32C is wider than 32 bits (put by hand; no sessdb
// writes one) describes no file: it is damage, as a negative size is, not
// a transcript changed under its record. A resolve is meta-unreadable,
// check and dump say what is wrong with the record, and the cold job's
// promotion is refused, never written over it.
func TestARecordWhoseCRCIsWiderThan32BitsIsDamage(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "hostile", "widecrc")
	f.run(key, "one")
	st, err := f.b.meta.GetRecord(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	bad := *st.Record.Transcript
	bad.CRC32C |= 1 << 32
	rec := st.Record
	rec.Transcript = &bad
	rev, err := f.b.meta.Put(t.Context(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: bad.Gen, At: bad.PromotedAt})
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := f.job(key, "cold")
	if sess.Resume || sess.Reason != gates.MetaUnreadable {
		t.Fatalf("resolve = %s, want meta-unreadable", sess.Reason)
	}
	var found []store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := "CRC32C " + strconv.FormatUint(bad.CRC32C, 16) + ", wider than 32 bits"
	if len(found) != 1 || found[0].Kind != store.KindRecordUndecodable || !strings.Contains(found[0].Detail, want) {
		t.Fatalf("check found %+v; want the record reported undecodable, saying %q", found, want)
	}
	res, err := f.promote(sess)
	if res.Promoted || !errors.Is(err, etcdmeta.ErrDamaged) {
		t.Fatalf("promote of the cold job = %+v, %v; want refused for the damaged record", res, err)
	}
	if now, err := f.b.meta.GetRecord(t.Context(), key); err != nil || int64(now.Rev) != int64(rev) {
		t.Fatalf("the record is at %d (%v), want the damaged one at %d", now.Rev, err, rev)
	}
}

// A record whose CRC32C is the widest a file's can be (0xffffffff), its
// file's own being another, describes a file that changed under it, not
// damage: a resolve is transcript-replaced, as for any other CRC32C that
// is not the file's, never meta-unreadable (which would hold every
// promotion of a key whose transcript's checksum is 0xffffffff). The
// bound of TestARecordWhoseCRCIsWiderThan32BitsIsDamage, from below.
func TestARecordWhoseCRCIsAll32BitsIsAFilesChecksum(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "hostile", "allcrc")
	f.run(key, "one")
	st, err := f.b.meta.GetRecord(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Record.Transcript.CRC32C == math.MaxUint32 {
		t.Fatal("the file's own CRC32C is 0xffffffff: the test needs another")
	}
	edited := *st.Record.Transcript
	edited.CRC32C = math.MaxUint32
	rec := st.Record
	rec.Transcript = &edited
	if _, err := f.b.meta.Put(t.Context(), key, st.Rev, rec, etcdmeta.HistoryEntry{Gen: edited.Gen, At: edited.PromotedAt}); err != nil {
		t.Fatal(err)
	}
	if sess, _ := f.job(key, "cold"); sess.Resume || sess.Reason != gates.TranscriptReplaced {
		t.Fatalf("resolve = %s, want transcript-replaced: 0xffffffff is a CRC32C a file has", sess.Reason)
	}
}
