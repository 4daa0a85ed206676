package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// A ticket a resolve wrote with a closing brace or bracket after it
// (`{…}\n}`) is refused as trailing data, at the offset of that byte, as
// one with another object after it is: json.Decoder.More says false of a
// "}" or "]" next, so such a ticket was read, and promoted. White space
// after it is no trailing data.
func TestAValidTicketWithABracketAfterItIsRefused(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	_, jobDir := mustResolve(t, s, testKey, localJob())
	p := filepath.Join(jobDir, TicketName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{"}", "]", " }\n", "\n\t]", "}}", "]]]"} {
		edited := append(append([]byte{}, b...), tail...)
		if err := os.WriteFile(p, edited, 0o600); err != nil {
			t.Fatal(err)
		}
		at := len(b) + strings.IndexAny(tail, "}]")
		want := fmt.Sprintf("read ticket %s: not a valid ticket (trailing data at offset %d)", p, at)
		if _, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) || err.Error() != want {
			t.Errorf("%q after the ticket: %v; want %s", tail, err, want)
		}
	}
	for _, tail := range []string{"", " ", "\n\r\t \n"} {
		os.WriteFile(p, append(append([]byte{}, b...), tail...), 0o600)
		if _, err := ReadTicket(jobDir); err != nil {
			t.Errorf("%q after the ticket: %v; want it read", tail, err)
		}
	}
}
