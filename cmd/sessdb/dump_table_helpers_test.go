package main

import (
	"io"
	"time"

	"sessdb/store"
)

// dumpTable writes the key table of rows as dump does once its walk has
// ended, for the tests that hand it reports of their own.
func dumpTable(w io.Writer, rows []store.KeyReport, now time.Time, verify, wide bool) error {
	t := keyTable{verify: verify, wide: wide}
	for _, r := range rows {
		t.add(r)
	}
	return t.write(w, now)
}
