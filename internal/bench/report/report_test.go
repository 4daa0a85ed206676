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
