package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `nproc: 2
cpu: Test CPU
# round 1
BenchmarkPromote/64KiB/sessdb-2     	     397	   1000 ns/op	  44.15 MB/s
BenchmarkPromote/64KiB/legacy-durable-2	  234	   2000 ns/op
BenchmarkDump/warm/1w/sessdb-2 	 2	 300000 ns/op	 30 ns/key
BenchmarkDump/warm/1w/legacy-2 	 2	 200000 ns/op	 20 ns/key
# round 2
BenchmarkPromote/64KiB/sessdb-2     	     397	   1500 ns/op
BenchmarkPromote/64KiB/legacy-durable-2	  234	   2000 ns/op
# round 3
BenchmarkPromote/64KiB/sessdb-2     	     397	   1300 ns/op
BenchmarkPromote/64KiB/legacy-durable-2	  234	   2000 ns/op
--- BENCH: BenchmarkDump/warm/1w/sessdb-2
    dump_test.go:1: built
`

func TestParseAndRatios(t *testing.T) {
	rs := parseRounds([]byte(sample))
	if len(rs) != 3 {
		t.Fatalf("%d rounds, want 3", len(rs))
	}
	s := over(rs, ratio(P+"64KiB/sessdb", P+"64KiB/legacy-durable", "ns/op"))
	if s.N != 3 || s.Min != 0.5 || s.Median != 0.65 || s.Max != 0.75 {
		t.Errorf("ratio summary %+v", s)
	}
	if v := verdict(s, 0.6); v != "**missed**" {
		t.Errorf("median 0.65 against 0.6: %q", v)
	}
	if v := verdict(s, 0.7); v != "met at the median" {
		t.Errorf("median 0.65, max 0.75 against 0.7: %q", v)
	}
	if v := verdict(s, 0.75); v != "met" {
		t.Errorf("max 0.75 against 0.75: %q", v)
	}
	d := over(rs, ratio(D+"warm/1w/sessdb", D+"warm/1w/legacy", "ns/key"))
	if d.N != 1 || d.Median != 1.5 {
		t.Errorf("dump ratio %+v", d)
	}
	if m := machineFromRaw([]byte(sample)); m.NProc != "2" || m.CPU != "Test CPU" {
		t.Errorf("machine %+v", m)
	}
}

func TestSummarizeEven(t *testing.T) {
	if s := summarize([]float64{4, 1, 3, 2}); s.Min != 1 || s.Median != 2.5 || s.Max != 4 || s.N != 4 {
		t.Errorf("%+v", s)
	}
}

