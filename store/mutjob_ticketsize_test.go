package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// ReadTicket reads a ticket of at most 256 KiB (maxTicketBytes, the most
// writeTicket writes) and refuses one a byte longer: the bound is the
// writer's, exactly.
func TestATicketOfExactlyTheBoundIsRead(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	p := filepath.Join(jobDir, TicketName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// JSON's white space after the object: the same ticket.
	padded := append(b, bytes.Repeat([]byte(" "), maxTicketBytes-len(b))...)
	if err := os.WriteFile(p, padded, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTicket(jobDir); err != nil || got != sess {
		t.Fatalf("a ticket of %d bytes: %+v, %v; want it read as written", len(padded), got, err)
	}
	if err := os.WriteFile(p, append(padded, ' '), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) {
		t.Fatalf("a ticket of %d bytes: %v; want ErrBadTicket", len(padded)+1, err)
	}
}
