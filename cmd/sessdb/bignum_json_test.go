package main

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/internal/sample"
)

// docs/json.md: integers are written with every digit, never rounded to
// a double or in exponent form, so a reader that keeps 64-bit integers
// reads what the disk holds. A damaged or hostile meta.db can hold any
// uint64 (here a resume chain of 2^64-1, far past JavaScript's exact
// 2^53): dump shows it exactly, and stats clamps it to 2^63-1 as its max
// and as its saturated sum.
func TestJSONIntegersKeepEveryDigit(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	dir, err := fsat.OpenDir(filepath.Join(root, sample.LongChain))
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.OpenWriter(dir, db.FileName, db.Options{})
	if err == nil {
		err = d.Update(func(tx *db.Tx) error { return tx.PutResumeChain(math.MaxUint64) })
		d.Close()
	}
	dir.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dump", "--json", "--key", sample.LongChain, root)
	if want := `"resume_chain":` + strconv.FormatUint(math.MaxUint64, 10) + `,`; code != exitOK || !strings.Contains(out, want) {
		t.Errorf("dump --json: exit %d, want %s in\n%s%s", code, want, out, errs)
	}
	code, out, errs = runCLI(t, "stats", "--json", root)
	max := strconv.FormatInt(math.MaxInt64, 10)
	if want := `"resume_chain":{"keys":5,"sum":` + max + `,"p50":1,"p95":` + max + `,"max":` + max + `,`; code != exitOK || !strings.Contains(out, want) {
		t.Errorf("stats --json: exit %d, want %s in\n%s%s", code, want, out, errs)
	}
}
