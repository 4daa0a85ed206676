package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// A target is one line of the targets: a quantity computed inside
// each round, and the bound it must stay under (0: reported, no bound).
type target struct {
	group string
	what  string
	unit  string // "" for a ratio
	bound float64
	f     func(round) (float64, bool)
}

// ratio is a/b of two benchmarks' values in one round.
func ratio(a, b string, unit string) func(round) (float64, bool) {
	return func(r round) (float64, bool) {
		x, ok1 := r.get(a, unit)
		y, ok2 := r.get(b, unit)
		return x / y, ok1 && ok2 && y > 0
	}
}

// overSum is a over the sum of the benchmarks in bs, all in ns/op.
func overSum(a string, bs ...string) func(round) (float64, bool) {
	return func(r round) (float64, bool) {
		x, ok := r.get(a, "ns/op")
		sum := 0.0
		for _, b := range bs {
			y, ok2 := r.get(b, "ns/op")
			ok = ok && ok2
			sum += y
		}
		return x / sum, ok && sum > 0
	}
}

func value(bench, unit string, scale float64) func(round) (float64, bool) {
	return func(r round) (float64, bool) {
		v, ok := r.get(bench, unit)
		return v * scale, ok
	}
}

const (
	P = "BenchmarkPromote/"
	R = "BenchmarkResolve/"
	F = "BenchmarkFloor/"
	D = "BenchmarkDump/"
	K = "BenchmarkDiskPerKey"
	E = "BenchmarkEstimate"
	M = "BenchmarkMigrate/"
)

// perKey reports whether benchmark n reports its time per key (ns/key),
// a walk or a migration of 10,000 key dirs, rather than per op alone.
func perKey(n string) bool { return strings.HasPrefix(n, D) || strings.HasPrefix(n, M) }

func floors(size string) []string {
	return []string{F + size + "/copy", F + "fsync-new-file", F + "empty-commit", F + "rename-dirsync"}
}

