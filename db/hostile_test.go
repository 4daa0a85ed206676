package db

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hostile tests of issue 15: a meta.db changed under its readers by
// another process, and a damaged meta.db handed to a writer.

const (
	cutEnv        = "SESSDB_DB_TEST_CUT"       // a child cuts this meta.db short and restores it
	cutUntilEnv   = "SESSDB_DB_TEST_CUT_UNTIL" // ... until this unix-nanosecond deadline
	cutSecondsEnv = "SESSDB_TRUNCATE_SECONDS"  // the long run's length; a few seconds without it
	flipsEnv      = "SESSDB_WRITER_FLIPS"      // "all", or how many flips to sample
	figuresMark   = "figures:"                 // the lines of a child's output its parent logs
	bigJob        = 60 << 10                   // the hostile pass's job ids
	bigPromotions = 24
)

// bigDB builds a meta.db whose pages pass snapshotLimit the way the hostile
// pass grew one through the CLI: promotions with 60 KB job ids, so that
// readers go through bbolt's mapping.
func bigDB(t testing.TB) keyDir {
	t.Helper()
	kd := newKeyDir(t)
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	for g := 1; g <= bigPromotions; g++ {
		if _, _, err := promoteLike(d, fmt.Sprintf("%d-%s", g, strings.Repeat("j", bigJob))); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	if m.HighWater() <= snapshotLimit {
		t.Fatalf("high-water mark %d: the file would be read as a snapshot", m.HighWater())
	}
	return kd
}

// promoteLike does what a promotion does to the db: read the sidecars,
// then in one transaction write the next generation's identity, every
// sidecar and a history entry. It returns what it wrote.
func promoteLike(d *DB, tag string) (want Sidecars, entry HistoryEntry, err error) {
	var prev Sidecars
	if err := d.View(func(tx *Tx) (err error) { prev, err = tx.Sidecars(); return err }); err != nil {
		return want, entry, err
	}
	gen := uint64(1)
	if prev.Transcript != nil {
		gen = prev.Transcript.Gen + 1
	}
	size := int64(len(tag))
	want = Sidecars{
		Transcript:  &Transcript{Gen: gen, Size: size, CRC32C: 0xc0ffee, PromotedAt: 1_800_000_000e9},
		PiVersion:   ptr("0.60.1"),
		Venue:       ptr("podman"),
		ResumeChain: ptr(gen % 7),
		Context:     &Context{Tokens: 1234, Window: 200000, Model: "prov/m-" + strconv.FormatUint(gen, 10)},
		Pending:     &Pending{Tmp: ".current.jsonl.tmp-" + strconv.FormatUint(gen, 10), Size: size, CRC32C: 0xc0ffee, Gen: gen},
	}
	entry = HistoryEntry{Gen: gen, At: 1_800_000_000e9, Resumed: true, Reason: "resumed", Bytes: size, Chain: gen % 7, Job: tag}
	err = d.Update(func(tx *Tx) (err error) {
		err = errors.Join(
			tx.PutTranscript(*want.Transcript),
			tx.PutPiVersion(*want.PiVersion),
			tx.PutVenue(*want.Venue),
			tx.PutResumeChain(*want.ResumeChain),
			tx.PutContext(want.Context),
			tx.PutPending(want.Pending),
		)
		if err == nil {
			entry.Seq, err = tx.AppendHistory(entry)
		}
		return err
	})
	return want, entry, err
}

// TestReadersSurviveTruncation is issue 15 item 3: readers of a meta.db
// over 1 MiB open, read and close it while another goroutine and another
// process cut it short and write the lost tail back, over and over. Every
// call must return nil or ErrDamaged (ErrLockTimeout at worst), and the
// process must live: the readers run in a child process, so that a fault
// fails the test instead of killing the test binary.
func TestReadersSurviveTruncation(t *testing.T) {
	if path := os.Getenv(cutEnv); path != "" {
		if os.Getenv(childEnv) == t.Name() { // the cutting process
			until, _ := strconv.ParseInt(os.Getenv(cutUntilEnv), 10, 64)
			orig := readFile(t, path)
			cuts, err := cutAndRestore(path, orig, uint64(os.Getpid()), func() bool { return time.Now().UnixNano() > until })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("cutting process: %d cuts", cuts)
		}
		return
	}
	dur := 3 * time.Second
	if s := os.Getenv(cutSecondsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q is not a positive number of seconds", cutSecondsEnv, s)
		}
		dur = time.Duration(n) * time.Second
	}
	inChildFigures(t, func(t *testing.T) { truncationLoop(t, dur) })
}

