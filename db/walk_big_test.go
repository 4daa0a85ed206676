package db

import (
	"strings"
	"testing"
)

// A file too large for a snapshot is read through bbolt's mapping, and
// the pre-check's walk is all that stands between a damaged page tree and
// bbolt: every child of a branch is walked, and a child reached twice (a
// cycle, which sends bbolt's cursor round until the process dies) refuses
// the file at the reader's open, before any record is read.
func TestALargeFilesBranchCycleIsRefusedAtOpen(t *testing.T) {
	kd := bigDB(t)
	off := bucketPage(t, kd.db, bucketHistory, branchFlag)
	data := readFile(t, kd.db)
	count := int64(nativeEndian.Uint16(data[off+10:]))
	if count < 2 {
		t.Fatalf("history/'s branch has %d children; the test needs two or more", count)
	}
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	id := uint64(off) / uint64(m.PageSize)
	// The last child points back at its branch; the others are whole.
	writeAt(t, kd.db, off+pageHeaderSize+(count-1)*elementSize+8, nativeEndian.AppendUint64(nil, id))
	d, err := OpenReader(kd.dir, kd.db, testOpts)
	if err == nil {
		d.Close()
	}
	wantErr(t, err, ErrDamaged)
	if err != nil && !strings.Contains(err.Error(), "reached twice") {
		t.Errorf("%v; want the page reached twice named", err)
	}
}

// An empty branch page of a large file is refused at a reader's open:
// bbolt takes a branch's first element without looking at its count, and
// would follow a page id read from whatever follows the header.
func TestALargeFilesEmptyBranchIsRefusedAtOpen(t *testing.T) {
	kd := bigDB(t)
	off := bucketPage(t, kd.db, bucketHistory, branchFlag)
	writeAt(t, kd.db, off+10, nativeEndian.AppendUint16(nil, 0))
	d, err := OpenReader(kd.dir, kd.db, testOpts)
	if err == nil {
		d.Close()
	}
	wantErr(t, err, ErrDamaged)
	if err != nil && !strings.Contains(err.Error(), "is empty") {
		t.Errorf("%v; want the empty branch named", err)
	}
}
