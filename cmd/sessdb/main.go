// Command sessdb is the host side of resumable pi agent sessions: it stages a
// key's transcript for a job (resolve), takes a completed run's transcript
// back (promote), audits and repairs a sessions root (dump, check, reap),
// moves a legacy root into meta.db and back (migrate), and replays a
// transcript's pruning decisions (engage replay).
//
// Every command is a row of one table (commands), which gives its usage,
// flags, example and exit statuses to 'sessdb help CMD', to 'sessdb CMD -h'
// and to docs/cli.md alike. Every command writes its result to stdout (a
// table for people, JSON lines with --json for programs) and everything
// else to stderr; its exit status has the one meaning of exitMeaning.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Exit statuses: one table for every command.
const (
	exitOK          = 0
	exitFault       = 1
	exitUsage       = 2
	exitIssues      = 3 // check only: problems found
	exitInterrupted = 130
)

// exitMeaning is the exit status table; every command's help lists the
// rows it can return, with these words.
var exitMeaning = map[int]string{
	exitOK:          "done (check: no problem remains; notices allowed)",
	exitFault:       "a fault: an I/O error, a sessions root that cannot be read, or an entry the command could not do (each named on stderr, after the others were done)",
	exitUsage:       "a usage or configuration error (one line on stderr naming the flag, argument or variable), or a sessions root a walk refuses; also SIGQUIT (Ctrl-\\), as Go ends any program on it: \"SIGQUIT: quit\" and every goroutine's stack on stderr, nothing more on stdout",
	exitIssues:      "check found problems (with --repair: problems that remain); no other command returns it",
	exitInterrupted: "interrupted by Ctrl-C, SIGTERM or SIGHUP: what was done is printed, marked interrupted",
}

// exitOrder is the order the table is printed in.
var exitOrder = []int{exitOK, exitFault, exitUsage, exitIssues, exitInterrupted}

// commands is the command table, in the order the command list shows it.
// It is filled in init because the help and version commands read it.
var commands []*command

func init() {
	commands = []*command{cmdResolve, cmdPromote, cmdDump, cmdStats, cmdCheck, cmdReap, cmdMigrate, cmdEngageReplay, cmdVersion}
}

func main() {
	leaveOwnerBits()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is sessdb with args: the whole program, without os.Exit.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// A bare sessdb asked for nothing: the list, where it will be seen
		// and not taken for a result.
		io.WriteString(stderr, commandList())
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return runHelp(args[1:], stdout, stderr)
	case "--version", "-version":
		args = append([]string{"version"}, args[1:]...)
	case "check":
		if len(args) > 1 && args[1] == childArg && os.Getenv(childEnv) == "1" {
			return runCheckChild(args[2:], os.Stdin, stdout)
		}
	}
	c, rest, err := find(args)
	if err != nil && slices.ContainsFunc(args[1:], isHelpWord) {
		// "sessdb engage -h" asks for help as "sessdb help engage" does,
		// and so does "sessdb engage --json -h": -h wherever it stands, as
		// for a command found.
		return runHelp(args[:1], stdout, stderr)
	}
	if err != nil {
		return newReporter("", stderr, logFormatIn(args)).usage(err)
	}
	return c.execute(rest, stdout, stderr)
}

// find looks the command up by its name, or by its two words for a
// subcommand ("engage replay"), and returns the arguments after it.
func find(args []string) (*command, []string, error) {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c, args[len(words):], nil
		}
	}
	for _, c := range commands {
		if first, _, sub := strings.Cut(c.name, " "); sub && args[0] == first {
			return nil, nil, fmt.Errorf("%s: want the subcommand %s", first, c.name[len(first)+1:])
		}
	}
	return nil, nil, fmt.Errorf("unknown command %s", brief(args[0]))
}

// runHelp prints the command list, or one command's help, on stdout.
func runHelp(args []string, stdout, stderr io.Writer) int {
	// Its usage error is written as --log-format asks, where it is given
	// ("sessdb help dump --log-format console" is still one argument too
	// many), as an unknown command's is.
	rep := newReporter("help", stderr, logFormatIn(args))
	// -h exits 0 for every command, help included, wherever it stands
	// ("sessdb help dump -h"): it is dropped, and what is left asks for
	// a command's help, else for help's own, the list.
	asked := slices.ContainsFunc(args, isHelpWord)
	args = slices.DeleteFunc(slices.Clone(args), isHelpWord)
	if len(args) == 0 || len(args) == 1 && args[0] == "help" {
		// "sessdb help help" asks what help is: the list, which says.
		return rep.writeHelp(stdout, commandList())
	}
	c, rest, err := find(args)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %s", brief(rest[0]))
	}
	if err != nil && c == nil && len(args) == 1 {
		// "sessdb help engage": the one subcommand's help.
		for _, sub := range commands {
			if first, _, ok := strings.Cut(sub.name, " "); ok && first == args[0] {
				c, err = sub, nil
			}
		}
	}
	switch {
	case err != nil && asked:
		return rep.writeHelp(stdout, commandList())
	case err != nil:
		return rep.usage(err)
	}
	return rep.writeHelp(stdout, c.helpText())
}

// isHelpWord reports whether the word a asks for help as the flag package
// takes it in a command's flags: -h or -help, with one dash or two, with
// or without a value ("--h", "-help=x"), none of which any command
// defines. The command line's other places (before a subcommand is found,
// after "sessdb help CMD") go by the same words.
func isHelpWord(a string) bool {
	name := flagWord(a)
	return name == "h" || name == "help"
}

// commandList is what 'sessdb help' prints: the commands, the exit status
// table, and where to read more.
func commandList() string {
	var b strings.Builder
	b.WriteString("usage: sessdb <command> [flags] [arguments]\n\ncommands:\n")
	const indent = "                 " // under the one-liners, past "  %-14s "
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-14s %s", c.name, strings.TrimPrefix(wrap(c.short, indent, 78), indent))
	}
	b.WriteString("\nRun 'sessdb help <command>' (or 'sessdb <command> -h') for its flags, an example\nand its exit statuses; docs/cli.md has them all, docs/json.md every JSON field.\n\n")
	b.WriteString(exitTable())
	return b.String()
}

// exitTable is the exit status table as text.
func exitTable() string {
	var b strings.Builder
	b.WriteString("exit status (every command):\n")
	for _, code := range exitOrder {
		b.WriteString(exitLine(code))
	}
	return b.String()
}

// exitLine is one row of the exit status table, wrapped under its meaning.
func exitLine(code int) string {
	return fmt.Sprintf("  %-4d %s", code, strings.TrimPrefix(wrap(exitMeaning[code], "       ", 78), "       "))
}
