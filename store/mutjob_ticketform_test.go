package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// A ticket a resolve wrote, whole and valid, is refused with data after
// it, with a field no sessdb writes, or with a gen (only tickets from
// before the job contract have one, and no id). TestReadTicketRefusesWhatResolveCannotHaveWritten's cases
// of these had no reason either, which alone refused them.
func TestAValidTicketWithTrailingDataOrAGenIsRefused(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	_, jobDir := mustResolve(t, s, testKey, localJob())
	p := filepath.Join(jobDir, TicketName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTicket(jobDir); err != nil {
		t.Fatalf("the ticket as written: %v", err)
	}
	body := bytes.TrimSuffix(b, []byte("}\n"))
	for name, edited := range map[string][]byte{
		"trailing data":            append(append([]byte{}, b...), `{"key":"x"}`...),
		"a gen":                    append(append([]byte{}, body...), `,"gen":1}`...),
		"a field no sessdb writes": append(append([]byte{}, body...), `,"extra":1}`...),
	} {
		if err := os.WriteFile(p, edited, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) {
			t.Errorf("%s: %v; want ErrBadTicket", name, err)
		}
	}
}

// No ticket, or no job dir at all, wraps fs.ErrNotExist (ReadTicket's
// doc): a caller tells "nothing was resolved here" from a ticket that is
// bad or unreadable.
func TestNoTicketOrNoJobDirIsNotExist(t *testing.T) {
	dir := t.TempDir()
	for _, jobDir := range []string{dir, filepath.Join(dir, "gone")} {
		if _, err := ReadTicket(jobDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadTicket(%s) = %v; want fs.ErrNotExist", jobDir, err)
		}
	}
}
