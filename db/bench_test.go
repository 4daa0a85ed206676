package db

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Run with: go test -run '^$' -bench . -benchtime 2s ./db

// What a resolve costs the db: open under the shared lock, read every
// sidecar and the recent history, close.
func BenchmarkOpenViewClose(b *testing.B) {
	kd := makeDB(b, HistoryLimit)
	for b.Loop() {
		d, err := OpenReader(kd.dir, kd.db, Options{})
		if err != nil {
			b.Fatal(err)
		}
		err = d.View(func(tx *Tx) error {
			_, err1 := tx.Sidecars()
			_, err2 := tx.History(8)
			return errors.Join(err1, err2)
		})
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}

// The pre-check alone, which every open pays before bbolt maps the file.
func BenchmarkPrecheck(b *testing.B) {
	kd := makeDB(b, HistoryLimit)
	f, err := os.Open(kd.db)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	for b.Loop() {
		if err := precheck(f, st.Size()); err != nil {
			b.Fatal(err)
		}
	}
}

// One promotion's transaction on an open writer: every sidecar and a
// history entry, committed (bbolt fsyncs).
func BenchmarkUpdateCommit(b *testing.B) {
	kd := makeDB(b, HistoryLimit)
	d, err := OpenWriter(kd.dir, kd.db, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	gen := uint64(1000)
	for b.Loop() {
		gen++
		err := d.Update(func(tx *Tx) error {
			return errors.Join(
				tx.PutTranscript(Transcript{Gen: gen, Size: 4096, CRC32C: gen}),
				tx.PutPiVersion("0.54.2"),
				tx.PutVenue("local"),
				tx.PutResumeChain(gen%5),
				tx.PutContext(&Context{Tokens: 1, Window: 2, Model: "m"}),
				tx.PutPending(&Pending{Tmp: ".current.jsonl.tmp-x", Gen: gen}),
				appended(tx.AppendHistory(HistoryEntry{Gen: gen, Reason: "resumed", Job: "job"})),
			)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// Opening a full file for writing, nothing written, and closing it: the
// pre-check, the writer's reading of every record as a reader would read
// it, bbolt's open and its check that it reads the pre-checked file.
func BenchmarkOpenWriter(b *testing.B) {
	kd := makeDB(b, HistoryLimit)
	for b.Loop() {
		d, err := OpenWriter(kd.dir, kd.db, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// A whole promotion as the store will run it: open the writer, commit, clear
// pending in a second commit, close.
func BenchmarkOpenWriterUpdateClose(b *testing.B) {
	kd := makeDB(b, HistoryLimit)
	gen := uint64(1000)
	for b.Loop() {
		gen++
		d, err := OpenWriter(kd.dir, kd.db, Options{})
		if err != nil {
			b.Fatal(err)
		}
		err = errors.Join(
			d.Update(func(tx *Tx) error {
				return errors.Join(
					tx.PutTranscript(Transcript{Gen: gen}),
					tx.PutPending(&Pending{Gen: gen}),
					appended(tx.AppendHistory(HistoryEntry{Gen: gen})),
				)
			}),
			d.Update(func(tx *Tx) error { return tx.PutPending(nil) }),
			d.Close(),
		)
		if err != nil {
			b.Fatal(err)
		}
	}
}

// Creating meta.db: temporary file, bbolt init, commit, fsync, link,
// directory fsync.
func BenchmarkCreate(b *testing.B) {
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		path := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(path, 0o700); err != nil {
			b.Fatal(err)
		}
		dir, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		d, err := OpenWriter(dir, filepath.Join(path, FileName), Options{})
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
		dir.Close()
	}
}

// What the key dir's turnstile adds to an uncontended open (two flock calls
// on the key dir): every iteration opens, reads and closes the same meta.db
// once through the turnstile, as the store does, and once without it
// (Options.NoTurnstile), in alternating order, so both see the same load.
// Reported: the mean of each (ns/turnstile, ns/plain) and their ratio
// (x-plain), for a reader and for a writer.
func BenchmarkTurnstile(b *testing.B) {
	for _, write := range []bool{false, true} {
		name := "reader"
		if write {
			name = "writer"
		}
		b.Run(name, func(b *testing.B) { benchTurnstile(b, write) })
	}
}

func benchTurnstile(b *testing.B, write bool) {
	kd := makeDB(b, HistoryLimit)
	openReadClose := func(opts Options) time.Duration {
		start := time.Now()
		open := OpenReader
		if write {
			open = OpenWriter
		}
		d, err := open(kd.dir, kd.db, opts)
		if err != nil {
			b.Fatal(err)
		}
		err = d.View(func(tx *Tx) error {
			_, err := tx.Sidecars()
			return err
		})
		if err := errors.Join(err, d.Close()); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var gated, plain time.Duration
	n := 0
	for b.Loop() {
		if n%2 == 0 {
			gated += openReadClose(Options{})
			plain += openReadClose(Options{NoTurnstile: true})
		} else {
			plain += openReadClose(Options{NoTurnstile: true})
			gated += openReadClose(Options{})
		}
		n++
	}
	b.ReportMetric(float64(gated.Nanoseconds())/float64(n), "ns/turnstile")
	b.ReportMetric(float64(plain.Nanoseconds())/float64(n), "ns/plain")
	b.ReportMetric(float64(gated)/float64(plain), "x-plain")
}
