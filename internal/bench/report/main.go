// Command report runs sessdb's benchmark set against the legacy baselines
// (issue 7) and writes the ratios table in Markdown: each target's ratio
// with its min, median and max over the rounds.
//
//	go run ./internal/bench/report [-rounds 10] [-o docs/PERFORMANCE.md]
//
// A round runs every benchmark once, in one process per group, and every
// ratio is taken inside one round: the two sides of a ratio run minutes
// apart at most, never in different rounds. That is `-count 1` run N times
// rather than `-count N` once: with -count N, go test runs the N copies of
// one benchmark back to back, so the two sides of a ratio would run a
// whole group apart, and on a shared machine the load changes in between.
//
// The raw output of every round is kept (-raw) in the format benchstat
// reads: `go run golang.org/x/perf/cmd/benchstat@latest FILE` summarises
// each benchmark over the rounds. The ratios themselves are computed here,
// since benchstat compares one benchmark across files, not two benchmarks
// within one.
//
// With -o, the table replaces what lies between the lines
// "<!-- BEGIN REPORT -->" and "<!-- END REPORT -->" of that file (with
// -section NAME, "<!-- BEGIN REPORT NAME -->" and its end line); without
// it, the table goes to stdout.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// group is one `go test` run of a round: a package, the benchmarks it runs
// and how long each is given.
type group struct {
	pkg       string // the package directory, relative to the module root
	bench     string // the -bench regexp
	benchtime string
	// after runs the group only once every round of the other groups has
	// run, each run under its own round's line again: a group that
	// deletes hundreds of thousands of inodes (migration is destructive)
	// would otherwise make the creates of the next round's benchmarks
	// slower (see work in internal/bench/setup_test.go). Its ratios are
	// taken inside one run of the group, so they stay within one round.
	after bool
}

func groups(benchtime string) []group {
	return []group{
		{"internal/bench", "^BenchmarkPromote$|^BenchmarkFloor$/^(fsync-new-file|rename-dirsync|empty-commit)$", benchtime, false},
		// A resolve, a plain copy and a copy variant each create a job dir
		// or a file that nothing deletes while the run lasts (see work in
		// internal/bench/setup_test.go): a fixed count of iterations keeps
		// the inodes a run uses bounded, about 140,000 a round, where a
		// fixed time used close to a million a round here.
		{"internal/bench", "^Benchmark(Resolve|Floor|CopyCRC)$/^64KiB$", "5000x", false},
		{"internal/bench", "^Benchmark(Resolve|Floor|CopyCRC)$/^8MiB$", "500x", false},
		// One op walks 10,000 keys; two of them per run are plenty.
		{"internal/bench", "^BenchmarkDump$", "2x", false},
		// The op is 100 promotions; the figures are its metrics.
		{"internal/bench", "^BenchmarkDiskPerKey$", "1x", false},
		{"engage", "^BenchmarkEstimate", benchtime, false},
		// A migration op converts 10,000 key dirs (10 to 30 s here), so
		// it runs once; the legacy walk it is set against (about 0.3 s)
		// runs a few times. Each migration removes 10,000 to 40,000
		// inodes, and every copy of a fleet is removed when the run ends.
		{pkg: "internal/bench", bench: "^BenchmarkMigrate$", benchtime: benchtime, after: true},
	}
}

