package store

import (
	"encoding/json"
	"errors"
	"hash/crc32"
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

// A warm ticket of a key with no record (a legacy key) names the file it
// was resumed from and, beside it, the size and CRC32C of the bytes
// delivered (docs/on-disk.md), which only the copy's check knows: the
// view's base, taken before the copy, has the file alone.
func TestALegacyKeysWarmTicketHasTheBytesDeliveredInItsBase(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	body := transcriptBytes(clock.now, "legacy turn")
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(body), "pi-version": testPi})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	read, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]Base{"Resolve's Session": sess.Base, "the ticket": read.Base} {
		if b.File == nil || b.Gen != 0 || b.Size != int64(len(body)) || b.CRC32C != sess.CRC32C || sess.CRC32C != Checksum(crc32.Checksum(body, castagnoli)) {
			t.Errorf("%s's base = %+v (crc32c of the delivered bytes %s); want the file, %d bytes, their crc32c", name, b, sess.CRC32C, len(body))
		}
	}
}

// A key whose transcript in place is empty holds no transcript (rung 3
// says absent), and its ticket's base is {} as for none at all
// (docs/on-disk.md), not the empty file's identity.
func TestAnEmptyTranscriptInPlaceIsNoBase(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: "", "pi-version": testPi})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Absent)
	read, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Base != (Base{}) || read.Base != (Base{}) {
		t.Fatalf("base of a key with an empty transcript = %+v (the ticket's %+v); want none", sess.Base, read.Base)
	}
}
