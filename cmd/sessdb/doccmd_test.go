package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sessdb/internal/sharedtest"
)

// The README's and the docs' commands run as shown (issue 12). In every
// fenced block of README.md and docs/*.md:
//
//   - a line "$ sessdb ARGS" (a trailing backslash continues it) is run,
//     and the lines after it, up to the next "$ " or the block's end, are
//     its stdout; a line "..." stands for any number of lines;
//   - in a sh block, a line "sessdb ARGS" or "go run ./cmd/sessdb ARGS"
//     is run for its exit status alone (a usage synopsis, with [...]
//     placeholders, is not a command).
//
// Only the commands that are safe to run are run: those that change
// nothing (dump, stats, check without --repair, reap and migrate with
// --dry-run, engage replay without --svg, help, version) on paths of the
// repository (testdata/, ../shared/testdata/). The clock is the real one:
// what the docs show must hold on any date. -update rewrites each "$ "
// command's output in place.
func TestDocCommands(t *testing.T) {
	root := sharedtest.ModuleRoot()
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	t.Chdir(root)
	clearEnv(t)
	ran, skipped := 0, 0
	for _, path := range docs {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		changed := false
		for i := 0; i < len(lines); i++ {
			if !strings.HasPrefix(lines[i], "```") {
				continue
			}
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
				end++
			}
			block := lines[i+1 : end]
			lang := strings.TrimPrefix(lines[i], "```")
			out, n, s := runDocBlock(t, filepath.Base(path), i+2, block, lang == "sh" || lang == "bash")
			ran, skipped = ran+n, skipped+s
			if *update && out != nil {
				lines = append(lines[:i+1], append(out, lines[end:]...)...)
				end = i + 1 + len(out)
				changed = true
			}
			i = end
		}
		if changed {
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d documented commands ran as shown", ran)
	if skipped > 0 {
		t.Logf("%d documented commands skipped: they read ../shared/testdata, which is not beside this clone", skipped)
	}
	if ran == 0 {
		t.Fatal("no documented command ran: the test proves nothing")
	}
}

// runDocBlock runs the commands of one block and returns the block as it
// would be with every "$ " command's real output (for -update), how many
// commands ran, and how many were skipped for want of the shared data.
func runDocBlock(t *testing.T, doc string, first int, block []string, shell bool) (out []string, ran, skipped int) {
	for j := 0; j < len(block); j++ {
		line := block[j]
		shown := strings.HasPrefix(line, "$ ")
		cmd := strings.TrimPrefix(line, "$ ")
		start := j
		for strings.HasSuffix(cmd, "\\") && j+1 < len(block) {
			j++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(block[j])
		}
		out = append(out, block[start:j+1]...)
		args, ok := docArgs(cmd)
		absent := ok && readsAbsentSharedData(args)
		if absent {
			skipped++
		}
		if !shown {
			if shell && ok && !absent && safeDocCommand(args) {
				code, _, errs := runCLI(t, args...)
				if code != exitOK {
					t.Errorf("%s:%d: %s: exit %d\n%s", doc, first+start, cmd, code, errs)
				}
				ran++
			}
			continue
		}
		// The expected output runs to the next "$ " line.
		k := j + 1
		for k < len(block) && !strings.HasPrefix(block[k], "$ ") {
			k++
		}
		want := block[j+1 : k]
		j = k - 1
		if absent {
			out = append(out, want...)
			continue
		}
		if !ok || !safeDocCommand(args) {
			t.Errorf("%s:%d: %s: a shown command must be one the test can run", doc, first+start, cmd)
			out = append(out, want...)
			continue
		}
		code, stdout, errs := runCLI(t, args...)
		if code != exitOK {
			t.Errorf("%s:%d: %s: exit %d\n%s", doc, first+start, cmd, code, errs)
		}
		got := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
		if !matchDocOutput(want, got) {
			t.Errorf("%s:%d: %s: output differs from the doc (rerun with -update if the change is meant):\n%s\n--- want\n%s", doc, first+start, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		ran++
		if *update && !matchDocOutput(want, got) {
			out = append(out, got...)
		} else {
			out = append(out, want...)
		}
	}
	return out, ran, skipped
}

// The charts the docs embed are what their documented commands draw now
// (issue 16: "the docs embed the chart of the real 484-request
// transcript"; issue 12: nothing shown goes stale). TestDocCommands runs
// no command that writes, so every "engage replay ... --svg PATH" of a sh
// block is run here with PATH in a temp dir, and the chart it writes must
// be PATH's bytes; a change to the chart's drawing or to the replay fails
// here until the docs' charts are drawn again with their own commands.
func TestDocChartsAreCurrent(t *testing.T) {
	root := sharedtest.ModuleRoot()
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	t.Chdir(root)
	clearEnv(t)
	ran, skipped := 0, 0
	for _, path := range docs {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sh := false
		lines := strings.Split(string(src), "\n")
		for i := 0; i < len(lines); i++ {
			if fence, ok := strings.CutPrefix(lines[i], "```"); ok {
				sh = !sh && (fence == "sh" || fence == "bash")
				continue
			}
			cmd := lines[i]
			for sh && strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
			}
			args, ok := docArgs(cmd)
			if !sh || !ok || len(args) < 2 || args[0] != "engage" || args[1] != "replay" {
				continue
			}
			chart := ""
			for j, a := range args {
				if a == "--svg" && j+1 < len(args) {
					chart = args[j+1]
					args[j+1] = filepath.Join(t.TempDir(), "chart.svg")
				}
			}
			if chart == "" {
				continue
			}
			if readsAbsentSharedData(args) {
				skipped++
				continue
			}
			ran++
			out := args[slices.Index(args, "--svg")+1]
			if code, _, errs := runCLI(t, args...); code != exitOK {
				t.Errorf("%s: %s: exit %d\n%s", filepath.Base(path), cmd, code, errs)
				continue
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(root, chart))
			if err != nil {
				t.Errorf("%s: %s: the chart it names: %v", filepath.Base(path), cmd, err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: %s: %s is not what the command draws now (run the command from the repository's root to draw it again)", filepath.Base(path), cmd, chart)
			}
		}
	}
	if ran+skipped == 0 {
		t.Fatal("no documented chart found: the test proves nothing")
	}
	t.Logf("%d documented charts are what their commands draw", ran)
	if skipped > 0 {
		t.Logf("%d documented charts not checked: they read ../shared/testdata, which is not beside this clone", skipped)
	}
}

// .ci/long fuzzes every fuzz target of the module (issue 6: "long fuzzing
// behind a flag"; docs/RELIABILITY.md: "60 s per fuzz target"). It loops
// over a list of packages written by hand, which a package's first fuzz
// target does not join by itself: store/models' FuzzParse was left out.
func TestLongRunFuzzesEveryTarget(t *testing.T) {
	root := sharedtest.ModuleRoot()
	script, err := os.ReadFile(filepath.Join(root, ".ci", "long"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^for pkg in ([^;]+); do\n\tfor target in \$\(go test -list '\^Fuzz'`).FindSubmatch(script)
	if m == nil {
		t.Fatal(".ci/long: no fuzzing loop over packages found")
	}
	listed := strings.Fields(string(m[1]))
	fuzzed := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir // no Go package is under either
		case d.IsDir() || !strings.HasSuffix(p, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(src, []byte("\nfunc Fuzz")) {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			fuzzed["./"+filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fuzzed) == 0 {
		t.Fatal("no fuzz target found: the test proves nothing")
	}
	for pkg := range fuzzed {
		if !slices.Contains(listed, pkg) {
			t.Errorf(".ci/long fuzzes %v, not %s, which has fuzz targets", listed, pkg)
		}
	}
}

// readsAbsentSharedData reports whether a documented command reads the
// shared test data (../shared/testdata beside the clone) and that data is
// not here: the command is skipped, and counted, as every test that reads
// it skips.
func readsAbsentSharedData(args []string) bool {
	for _, a := range args {
		if rest, ok := strings.CutPrefix(a, "../shared/testdata/"); ok && sharedtest.Locate(strings.Split(rest, "/")[0]) == "" {
			return true
		}
	}
	return false
}

// docArgs turns a documented command line into sessdb's arguments, or
// reports that it is not one (a shell pipeline, another program).
func docArgs(cmd string) ([]string, bool) {
	if i := strings.Index(cmd, " #"); i >= 0 {
		cmd = cmd[:i]
	}
	f := strings.Fields(cmd)
	switch {
	case len(f) >= 3 && f[0] == "go" && f[1] == "run" && f[2] == "./cmd/sessdb":
		f = f[3:]
	case len(f) >= 1 && f[0] == "sessdb":
		f = f[1:]
	default:
		return nil, false
	}
	for _, a := range f {
		if strings.ContainsAny(a, "|><$;&'\"`*[]") || strings.Contains(a, "…") {
			return nil, false
		}
	}
	return f, len(f) > 0
}

// safeDocCommand reports whether a documented command changes nothing and
// reads only the repository's own data.
func safeDocCommand(args []string) bool {
	has := func(flag string) bool {
		for _, a := range args {
			if a == flag || strings.HasPrefix(a, flag+"=") {
				return true
			}
		}
		return false
	}
	for _, a := range args {
		if strings.Contains(a, "/") && !strings.HasPrefix(a, "testdata/") && !strings.HasPrefix(a, "../shared/testdata/") {
			return false
		}
	}
	// A walk that names no root of the repository reads one from the
	// environment the doc's reader has set (a fleet's, a host's): not ours.
	names := false
	for _, a := range args {
		names = names || strings.HasPrefix(a, "testdata/")
	}
	switch args[0] {
	case "help", "version":
		return true
	case "dump", "stats":
		return names
	case "check":
		return names && !has("--repair")
	case "reap", "migrate":
		return names && has("--dry-run")
	case "engage":
		return len(args) > 1 && args[1] == "replay" && !has("--svg")
	}
	return false
}

// mtimeCell is a legacy key's promotion time in dump's table: its only
// clock is its file's mtime, which a checkout sets.
var mtimeCell = regexp.MustCompile(`(\S+ ago|ahead) \(mtime\)`)

// walkTime is how long a walk took, which no doc can promise.
var walkTime = regexp.MustCompile(`walked in [0-9.]+s`)

// matchDocOutput compares documented output with real output, line by
// line; a "..." line stands for any number of lines. Where the masked
// cells (a legacy key's mtime cell, a walk's time) read the same in both,
// the lines must be the same to the space: a table's padding is what the
// reader sees. Where one differs, runs of spaces are folded, since a
// column's width moves with the cell.
func matchDocOutput(want, got []string) bool {
	norm := func(s string) string {
		s = walkTime.ReplaceAllString(mtimeCell.ReplaceAllString(s, "<mtime>"), "walked in <t>")
		return strings.Join(strings.Fields(s), " ")
	}
	masked := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			out = append(append(out, mtimeCell.FindAllString(l, -1)...), walkTime.FindAllString(l, -1)...)
		}
		return out
	}
	same := func(w, g string) bool { return sameCells(norm(w), norm(g)) }
	if slices.Equal(masked(want), masked(got)) {
		same = func(w, g string) bool { return strings.TrimRight(w, " ") == strings.TrimRight(g, " ") }
	}
	var match func(w, g []string) bool
	match = func(w, g []string) bool {
		if len(w) == 0 {
			return len(g) == 0
		}
		if strings.TrimSpace(w[0]) == "..." {
			for n := 0; n <= len(g); n++ {
				if match(w[1:], g[n:]) {
					return true
				}
			}
			return false
		}
		return len(g) > 0 && same(w[0], g[0]) && match(w[1:], g[1:])
	}
	return match(want, got) || bytes.Equal([]byte(strings.Join(want, "\n")), []byte(strings.Join(got, "\n")))
}

// sameCells compares two folded lines word by word; a word cut short
// ("…") matches any word it begins, since where a table cuts its last
// column moves with the width of a masked cell.
func sameCells(w, g string) bool {
	ws, gs := strings.Fields(w), strings.Fields(g)
	if len(ws) != len(gs) {
		return false
	}
	for i := range ws {
		a, b := ws[i], gs[i]
		if a == b {
			continue
		}
		stemA, cutA := strings.CutSuffix(a, "…")
		stemB, cutB := strings.CutSuffix(b, "…")
		if !(cutA && strings.HasPrefix(stemB, stemA) || cutB && strings.HasPrefix(stemA, stemB)) {
			return false
		}
	}
	return true
}

// mdLink is a markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks: every relative link of README.md and docs/*.md names a file
// of the repository, and every #anchor a heading of the file it points to.
func TestDocLinks(t *testing.T) {
	root := sharedtest.ModuleRoot()
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	checked := 0
	for _, doc := range docs {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(src), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", filepath.Base(doc), target, err)
				continue
			}
			if anchor != "" && !hasAnchor(t, path, anchor) {
				t.Errorf("%s: link %s: no such heading in %s", filepath.Base(doc), target, filepath.Base(path))
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no link checked")
	}
}

// hasAnchor reports whether the markdown file has a heading whose GitHub
// anchor is anchor.
func hasAnchor(t *testing.T, path, anchor string) bool {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}

// The doc matcher forgives what a checkout moves (a legacy key's mtime
// cell, the width it gives its column, where the last column is cut) and
// nothing else.
func TestMatchDocOutput(t *testing.T) {
	doc := []string{
		"KEY  PROMOTED        NOTE",
		"a    3d ago          legacy files: pi-version…",
		"b    7h ago (mtime)  -",
	}
	checkout := []string{
		"KEY  PROMOTED       NOTE",
		"a    3d ago         legacy files: pi-version,…",
		"b    ahead (mtime)  -",
	}
	if !matchDocOutput(doc, checkout) {
		t.Error("a checkout's mtime cell and the cut it moves do not match")
	}
	for i, bad := range []string{
		"a    4d ago         legacy files: pi-version,…",
		"a    3d ago         legacy files: venue…",
		"a    3d ago         legacy files:",
	} {
		g := append([]string(nil), checkout...)
		g[1] = bad
		if matchDocOutput(doc, g) {
			t.Errorf("case %d: %q matched %q", i, bad, doc[1])
		}
	}
	if matchDocOutput(doc, checkout[:2]) || !matchDocOutput([]string{"...", doc[2]}, checkout) {
		t.Error("a missing line matched, or \"...\" did not stand for lines")
	}
	// Where the masked cell reads the same, so must the padding: the
	// README's dump sample was a column too wide and matched.
	same := []string{
		"KEY  PROMOTED       NOTE",
		"a    3d ago         -",
		"b    ahead (mtime)  -",
	}
	wider := []string{
		"KEY  PROMOTED        NOTE",
		"a    3d ago          -",
		"b    ahead (mtime)   -",
	}
	if !matchDocOutput(same, same) || matchDocOutput(wider, same) || !matchDocOutput([]string{"...", same[2] + "  "}, same) {
		t.Error("with the masked cells alike, a padding that differs matched, or one alike did not")
	}
}

// A documented command is skipped for want of the shared data only when it
// names a folder of ../shared/testdata that is not there; one that names
// none is never skipped, and a present folder is used.
func TestReadsAbsentSharedData(t *testing.T) {
	t.Chdir(sharedtest.ModuleRoot())
	if !readsAbsentSharedData([]string{"engage", "replay", "../shared/testdata/no-such-folder-here/x.jsonl"}) {
		t.Error("a command naming a missing shared folder is not skipped")
	}
	if readsAbsentSharedData([]string{"dump", "testdata/sessions"}) {
		t.Error("a command on the repository's own sample is skipped")
	}
	if sharedtest.Locate("pi") == "" {
		t.Skip("../shared/testdata/pi is absent: the present-folder case cannot be checked (1 case)")
	}
	if readsAbsentSharedData([]string{"engage", "replay", "../shared/testdata/pi/before-compaction.jsonl"}) {
		t.Error("a command naming a present shared folder is skipped")
	}
}