func main() {
	rounds := flag.Int("rounds", 10, "how many rounds to run")
	benchtime := flag.String("benchtime", "1s", "-benchtime of the promote, fsync, commit, rename and engage benchmarks (the others run a fixed count)")
	dir := flag.String("dir", os.TempDir(), "where the benchmarks create their files (the filesystem measured)")
	out := flag.String("o", "", "write the table into this Markdown file, between the report markers")
	raw := flag.String("raw", "", "also write every round's raw output here (benchstat's input); default: beside the work dir, kept")
	parse := flag.String("parse", "", "do not run anything: build the table from this raw output file")
	section := flag.String("section", "", "with -o, replace the section marked with this name (\"<!-- BEGIN REPORT name -->\")")
	migrateRounds := flag.Int("migrate-rounds", 3, "how many of the rounds also run the 10,000-key migration benchmarks (2-3 minutes each); 0 skips them")
	flag.Parse()

	if err := run(*rounds, min(*migrateRounds, *rounds), *benchtime, *dir, *out, *section, *raw, *parse); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(rounds, migrateRounds int, benchtime, dir, out, section, raw, parse string) error {
	var rawOut []byte
	var m machine
	if parse != "" {
		b, err := os.ReadFile(parse)
		if err != nil {
			return err
		}
		rawOut = b
		m = machineFromRaw(b)
	} else {
		modRoot, err := moduleRoot()
		if err != nil {
			return err
		}
		work, err := os.MkdirTemp(dir, "sessdb-report-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
		m = describe(work)
		m.Benchtime = benchtime
		if raw == "" {
			raw = filepath.Join(dir, "sessdb-bench-"+time.Now().Format("20060102-150405")+".txt")
		}
		// The raw file is written as the rounds go, so that a run that
		// fails or is stopped half-way keeps what it measured (-parse
		// reads it back).
		f, err := os.Create(raw)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(os.Stderr, "raw results: %s\n", raw)
		if _, err := io.WriteString(f, m.rawHeader()); err != nil {
			return err
		}
		rawOut, err = runRounds(modRoot, work, rounds, migrateRounds, benchtime, f)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	rs := parseRounds(rawOut)
	if len(rs) == 0 {
		return fmt.Errorf("no benchmark results parsed")
	}
	var md bytes.Buffer
	writeReport(&md, m, rs)
	if out == "" {
		_, err := os.Stdout.Write(md.Bytes())
		return err
	}
	return splice(out, section, md.Bytes())
}

// runRounds builds each package's test binary once and runs every group
// rounds times, a round being one run of every group. It returns all the
// output, each round's introduced by a "# round N" line (which benchstat
// skips), and copies it to raw as it comes. The groups marked after run
// once all the rounds of the others have, in the first afterRounds rounds
// only, each under its round's line again (parseRounds joins the two parts
// of a round).
func runRounds(modRoot, work string, rounds, afterRounds int, benchtime string, raw io.Writer) ([]byte, error) {
	gs := groups(benchtime)
	bins := map[string]string{}
	for _, g := range gs {
		if _, ok := bins[g.pkg]; ok {
			continue
		}
		bin := filepath.Join(work, strings.ReplaceAll(g.pkg, "/", "_")+".test")
		cmd := exec.Command("go", "test", "-c", "-o", bin, "./"+g.pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = modRoot, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("build %s: %w", g.pkg, err)
		}
		bins[g.pkg] = bin
	}
	benchDir := filepath.Join(work, "bench")
	if err := os.Mkdir(benchDir, 0o700); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	all := io.MultiWriter(&buf, raw)
	if err := runPhase(bins, modRoot, benchDir, rounds, gs, false, all); err != nil {
		return nil, err
	}
	if err := runPhase(bins, modRoot, benchDir, afterRounds, gs, true, all); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// runPhase runs rounds times the groups whose after field is after, each
// round introduced by its "# round N" line.
func runPhase(bins map[string]string, modRoot, benchDir string, rounds int, gs []group, after bool, all io.Writer) error {
	gs = slices.DeleteFunc(slices.Clone(gs), func(g group) bool { return g.after != after })
	if len(gs) == 0 {
		return nil
	}
	for r := 1; r <= rounds; r++ {
		fmt.Fprintf(all, "# round %d\n", r)
		for _, g := range gs {
			start := time.Now()
			cmd := exec.Command(bins[g.pkg], "-test.run", "^$", "-test.bench", g.bench,
				"-test.benchtime", g.benchtime, "-test.benchmem", "-test.count", "1", "-test.timeout", "60m")
			// go test runs a test binary in its package's directory; the
			// engage benchmarks find ../shared/testdata from there.
			cmd.Dir = filepath.Join(modRoot, g.pkg)
			cmd.Env = append(os.Environ(), "SESSDB_BENCH_DIR="+benchDir)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, all), os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("round %d, %s %s: %w\n%s", r, g.pkg, g.bench, err, out.Bytes())
			}
			fmt.Fprintf(os.Stderr, "round %d/%d: %s %s (%v)\n", r, rounds, g.pkg, g.bench, time.Since(start).Round(time.Second))
		}
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module: run it from the sessdb checkout")
	}
	return filepath.Dir(mod), nil
}

// markers returns the lines that open and close a report section.
func markers(section string) (begin, end string) {
	if section != "" {
		section = " " + section
	}
	return "<!-- BEGIN REPORT" + section + " -->", "<!-- END REPORT" + section + " -->"
}

// splice writes table into the file at path between the markers of
// section, keeping everything around them.
func splice(path, section string, table []byte) error {
	beginMarker, endMarker := markers(section)
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b := bytes.Index(old, []byte(beginMarker))
	e := bytes.Index(old, []byte(endMarker))
	if b < 0 || e < b {
		return fmt.Errorf("%s: no %q ... %q section to replace", path, beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(old[:b+len(beginMarker)])
	out.WriteString("\n")
	out.Write(table)
	out.Write(old[e:])
	return os.WriteFile(path, out.Bytes(), 0o644)
}
