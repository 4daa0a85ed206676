package store

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	"sessdb/gates"
)

// forgeCRC32C returns a transcript that ends with entryLine(text+x), x
// twelve characters from '@' to 'O', whose CRC32C is sum. A CRC is
// affine over GF(2) in its input's bits: each character's low four
// bits flip the checksum by a fixed vector, so x is the solution of 32
// linear equations in 48 unknowns.
func forgeCRC32C(t *testing.T, created time.Time, text string, sum uint32) []byte {
	t.Helper()
	const n = 12
	free := []byte(text + string(bytes.Repeat([]byte{'@'}, n)))
	build := func(x []byte) []byte { return transcriptBytes(created, entryLine(string(x))) }
	base := build(free)
	at := bytes.Index(base, free) + len(text)
	zero := crc32.Checksum(base, castagnoli)
	// rows[i] is the checksum's change when bit i of x flips, and the
	// unknown it stands for in its low 48 bits of a row to reduce.
	type row struct {
		v   uint32 // the change of the checksum
		bit uint64 // which of x's 48 bits make it up
	}
	var rows []row
	for i := range n * 4 {
		b := append([]byte{}, base...)
		b[at+i/4] ^= 1 << (i % 4)
		rows = append(rows, row{crc32.Checksum(b, castagnoli) ^ zero, 1 << i})
	}
	// Gaussian elimination: basis[k] has its highest set bit at k.
	var basis [32]row
	for _, r := range rows {
		for k := 31; k >= 0 && r.v != 0; k-- {
			if r.v>>k&1 == 0 {
				continue
			}
			if basis[k].v == 0 {
				basis[k] = r
				break
			}
			r.v ^= basis[k].v
			r.bit ^= basis[k].bit
		}
	}
	need, pick := zero^sum, uint64(0)
	for k := 31; k >= 0; k-- {
		if need>>k&1 == 0 {
			continue
		}
		if basis[k].v == 0 {
			t.Fatalf("no checksum %08x from these %d characters", sum, n)
		}
		need ^= basis[k].v
		pick ^= basis[k].bit
	}
	for i := range n * 4 {
		if pick>>i&1 != 0 {
			free[len(text)+i/4] ^= 1 << (i % 4)
		}
	}
	out := build(free)
	if got := crc32.Checksum(out, castagnoli); got != sum {
		t.Fatalf("forged checksum %08x, want %08x", got, sum)
	}
	return out
}

// A stale resumed job's ticket is superseded on a key reaped and made
// anew at the same generation and with the same CRC32C but another size:
// Base.same compares the size too (mutcore44's T27: without it, the
// stale run was promoted over the new conversation). The new transcript
// is forged to the stale base's checksum.
func TestAStaleTicketOnAKeyMadeAnewWithTheSameChecksumButAnotherSizeIsSuperseded(t *testing.T) {
	const day = 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 14 * day})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base-A")
	stale, staleDir := mustResolve(t, s, testKey, localJob())
	want(t, stale, true, gates.Resumed)
	stage(t, staleDir, append(staged(t, staleDir), entryLine("stale")...))

	clock.now = clock.now.Add(15 * day)
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	fresh, freshDir := mustResolve(t, s, testKey, localJob())
	want(t, fresh, false, gates.Absent)
	forged := forgeCRC32C(t, clock.now, "the key made anew, a longer line ", uint32(stale.Base.CRC32C))
	if int64(len(forged)) == stale.Base.Size {
		t.Fatalf("the forged transcript is %d bytes, the stale base's size: the test wants another", len(forged))
	}
	stage(t, freshDir, forged)
	if res := mustPromote(t, s, fresh, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != stale.Base.Gen {
		t.Fatalf("the key made anew: %+v, want promoted at the stale base's gen %d", res, stale.Base.Gen)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, forged) {
		t.Fatal("the key made anew does not hold the forged transcript")
	}

	res := mustPromote(t, s, stale, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != stale.Base.Gen {
		t.Fatalf("the stale ticket on the key made anew: %+v, want superseded by gen %d", res, stale.Base.Gen)
	}
	if got := readCanonical(t, root, testKey); !bytes.Equal(got, forged) {
		t.Fatal("a stale ticket replaced the key made anew")
	}
}
