package store

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// Tests a hand-mutant sweep of the core promises showed missing (notes
// of helper mutcore44): each holds a promise no other test held the code
// to.

// A ticket with no id but any of the job contract's fields, even one
// whose value is zero, is refused: no sessdb wrote one (Session's doc).
// A cold ticket of a key that held nothing has a zero base and checksum,
// so validate, which looks at values, finds nothing wrong with it once
// its id and root are gone; only the fields' presence tells it from a
// ticket from before the job contract, which promotes unchecked.
func TestATicketWithNoIdAndAZeroContractFieldIsRefused(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Absent)
	p := filepath.Join(jobDir, TicketName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "ticket")
	delete(fields, "root")
	for name, keep := range map[string]map[string]string{
		"a checksum and a base": {"crc32c": `"00000000"`, "base": `{}`},
		"a checksum":            {"crc32c": `"00000000"`},
		"a base":                {"base": `{}`},
		"an empty root":         {"root": `""`},
	} {
		t.Run(name, func(t *testing.T) {
			f := maps.Clone(fields)
			delete(f, "crc32c")
			delete(f, "base")
			for k, v := range keep {
				f[k] = json.RawMessage(v)
			}
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) {
				t.Fatalf("ReadTicket of %s = %+v, %v; want ErrBadTicket", b, got, err)
			}
		})
	}
	// The same ticket with none of them is one from before the contract.
	f := maps.Clone(fields)
	delete(f, "crc32c")
	delete(f, "base")
	b, _ = json.Marshal(f)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTicket(jobDir); err != nil {
		t.Fatalf("ReadTicket of %s: %v; want it read as a ticket from before the job contract", b, err)
	}
}