func targets() []target {
	var ts []target
	for _, sz := range []string{"64KiB", "8MiB"} {
		b := 0.0
		if sz == "64KiB" {
			b = 0.6
		}
		ts = append(ts, target{"promote", sz + ": sessdb (durable) ÷ legacy made durable", "", b, ratio(P+sz+"/sessdb", P+sz+"/legacy-durable", "ns/op")})
		if sz == "64KiB" {
			b = 1.2
		}
		ts = append(ts, target{"promote", sz + ": sessdb (durable) ÷ legacy as it is (no fsync)", "", b, ratio(P+sz+"/sessdb", P+sz+"/legacy", "ns/op")})
		ts = append(ts, target{"promote", sz + ": sessdb ÷ its floors (copy + fsync of a new file + empty bbolt commit + rename and dir fsync)", "", 1.3, overSum(P+sz+"/sessdb", floors(sz)...)})
		ts = append(ts, target{"promote", sz + ": sessdb ÷ floors with copy-and-fsync of the transcript in place of copy + small-file fsync", "", 0,
			overSum(P+sz+"/sessdb", F+sz+"/copy-fsync", F+"empty-commit", F+"rename-dirsync")})
	}
	for _, sz := range []string{"64KiB", "8MiB"} {
		ts = append(ts, target{"resolve", sz + ", resume: sessdb (CRC32C check included) ÷ legacy", "", 1.0, ratio(R+sz+"/resume/sessdb", R+sz+"/resume/legacy", "ns/op")})
		ts = append(ts, target{"resolve", sz + ", cold (pi-version-changed): sessdb ÷ legacy", "", 1.0, ratio(R+sz+"/cold/sessdb", R+sz+"/cold/legacy", "ns/op")})
		ts = append(ts, target{"resolve", sz + ", resume: sessdb ÷ plain copy (copy_file_range)", "", 1.5, ratio(R+sz+"/resume/sessdb", F+sz+"/copy", "ns/op")})
	}
	for _, cache := range []string{"warm", "cold"} {
		for _, w := range []string{"1w", "2w"} {
			ts = append(ts, target{"dump", fmt.Sprintf("%s cache, %s: sessdb ÷ legacy walk, per key", cache, workers(w)), "", 1.5,
				ratio(D+cache+"/"+w+"/sessdb", D+cache+"/"+w+"/legacy", "ns/key")})
		}
		ts = append(ts, target{"dump", cache + " cache: sessdb on 2 workers ÷ legacy walk on 1", "", 0, ratio(D+cache+"/2w/sessdb", D+cache+"/1w/legacy", "ns/key")})
		for _, impl := range []string{"sessdb", "legacy"} {
			for _, w := range []string{"1w", "2w"} {
				ts = append(ts, target{"dump", fmt.Sprintf("%s cache, %s, %s", cache, workers(w), impl), "µs/key", 0, value(D+cache+"/"+w+"/"+impl, "ns/key", 1e-3)})
			}
		}
	}
	ts = append(ts,
		target{"disk", "meta.db allocated per key after 100 promotions, history included", "KiB", 16, value(K, "metadb-B/key", 1.0/1024)},
		target{"disk", "of which the history ring (meta.db minus the same commits without history entries)", "KiB", 0, value(K, "history-B/key", 1.0/1024)},
		target{"disk", "legacy: the four sidecar files", "KiB", 0, value(K, "sidecars-B/key", 1.0/1024)},
		target{"disk", "meta.db ÷ legacy sidecars", "", 0, func(r round) (float64, bool) {
			x, ok1 := r.get(K, "metadb-B/key")
			y, ok2 := r.get(K, "sidecars-B/key")
			return x / y, ok1 && ok2 && y > 0
		}},
		target{"disk", "meta.db file size (apparent; sparse)", "KiB", 0, value(K, "metadb-size-B", 1.0/1024)},
		target{"disk", "bbolt page size of a new meta.db", "B", 0, value(K, "page-B", 1)},
	)
	// The issue sets no bound on migration: its rows are reported, not
	// judged. The baseline is the dump's legacy walk over the same
	// pristine legacy fleet, measured in the same process.
	for _, dir := range []string{"to-db", "to-legacy"} {
		what := "to-db"
		if dir == "to-legacy" {
			what = "to-legacy (rollback)"
		}
		for _, w := range []string{"1w", "2w"} {
			ts = append(ts, target{"migrate", fmt.Sprintf("%s, %s: migrate ÷ legacy walk, per key", what, workers(w)), "", 0,
				ratio(M+dir+"/"+w, M+"legacy-walk/"+w, "ns/key")})
		}
	}
	for _, dir := range []string{"to-db", "to-legacy"} {
		fleet := "legacy key dirs"
		if dir == "to-legacy" {
			fleet = "migrated key dirs"
		}
		for _, w := range []string{"1w", "2w"} {
			ts = append(ts, target{"migrate", fmt.Sprintf("%s of 10,000 %s, %s, per key", dir, fleet, workers(w)), "ms/key", 0, value(M+dir+"/"+w, "ns/key", 1e-6)})
			ts = append(ts, target{"migrate", fmt.Sprintf("%s, %s, keys per second", dir, workers(w)), "keys/s", 0, value(M+dir+"/"+w, "keys/s", 1)})
		}
	}
	for _, w := range []string{"1w", "2w"} {
		ts = append(ts, target{"migrate", fmt.Sprintf("legacy walk of the same key dirs, %s, per key", workers(w)), "µs/key", 0, value(M+"legacy-walk/"+w, "ns/key", 1e-3)})
	}
	ts = append(ts,
		target{"migrate", "disk per key (du: the key dir, its transcript and the rest): legacy, before to-db", "KiB", 0, value(M+"to-db/1w", "before-B/key", 1.0/1024)},
		target{"migrate", "the same after to-db", "KiB", 0, value(M+"to-db/1w", "after-B/key", 1.0/1024)},
		target{"migrate", "the same after to-legacy (rolled back)", "KiB", 0, value(M+"to-legacy/1w", "after-B/key", 1.0/1024)},
		target{"migrate", "metadata per key (all but the dir and transcript): the four legacy sidecars", "KiB", 0, value(M+"to-db/1w", "before-meta-B/key", 1.0/1024)},
		target{"migrate", "meta.db after to-db", "KiB", 0, value(M+"to-db/1w", "after-meta-B/key", 1.0/1024)},
		target{"migrate", "the sidecars to-legacy writes back", "KiB", 0, value(M+"to-legacy/1w", "after-meta-B/key", 1.0/1024)},
	)
	ts = append(ts,
		target{"engage", "estimate over before-compaction.jsonl (2.3 MB)", "MB/s", 0, value(E, "MB/s", 1)},
		target{"engage", "estimate over the same ten times (23 MB)", "MB/s", 0, value(E+"10x", "MB/s", 1)},
		target{"engage", "peak heap while reading: 10x file ÷ 1x file (flat memory: near 1, far below 10)", "", 0, ratio(E+"10x", E, "peak-heap-B")},
		target{"engage", "peak heap while reading the 10x file", "KiB", 0, value(E+"10x", "peak-heap-B", 1.0/1024)},
		target{"engage", "heap the result retains: 10x file ÷ 1x file (it keeps a record per entry, not the text)", "", 0, ratio(E+"10x", E, "retained-B")},
	)
	return ts
}