func TestReportAndSplice(t *testing.T) {
	var md bytes.Buffer
	writeReport(&md, machine{NProc: "2", Benchtime: "1s"}, parseRounds([]byte(sample)))
	if !strings.Contains(md.String(), "| 0.50 | 0.65 | 0.75 | 3 | **missed** |") {
		t.Errorf("report lacks the promote row:\n%s", md.String())
	}
	p := filepath.Join(t.TempDir(), "doc.md")
	beginMarker, endMarker := markers("journal")
	os.WriteFile(p, []byte("intro\n"+beginMarker+"\nold\n"+endMarker+"\nafter\n"), 0o644)
	if err := splice(p, "journal", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if want := "intro\n" + beginMarker + "\nnew\n" + endMarker + "\nafter\n"; string(got) != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
}

// migrateSample is the raw output of two rounds whose BenchmarkMigrate
// runs came after every round of the other groups, under their round's
// line again (group.after), in the format go test prints its metrics:
// sorted by unit, keys/s before ns/key.
const migrateSample = `nproc: 2
# round 1
BenchmarkPromote/64KiB/sessdb-2     	     397	   1000 ns/op
BenchmarkPromote/64KiB/legacy-durable-2	  234	   2000 ns/op
# round 2
BenchmarkPromote/64KiB/sessdb-2     	     397	   1500 ns/op
BenchmarkPromote/64KiB/legacy-durable-2	  234	   2000 ns/op
# round 1
BenchmarkMigrate/legacy-walk/1w-2         	       4	 300000000 ns/op	     33333 keys/s	     30000 ns/key	64041424 B/op	  300089 allocs/op
BenchmarkMigrate/legacy-walk/2w-2         	       6	 200000000 ns/op	     50000 keys/s	     20000 ns/key
BenchmarkMigrate/to-db/1w-2               	       1	15000000000 ns/op	     28672 after-B/key	      8192 after-meta-B/key	     36864 before-B/key	     16384 before-meta-B/key	       666.7 keys/s	   1500000 ns/key	1355739968 B/op	 4704779 allocs/op
BenchmarkMigrate/to-db/2w-2               	       1	10000000000 ns/op	     28672 after-B/key	      8192 after-meta-B/key	     36864 before-B/key	     16384 before-meta-B/key	      1000 keys/s	   1000000 ns/key
BenchmarkMigrate/to-legacy/1w-2           	       1	24000000000 ns/op	     36864 after-B/key	     16384 after-meta-B/key	     28672 before-B/key	      8192 before-meta-B/key	       416.7 keys/s	   2400000 ns/key
BenchmarkMigrate/to-legacy/2w-2           	       1	16000000000 ns/op	     36864 after-B/key	     16384 after-meta-B/key	     28672 before-B/key	      8192 before-meta-B/key	       625.0 keys/s	   1600000 ns/key
--- BENCH: BenchmarkMigrate/to-legacy/1w-2
    migrate_test.go:168: built 10000 db key dirs in 12.626s
# round 2
BenchmarkMigrate/legacy-walk/1w-2         	       4	 300000000 ns/op	     33333 keys/s	     30000 ns/key
BenchmarkMigrate/to-db/1w-2               	       1	18000000000 ns/op	     28672 after-B/key	      8192 after-meta-B/key	     36864 before-B/key	     16384 before-meta-B/key	       555.6 keys/s	   1800000 ns/key
`

func TestMigrateRows(t *testing.T) {
	rs := parseRounds([]byte(migrateSample))
	if len(rs) != 2 {
		t.Fatalf("%d rounds, want 2: a round's line seen again must join that round", len(rs))
	}
	// Both sides of the promote ratio, and the migrate runs, in round 1.
	if _, ok := rs[0].get(P+"64KiB/sessdb", "ns/op"); !ok {
		t.Errorf("round 1 lost its promote results: %v", rs[0])
	}
	if v, ok := rs[0].get(M+"to-db/1w", "after-meta-B/key"); !ok || v != 8192 {
		t.Errorf("round 1 to-db/1w after-meta-B/key = %v, %v", v, ok)
	}
	if v, ok := rs[1].get(M+"to-db/1w", "ns/key"); !ok || v != 1.8e6 {
		t.Errorf("round 2 to-db/1w ns/key = %v, %v", v, ok)
	}
	d := over(rs, ratio(M+"to-db/1w", M+"legacy-walk/1w", "ns/key"))
	if d.N != 2 || d.Min != 50 || d.Max != 60 || d.Median != 55 {
		t.Errorf("to-db/1w ÷ legacy walk: %+v", d)
	}
	l := over(rs, ratio(M+"to-legacy/2w", M+"legacy-walk/2w", "ns/key"))
	if l.N != 1 || l.Median != 80 {
		t.Errorf("to-legacy/2w ÷ legacy walk: %+v", l)
	}

	var md bytes.Buffer
	writeReport(&md, machine{NProc: "2", Benchtime: "1s"}, rs)
	out := md.String()
	for _, row := range []string{
		"| **migrate** | to-db, 1 worker: migrate ÷ legacy walk, per key |  | 50.00 | 55.00 | 60.00 | 2 |  |",
		"|  | to-legacy (rollback), 2 workers: migrate ÷ legacy walk, per key |  | 80.00 | 80.00 | 80.00 | 1 |  |",
		"|  | to-db of 10,000 legacy key dirs, 1 worker, per key |  | 1.50 ms | 1.65 ms | 1.80 ms | 2 |  |",
		"|  | to-db, 2 workers, keys per second |  | 1000 keys/s | 1000 keys/s | 1000 keys/s | 1 |  |",
		"|  | to-legacy of 10,000 migrated key dirs, 2 workers, per key |  | 1.60 ms | 1.60 ms | 1.60 ms | 1 |  |",
		"|  | legacy walk of the same key dirs, 1 worker, per key |  | 30.0 µs | 30.0 µs | 30.0 µs | 2 |  |",
		"|  | disk per key (du: the key dir, its transcript and the rest): legacy, before to-db |  | 36.0 KiB | 36.0 KiB | 36.0 KiB | 2 |  |",
		"|  | meta.db after to-db |  | 8.0 KiB | 8.0 KiB | 8.0 KiB | 2 |  |",
		"|  | the sidecars to-legacy writes back |  | 16.0 KiB | 16.0 KiB | 16.0 KiB | 1 |  |",
		"| Migrate/to-legacy/1w | 2.40 ms per key | 2.40 ms per key | 2.40 ms per key | 1 |",
	} {
		if !strings.Contains(out, row) {
			t.Errorf("report lacks the row\n%s\nin:\n%s", row, out)
		}
	}
	if !strings.Contains(out, ". 2 rounds, -benchtime 1s.") {
		t.Errorf("the report counts other than 2 rounds:\n%s", out)
	}
}
