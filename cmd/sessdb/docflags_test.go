package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sessdb/internal/sharedtest"
)

// otherToolsFlags are the flags the operator docs name of programs other
// than sessdb, each with its program: the doc shows it set up beside
// sessdb. A flag a doc names that is neither sessdb's nor here is a slip
// (platforms.md named "--etcd-cacert", which no sessdb takes: its CA flag
// is --etcd-ca).
var otherToolsFlags = map[string]string{
	"auto-compaction-retention":    "etcd",
	"cert-file":                    "etcd",
	"client-cert-auth":             "etcd",
	"key-file":                     "etcd",
	"max-txn-ops":                  "etcd",
	"trusted-ca-file":              "etcd",
	"interactive":                  "etcdctl",
	"new-user-password":            "etcdctl",
	"prefix":                       "etcdctl",
	"collector.textfile.directory": "node_exporter",
	"env-file":                     "docker",
	"link-dest":                    "rsync",
	"mode":                         "pi",
	"now":                          "systemctl",
	"thinking":                     "pi",
}

// docFlag is a long flag as a doc writes it: --name, or --name=VALUE.
var docFlag = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9.-]*[a-z0-9])`)

// The operator docs (README.md and docs/, but for RELIABILITY.md and
// PERFORMANCE.md, which record what was) name only flags the binary
// takes: every --flag in an inline code span is a flag of some sessdb
// command (or of another program the docs set up, otherToolsFlags), and
// every --flag of a sessdb command line in a code block is a flag of that
// very command. TestDocCommands runs only the command lines that change
// nothing; this one reads every line, a repair's, a promote's, a fleet's
// too, and every flag named in the text.
func TestDocsNameOnlyFlagsTheBinaryTakes(t *testing.T) {
	root := sharedtest.ModuleRoot()
	all, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs := []string{filepath.Join(root, "README.md")}
	for _, d := range all {
		if b := filepath.Base(d); b != "RELIABILITY.md" && b != "PERFORMANCE.md" {
			docs = append(docs, d)
		}
	}
	flagsOf := map[*command]map[string]bool{}
	anyCommand := map[string]bool{"help": true, "version": true, strings.TrimPrefix(childArg, "--"): true}
	for _, c := range commands {
		fs := c.newFlags()
		c.bind(fs)
		bindLog(fs)
		own := map[string]bool{"help": true}
		fs.VisitAll(func(f *flag.Flag) { own[f.Name], anyCommand[f.Name] = true, true })
		flagsOf[c] = own
	}
	spans, lines := 0, 0
	for _, path := range docs {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := filepath.Base(path)
		fenced, lang := false, ""
		var block []string
		for i, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(line, "```") {
				if fenced {
					lines += checkDocCommandFlags(t, doc, block, lang != "text", flagsOf)
				}
				fenced, lang, block = !fenced, strings.TrimPrefix(line, "```"), nil
				continue
			}
			if fenced {
				block = append(block, line)
				continue
			}
			for _, span := range inlineCode.FindAllString(line, -1) {
				for _, m := range docFlag.FindAllStringSubmatch(span, -1) {
					if !anyCommand[m[1]] && otherToolsFlags[m[1]] == "" {
						t.Errorf("%s:%d: %s names --%s, which no sessdb command takes (nor a program otherToolsFlags lists)", doc, i+1, span, m[1])
					}
					spans++
				}
			}
		}
	}
	if spans == 0 || lines == 0 {
		t.Fatalf("%d flags in the text, %d sessdb command lines: the test reads nothing", spans, lines)
	}
}

// inlineCode is a markdown code span of one or two backticks.
var inlineCode = regexp.MustCompile("``[^`]+``|`[^`]+`")

// checkDocCommandFlags checks the --flags of every sessdb command line of
// a code block (a trailing backslash continues a line; "$ ", variable
// assignments and `env -i PATH=...` before sessdb are the shell's) against
// that command's own flags, and returns how many lines it checked. In a
// text block (a help text, whose prose may begin a line "sessdb never
// ...") a line that names no command is prose; elsewhere it is an error.
func checkDocCommandFlags(t *testing.T, doc string, block []string, commandsOnly bool, flagsOf map[*command]map[string]bool) int {
	t.Helper()
	checked := 0
	for j := 0; j < len(block); j++ {
		line := strings.TrimPrefix(strings.TrimSpace(block[j]), "$ ")
		for strings.HasSuffix(line, "\\") && j+1 < len(block) {
			j++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(block[j])
		}
		// What the shell does after the command is not the command's.
		if k := strings.IndexAny(line, "|;>#"); k >= 0 {
			line = line[:k]
		}
		f := strings.Fields(line)
		for len(f) > 0 && (strings.Contains(f[0], "=") || f[0] == "env" || f[0] == "-i") {
			f = f[1:]
		}
		switch {
		case len(f) >= 3 && f[0] == "go" && f[1] == "run" && f[2] == "./cmd/sessdb":
			f = f[3:]
		case len(f) >= 2 && f[0] == "sessdb":
			f = f[1:]
		default:
			continue
		}
		if len(f) == 0 {
			continue // the binary alone: its usage, no flag
		}
		switch f[0] {
		case "help":
			continue // a command's name, no flag
		case "--version":
			f[0] = "version"
		}
		c, args, err := find(f)
		if err != nil {
			if commandsOnly && !strings.HasPrefix(f[0], "<") && !strings.HasPrefix(f[0], "[") {
				t.Errorf("%s: %q: %v", doc, line, err)
			}
			continue
		}
		for _, a := range args {
			a = strings.Trim(a, "[]()")
			if name, ok := strings.CutPrefix(a, "--"); ok && name != "" {
				name, _, _ = strings.Cut(name, "=")
				if !flagsOf[c][name] {
					t.Errorf("%s: %q: sessdb %s takes no --%s", doc, line, c.name, name)
				}
			}
		}
		checked++
	}
	return checked
}