func truncationLoop(t *testing.T, dur time.Duration) {
	kd := bigDB(t)
	orig := readFile(t, kd.db)
	until := time.Now().Add(dur)
	stop := func() bool { return time.Now().After(until) }

	var cutter *exec.Cmd
	var cutterOut bytes.Buffer
	_, err := runChild(t, []string{cutEnv + "=" + kd.db, fmt.Sprintf("%s=%d", cutUntilEnv, until.UnixNano())}, func(c *exec.Cmd) {
		cutter = c
		c.Stdout, c.Stderr = &cutterOut, &cutterOut
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var goroutineCuts int
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		if goroutineCuts, err = cutAndRestore(kd.db, orig, 1, stop); err != nil {
			t.Error(err)
		}
	}()

	var tl truncationTally
	const readers = 3
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := openKeyDir(t, kd.path) // readers do not share a directory descriptor
			if i == 0 {
				other = kd
			}
			for !stop() {
				tl.add(readOnce(other))
			}
		}()
	}
	wg.Wait()
	if err := cutter.Wait(); err != nil {
		t.Fatalf("cutting process: %v\n%s", err, cutterOut.String())
	}
	if !strings.Contains(cutterOut.String(), "--- PASS") {
		t.Fatalf("the cutting process did not run:\n%s", cutterOut.String())
	}
	t.Logf("%s %d runs in %v: ok %d, torn reads without an error %d, damaged at open %d, damaged at read %d, lock timeout %d, other %d; cuts: goroutine %d, process %s; crashes 0",
		figuresMark, tl.runs, dur, tl.ok, tl.torn, tl.openDamaged, tl.readDamaged, tl.lockTimeout, len(tl.other), goroutineCuts, firstField(cutterOut.String(), "cutting process:"))
	for i, err := range tl.other {
		if i == 10 {
			t.Errorf("and %d more", len(tl.other)-10)
			break
		}
		t.Errorf("a reader got an error that is neither ErrDamaged nor ErrLockTimeout: %v", err)
	}
	if tl.openDamaged+tl.readDamaged == 0 {
		t.Errorf("no reader met a cut file in %d runs", tl.runs)
	}

	// Restored, the file reads whole again: the damage was the cutting's.
	if err := os.WriteFile(kd.db, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := readOnce(kd); r.err != nil || r.torn {
		t.Fatalf("the restored file: %v, torn %v", r.err, r.torn)
	}
}

// cutAndRestore cuts the file at path to a random length and writes the
// lost tail back, until stop says so: the hostile pass's second process.
func cutAndRestore(path string, orig []byte, seed uint64, stop func() bool) (cuts int, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(seed, 15))
	for !stop() {
		// A quarter of the cuts anywhere; the rest into the first pages, where
		// every open reads (the root, meta/, sidecars/) right after the
		// pre-check: a cut there lands on the opens' own reads.
		n := rng.Int64N(int64(len(orig)))
		if rng.IntN(4) != 0 {
			n = rng.Int64N(min(64<<10, int64(len(orig))))
		}
		if err := f.Truncate(n); err != nil {
			return cuts, err
		}
		time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		if _, err := f.WriteAt(orig[n:], n); err != nil {
			return cuts, err
		}
		cuts++
		time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond)
	}
	return cuts, nil
}

// readResult is one reader's open, reads and close: the first error, and
// where it came.
type readResult struct {
	err    error
	atOpen bool
	torn   bool // every call returned nil, but what was read is not what bigDB wrote
}

// readOnce opens the file as a reader, reads everything a resolve and a
// dump read, and closes it. The cutting restores the same bytes, but a cut
// in the middle of an OS page leaves the rest of it zero until the
// restore, and a reader that meets zeros there may read a torn page:
// bbolt pages carry no checksum. A reader refuses what it read while the
// file's size or modification time moved (fileStamp), but where a cut
// and its restore fall within one tick of the file system's clock, as
// the write before them did, neither moves. A torn read is counted, not
// failed: 1 in 206,501 runs in .ci/long on 2d17218, before the stamp.
func readOnce(kd keyDir) readResult {
	d, err := OpenReader(kd.dir, kd.db, Options{LockTimeout: time.Second})
	if err != nil {
		return readResult{err: err, atOpen: true}
	}
	torn := false
	var errs []error
	errs = append(errs, d.View(func(tx *Tx) error {
		m, err := tx.Meta()
		errs = append(errs, err)
		s, err := tx.Sidecars()
		errs = append(errs, err)
		h, err := tx.History(0)
		torn = m.Schema != SchemaVersion || s.Transcript == nil || s.Transcript.Gen != bigPromotions || len(h) != bigPromotions
		return err
	}))
	errs = append(errs, d.View(func(tx *Tx) error { _, err := tx.History(3); return err }))
	errs = append(errs, d.Close())
	for _, err := range errs {
		if err != nil {
			return readResult{err: err}
		}
	}
	return readResult{torn: torn}
}

