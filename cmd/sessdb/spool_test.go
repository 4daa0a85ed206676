package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeAll writes the pieces to s and returns what they make together.
func writeAll(t *testing.T, s *spool, pieces ...string) string {
	t.Helper()
	var want strings.Builder
	for _, p := range pieces {
		if n, err := s.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", p, n, err, len(p))
		}
		want.WriteString(p)
	}
	return want.String()
}

func spooled(t *testing.T, s *spool) string {
	t.Helper()
	var out bytes.Buffer
	if _, err := s.WriteTo(&out); err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	return out.String()
}

// A spool keeps its first bytes in memory and the rest in a temp file
// that has no name (a kill leaves nothing behind), and gives back every
// byte in order.
func TestASpoolKeepsItsLimitInMemoryAndTheRestInAnUnnamedFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := &spool{limit: 10}
	defer s.Close()
	want := writeAll(t, s, "0123", "456789ab", "cdefghijklmnopqrstuvwxyz", "", "!")
	if s.head.Len() != 10 || s.file == nil || s.tail.Len() != 0 {
		t.Fatalf("head %d bytes, file %v, tail %d bytes; want the limit's 10 in memory and the rest in a file", s.head.Len(), s.file, s.tail.Len())
	}
	if names, _ := os.ReadDir(tmp); len(names) != 0 {
		t.Errorf("TMPDIR holds %v; want the spool's file unlinked", names)
	}
	if got := spooled(t, s); got != want {
		t.Errorf("spooled %q; want %q", got, want)
	}
}

// Where no temp file can be made (TMPDIR names nothing), or the file stops
// taking writes (a full disk), the spool keeps the rest in memory, after
// what the file took: the command does not fail for it.
func TestASpoolWithNoFileKeepsTheRestInMemory(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "none"))
	s := &spool{limit: 4}
	want := writeAll(t, s, "abcdef", "ghij")
	if s.file != nil || !s.broken {
		t.Fatalf("file %v, broken %v; want no file, broken", s.file, s.broken)
	}
	if got := spooled(t, s); got != want {
		t.Errorf("spooled %q; want %q", got, want)
	}

	t.Setenv("TMPDIR", t.TempDir())
	s = &spool{limit: 4}
	defer s.Close()
	want = writeAll(t, s, "abcdef", "gh")
	if s.file == nil || s.spilled != 4 {
		t.Fatalf("file %v, %d bytes spilled; want efgh in a file", s.file, s.spilled)
	}
	// The file now refuses every write, as a full disk would: one
	// opened read-only, holding what the spool had spilled.
	name := filepath.Join(t.TempDir(), "readonly")
	if err := os.WriteFile(name, []byte("efgh"), 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	s.file.Close()
	s.file = ro
	want += writeAll(t, s, "ijk", "lm")
	if !s.broken || s.tail.String() != "ijklm" {
		t.Fatalf("broken %v, tail %q; want the writes after the file failed in memory", s.broken, s.tail.String())
	}
	if got := spooled(t, s); got != want {
		t.Errorf("spooled %q; want %q", got, want)
	}
}

// dump --json's output, and check's in both forms, are the same whether
// the spool spills to a file after 64 bytes or holds them in memory.
func TestHeldOutputIsTheSameSpilled(t *testing.T) {
	clearEnv(t)
	sample := filepath.Join("..", "..", "testdata", "sessions")
	at := "2026-11-29T10:00:00Z"
	for _, args := range [][]string{
		{"dump", "--json", "--history", "3", "--at", at, sample},
		{"check", sample},
		{"check", "--json", sample},
	} {
		code, whole, errs := runCLI(t, args...)
		if strings.Count(whole, "\n") < 3 {
			t.Fatalf("%v of the sample: exit %d, %q, %s; want 3 lines or more", args, code, whole, errs)
		}
		limit := spoolInMemory
		spoolInMemory = 64
		spilledCode, spilled, serrs := runCLI(t, args...)
		spoolInMemory = limit
		if spilledCode != code || spilled != whole {
			t.Errorf("%v spilled after 64 bytes: exit %d, stderr %s, output\n%s\nwant exit %d and\n%s", args, spilledCode, serrs, spilled, code, whole)
		}
	}
}
