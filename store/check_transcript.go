package store

import (
	"fmt"
	"hash/crc32"
	"io"
)

// VerifyReport is the result of reading a transcript whole and comparing
// it with the record of the promotion that landed it.
type VerifyReport struct {
	// Result is "ok", "mismatch" (size or CRC32C differ: a resolve would
	// cold-start it as transcript-replaced), "no-record" (a legacy key, or
	// a meta.db that records no transcript), "no-transcript", or
	// "unreadable" (an I/O error; Detail says which).
	Result string `json:"result"`
	Bytes  int64  `json:"bytes"`            // bytes read
	CRC32C uint64 `json:"crc32c"`           // of the bytes read
	Detail string `json:"detail,omitempty"` // what differs, or the error
}

// Verify results.
const (
	VerifyOK           = "ok"
	VerifyMismatch     = "mismatch"
	VerifyNoRecord     = "no-record"
	VerifyNoTranscript = "no-transcript"
	VerifyUnreadable   = "unreadable"
)

// verify reads the open transcript whole, under the key's shared lock (so
// no promotion renames a new one in meanwhile), and compares it with the
// record. It reads through the descriptor openKey opened, never by name.
func (k *keyDir) verify() *VerifyReport {
	if k.transcript == nil {
		return &VerifyReport{Result: VerifyNoTranscript}
	}
	h := crc32.New(castagnoli)
	// One byte past the size seen at open tells a file that grew since.
	n, err := io.Copy(h, io.NewSectionReader(k.transcript, 0, k.tst.Size+1))
	r := &VerifyReport{Bytes: n, CRC32C: uint64(h.Sum32())}
	switch {
	case err != nil:
		r.Result, r.Detail = VerifyUnreadable, err.Error()
	case k.identity == nil:
		r.Result = VerifyNoRecord
	case k.identity.Size != n:
		r.Result, r.Detail = VerifyMismatch, fmt.Sprintf("%d bytes, the record says %d", n, k.identity.Size)
	case k.identity.CRC32C != r.CRC32C:
		r.Result, r.Detail = VerifyMismatch, fmt.Sprintf("CRC32C %08x, the record says %08x", r.CRC32C, k.identity.CRC32C)
	default:
		r.Result = VerifyOK
	}
	return r
}