func workers(w string) string {
	if w == "1w" {
		return "1 worker"
	}
	return "2 workers"
}

// verdict says whether a bound holds over the rounds: every round under it
// (met), the median under it but not every round (met at the median), or
// not even the median (missed).
func verdict(s summary, bound float64) string {
	switch {
	case bound == 0 || s.N == 0:
		return ""
	case s.Max <= bound:
		return "met"
	case s.Median <= bound:
		return "met at the median"
	}
	return "**missed**"
}

func writeReport(w io.Writer, m machine, rs []round) {
	fmt.Fprintf(w, "Measured on: %s CPUs, %s; %s; benchmark files on %s; %s. %d rounds",
		m.NProc, m.CPU, m.Kernel, m.FS, m.Go, len(rs))
	if m.Benchtime != "" {
		fmt.Fprintf(w, ", -benchtime %s", m.Benchtime)
	}
	fmt.Fprintf(w, ".\n\n")
	fmt.Fprintln(w, "| | quantity | bound | min | median | max | N | |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	last := ""
	for _, t := range targets() {
		s := over(rs, t.f)
		g := ""
		if t.group != last {
			g, last = "**"+t.group+"**", t.group
		}
		bound := ""
		if t.bound > 0 {
			bound = "≤ " + num(t.bound, t.unit)
		}
		if s.N == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | – | – | – | 0 | not measured |\n", g, t.what, bound)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d | %s |\n", g, t.what, bound,
			num(s.Min, t.unit), num(s.Median, t.unit), num(s.Max, t.unit), s.N, verdict(s, t.bound))
	}
	fmt.Fprintln(w)
	writeBenchmarks(w, rs)
}

// writeBenchmarks lists every benchmark's own time, for reading the ratios
// back to what they divide.
func writeBenchmarks(w io.Writer, rs []round) {
	names := map[string]bool{}
	for _, r := range rs {
		for n := range r {
			names[n] = true
		}
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	fmt.Fprintln(w, "<details><summary>Every benchmark, time per op (min / median / max over the rounds)</summary>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| benchmark | min | median | max | N |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, n := range sorted {
		unit := "ns/op"
		if perKey(n) {
			unit = "ns/key"
		}
		s := over(rs, func(r round) (float64, bool) { return r.get(n, unit) })
		if s.N == 0 {
			continue
		}
		suffix := ""
		if unit == "ns/key" {
			suffix = " per key"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d |\n", strings.TrimPrefix(n, "Benchmark"),
			dur(s.Min)+suffix, dur(s.Median)+suffix, dur(s.Max)+suffix, s.N)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "</details>")
}

func num(v float64, unit string) string {
	switch unit {
	case "":
		return fmt.Sprintf("%.2f", v)
	case "B":
		return fmt.Sprintf("%.0f B", v)
	case "KiB":
		return fmt.Sprintf("%.1f KiB", v)
	case "MB/s":
		return fmt.Sprintf("%.0f MB/s", v)
	case "µs/key":
		return fmt.Sprintf("%.1f µs", v)
	case "ms/key":
		return fmt.Sprintf("%.2f ms", v)
	case "keys/s":
		return fmt.Sprintf("%.0f keys/s", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

// dur formats nanoseconds.
func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}