type truncationTally struct {
	sync.Mutex
	runs, ok, torn, openDamaged, readDamaged, lockTimeout int
	other                                                 []error
}

func (tl *truncationTally) add(r readResult) {
	tl.Lock()
	defer tl.Unlock()
	tl.runs++
	switch {
	case r.err == nil && r.torn:
		tl.torn++
	case r.err == nil:
		tl.ok++
	case errors.Is(r.err, ErrLockTimeout):
		tl.lockTimeout++
	case errors.Is(r.err, ErrDamaged) && r.atOpen:
		tl.openDamaged++
	case errors.Is(r.err, ErrDamaged):
		tl.readDamaged++
	default:
		tl.other = append(tl.other, r.err)
	}
}

// inChildFigures is inChild for a test whose child reports figures: the
// lines of its output that carry figuresMark are logged here.
func inChildFigures(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	switch os.Getenv(childEnv) {
	case t.Name():
		body(t)
		return
	case "":
	default:
		t.Skip("another test's child process")
	}
	out, err := runChild(t, nil, nil)
	if err != nil {
		t.Fatalf("child %s: %v\n%s", t.Name(), err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if _, after, ok := strings.Cut(sc.Text(), figuresMark); ok {
			t.Log(strings.TrimSpace(after))
		}
	}
}

func firstField(out, after string) string {
	_, rest, ok := strings.Cut(out, after)
	if !ok {
		return "?"
	}
	if f := strings.Fields(rest); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// writerTrial is what became of one damaged file handed to a promotion.
type writerTrial struct {
	outcome string // refused-open, refused-read, refused-update, committed
	before  error  // what a reader said of the damaged file
}

// tryWriter writes file to kd, reads it as a reader would, promotes onto it
// as the store does, and reads it again. It returns an error for a broken
// promise: a writer that fails otherwise than by refusing, a commit into a
// file a reader refuses, a commit that a reader then refuses or reads
// otherwise, a generation below minGen (what the file held before it was
// damaged) or below what a reader read, a page left both free and in use.
func tryWriter(kd keyDir, file []byte, minGen uint64, tag string) (writerTrial, error) {
	var tr writerTrial
	if err := os.WriteFile(kd.db, file, 0o600); err != nil {
		return tr, err
	}
	var beforeGen uint64
	tr.before = readAllOnce(kd, func(s Sidecars, h []HistoryEntry) {
		if s.Transcript != nil {
			beforeGen = s.Transcript.Gen
		}
	})
	refused := func(at string, err error) (writerTrial, error) {
		tr.outcome = "refused-" + at
		if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNewerSchema) {
			return tr, fmt.Errorf("%s: %w is not a refusal (ErrDamaged, ErrNewerSchema)", at, err)
		}
		return tr, nil
	}
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		return refused("open", err)
	}
	want, entry, err := promoteLike(d, tag)
	cerr := d.Close()
	if err != nil {
		at := "update"
		if want.Transcript == nil {
			at = "read"
		}
		return refused(at, err)
	}
	if cerr != nil {
		return tr, fmt.Errorf("close after a commit: %w", cerr)
	}
	tr.outcome = "committed"
	if tr.before != nil {
		return tr, fmt.Errorf("committed gen %d into a file a reader refuses: %w", want.Transcript.Gen, tr.before)
	}
	if g := want.Transcript.Gen; g < minGen || g < beforeGen {
		return tr, fmt.Errorf("committed gen %d over a file at gen %d (a reader read %d): the generation went back", g, minGen, beforeGen)
	}
	var got Sidecars
	var last HistoryEntry
	if err := readAllOnce(kd, func(s Sidecars, h []HistoryEntry) {
		got = s
		if len(h) > 0 {
			last = h[len(h)-1]
		}
	}); err != nil {
		return tr, fmt.Errorf("committed gen %d, then a reader refuses the file: %w", want.Transcript.Gen, err)
	}
	if !reflect.DeepEqual(got, want) {
		return tr, fmt.Errorf("committed %s, a reader reads %s", show(want), show(got))
	}
	if last != entry {
		return tr, fmt.Errorf("appended history %+v, a reader reads %+v as the newest", entry, last)
	}
	// A page both free and in use is overwritten by a later commit: the
	// records on it are lost then, though this commit reads back.
	r, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		return tr, err
	}
	problems, err := r.Check(10)
	r.Close()
	if err != nil {
		return tr, fmt.Errorf("check after the commit: %w", err)
	}
	for _, p := range problems {
		for _, bad := range []string{"reachable freed", "multiple references", "already freed"} {
			if strings.Contains(p, bad) {
				return tr, fmt.Errorf("after the commit bbolt's check finds %q", p)
			}
		}
	}
	return tr, nil
}

