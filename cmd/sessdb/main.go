// Command sessdb is the host side of resumable pi agent sessions: it stages a
// key's transcript for a job (resolve), takes a completed run's transcript
// back (promote), and audits a sessions directory (dump).
//
// Every command writes its result to stdout (JSON where a program reads it)
// and its diagnostics to stderr. Exit status: 0 the command did its job
// (a cold start and a refused promotion are results, not failures), 1 a
// fault, 2 a usage or configuration error.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// A command is one sessdb subcommand. run parses its own flags and returns
// the process exit status, so every command is testable without os.Exit.
type command struct {
	name  string
	usage string // the line after "sessdb "
	short string
	run   func(args []string, stdout, stderr io.Writer) int
}

// Exit statuses shared by every command.
const (
	exitOK     = 0
	exitFault  = 1
	exitUsage  = 2
	exitIssues = 3 // check: problems found
)

// commands is filled in init to break the initialization cycle through
// the help command, which lists the table.
var commands []*command

func init() {
	commands = []*command{
		cmdResolve,
		cmdPromote,
		cmdDump,
		cmdStats,
		cmdCheck,
		cmdReap,
		cmdMigrate,
		cmdEngage,
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				// What -h prints (usage, flags, for a walk an example and the
				// exit statuses), on stdout: it was asked for.
				h := []string{"-h"}
				if c == cmdEngage {
					h = []string{"replay", "-h"}
				}
				c.run(h, stdout, stdout)
				return exitOK
			}
		}
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "sessdb: unknown command %s (run 'sessdb help')\n", brief(args[0]))
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage: sessdb <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.short)
	}
	b.WriteString("\nRun 'sessdb help <command>' for a command's flags.\n\n" + exitTable + "\n")
	io.WriteString(w, b.String())
}