// readAllOnce opens a reader and reads what a resolve and a dump read.
func readAllOnce(kd keyDir, use func(Sidecars, []HistoryEntry)) error {
	d, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		return err
	}
	err = d.View(func(tx *Tx) error {
		_, err := tx.Meta()
		if err != nil {
			return err
		}
		s, err := tx.Sidecars()
		if err != nil {
			return err
		}
		h, err := tx.History(0)
		if err != nil {
			return err
		}
		use(s, h)
		return nil
	})
	return errors.Join(err, d.Close())
}

// flipBase builds the file the flip tests damage: a few promotions'
// worth of identity, sidecars and history, on the pages bbolt leaves.
func flipBase(t testing.TB) (file []byte, gen uint64, hw int64) {
	t.Helper()
	kd := newKeyDir(t)
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	var want Sidecars
	for i := range 4 {
		if want, _, err = promoteLike(d, fmt.Sprintf("job-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	return readFile(t, kd.db), want.Transcript.Gen, m.HighWater()
}

// TestWriterFlips is issue 15 item 4: every single-byte change of a real
// meta.db, handed to a promotion. Either the writer refuses it (ErrDamaged,
// or ErrNewerSchema for a schema byte turned into a later version), or its
// commit is read back exactly by a fresh reader at a generation no lower
// than the file's. It never commits into a file a reader refuses. Bytes
// past the high-water mark are never read by anyone and are left alone.
// The suite samples the flips; SESSDB_WRITER_FLIPS=all tries all 255 other
// values of every byte (SESSDB_WRITER_FLIPS=N samples N).
func TestWriterFlips(t *testing.T) {
	inChildFigures(t, func(t *testing.T) {
		base, gen, hw := flipBase(t)
		type flip struct {
			pos int
			val byte
		}
		var flips []flip
		switch n := os.Getenv(flipsEnv); n {
		case "all":
			for pos := range int(hw) {
				for v := range 256 {
					if byte(v) != base[pos] {
						flips = append(flips, flip{pos, byte(v)})
					}
				}
			}
		default:
			count := 1500
			if n != "" {
				var err error
				if count, err = strconv.Atoi(n); err != nil || count <= 0 {
					t.Fatalf("%s=%q is neither \"all\" nor a positive count", flipsEnv, n)
				}
			}
			rng := rand.New(rand.NewPCG(15, 4))
			for range count {
				pos := rng.IntN(int(hw))
				flips = append(flips, flip{pos, base[pos] ^ byte(1+rng.IntN(255))})
			}
		}
		kd := newKeyDir(t)
		counts := map[string]int{}
		readerRefused, readBack := 0, 0
		var failures []string
		start := time.Now()
		for i, f := range flips {
			file := bytes.Clone(base)
			file[f.pos] = f.val
			tr, err := tryWriter(kd, file, gen, fmt.Sprintf("flip-%d", i))
			counts[tr.outcome]++
			if tr.before != nil {
				readerRefused++
			}
			if err != nil {
				failures = append(failures, fmt.Sprintf("byte %d %#02x -> %#02x: %v", f.pos, base[f.pos], f.val, err))
			} else if tr.outcome == "committed" {
				readBack++
			}
		}
		t.Logf("%s %d flips of a %d-byte file (high-water mark %d, gen %d) in %v: refused at open %d, at the read %d, at the update %d; committed and read back %d; a reader refused %d; broken promises %d",
			figuresMark, len(flips), len(base), hw, gen, time.Since(start).Round(time.Millisecond),
			counts["refused-open"], counts["refused-read"], counts["refused-update"], readBack, readerRefused, len(failures))
		for i, f := range failures {
			if i == 20 {
				t.Errorf("and %d more", len(failures)-20)
				break
			}
			t.Error(f)
		}
	})
}

// FuzzWriter hands arbitrary files to a promotion, with the promises of
// TestWriterFlips. A file a reader refuses must be refused by the writer
// too; what the writer commits must read back exactly.
func FuzzWriter(f *testing.F) {
	base, _, hw := flipBase(f)
	f.Add(base[:hw])
	kd := newKeyDir(f) // each input replaces the file; a worker runs one at a time
	f.Fuzz(func(t *testing.T, file []byte) {
		if _, err := tryWriter(kd, file, 0, "fuzz"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPageSizeMessage is issue 15 item 9: a page size that is a power of
// two but out of range is refused for being out of range, not for failing
// to be a power of two.
func TestPageSizeMessage(t *testing.T) {
	for _, c := range []struct {
		ps        uint32
		want, not string
	}{
		{32 << 20, "above 16 MiB", "not a power of two"},
		{1 << 31, "above 16 MiB", "not a power of two"},
		{512, "below 1 KiB", "not a power of two"},
		{0, "below 1 KiB", "not a power of two"},
		{3000, "not a power of two", "above"},
		{3 << 20, "not a power of two", "above"},
		{1024, "", ""},
		{16 << 20, "", ""},
	} {
		// A file whose first meta page is valid and claims ps: bbolt
		// takes the page size from there.
		page := make([]byte, firstMetaRead)
		m := page[pageHeaderSize:]
		nativeEndian.PutUint32(m[0:], boltMagic)
		nativeEndian.PutUint32(m[4:], boltVersion)
		nativeEndian.PutUint32(m[8:], c.ps)
		h := fnv.New64a()
		h.Write(m[:metaSumBytes])
		nativeEndian.PutUint64(m[metaSumBytes:], h.Sum64())
		_, err := bboltPageSize(bytes.NewReader(page), int64(len(page)))
		if c.want == "" {
			if err != nil {
				t.Errorf("page size %d: %v", c.ps, err)
			}
			continue
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) {
			t.Errorf("page size %d: %v; want ErrDamaged saying %q and not %q", c.ps, err, c.want, c.not)
		}
	}
}

// A freelist that lists a page in use would hand it to the next commit,
// which overwrites it while the tree still reads it: the writer refuses
// such a file before it writes, though readers, which never read the
// freelist, accept it.
func TestWriterRefusesLiveFreePage(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	for i := range HistoryLimit + 6 { // history/ spans several leaves; a promotion rewrites only the last
		if _, _, err := promoteLike(d, fmt.Sprintf("job-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	leaf := uint64(bucketPage(t, kd.db, bucketHistory, leafFlag)) / uint64(m.PageSize)
	file := readFile(t, kd.db)
	off := m.Pages[m.Active].Freelist * uint64(m.PageSize)
	nativeEndian.PutUint16(file[off+10:], 1) // one free page: the first history leaf
	nativeEndian.PutUint64(file[off+pageHeaderSize:], leaf)
	if err := os.WriteFile(kd.db, file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := readAllOnce(kd, func(Sidecars, []HistoryEntry) {}); err != nil {
		t.Fatalf("a reader refuses the file: %v", err)
	}
	tr, err := tryWriter(kd, file, HistoryLimit+6, "live-free-page")
	if err != nil {
		t.Fatal(err)
	}
	if tr.outcome != "refused-open" {
		t.Fatalf("the writer %s a file whose freelist lists page %d, a history leaf", tr.outcome, leaf)
	}
}

// A handle poisoned by a bbolt panic leaves no mapping behind, and no
// descriptor (unmapPoisoned reads /proc/self/maps to find the mapping's
// length): the long truncation run poisons some 80 handles a second, and
// a process has vm.max_map_count (65530) mappings in all.
func TestPoisonedCloseUnmaps(t *testing.T) {
	inChild(t, func(t *testing.T) {
		kd := makeDB(t, HistoryLimit)
		off := bucketPage(t, kd.db, bucketHistory, leafFlag)
		writeAt(t, kd.db, off+8, []byte{0, 0}) // a leaf that is no page type at all
		testSkipWalk = true                    // so that bbolt, not the pre-check, meets it
		defer func() { testSkipWalk = false }()
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		before := fdCount(t)
		d, err := OpenWriter(kd.dir, kd.db, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		addr := d.bdb.Info().Data
		if _, ok := mappingSize(addr); !ok {
			t.Fatalf("no mapping at %#x before Close", addr)
		}
		err = d.View(func(tx *Tx) error { _, err := tx.History(0); return err })
		var pe *panicError
		if !errors.As(err, &pe) || !errors.Is(err, ErrDamaged) {
			t.Fatalf("reading the damaged leaf: %v, want a recovered bbolt panic, damage", err)
		}
		if d.poison.Load() == nil {
			t.Fatal("the handle is not poisoned")
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if size, ok := mappingSize(addr); ok {
			t.Errorf("a mapping of %d bytes is left at %#x after the poisoned handle closed", size, addr)
		}
		if after := fdCount(t); after != before {
			t.Errorf("%d descriptors open after the poisoned handle closed, %d before", after, before)
		}
	})
}
