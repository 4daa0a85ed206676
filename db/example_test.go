package db_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
)

// openKeyDir opens a key directory the way the store does: a directory, and
// not through a link, so that meta.db is reached by its *at calls only.
func openKeyDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// A promotion's record, written in one transaction and read back by a
// reader: the writer creates meta.db on first use, and the reader sees
// either all of the Update or none of it.
func ExampleOpenWriter() {
	root, err := os.MkdirTemp("", "sessdb-db-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir, err := openKeyDir(root)
	if err != nil {
		log.Fatal(err)
	}
	defer dir.Close()
	name := filepath.Join("key", db.FileName) // what errors show, not a path opened

	w, err := db.OpenWriter(dir, name, db.Options{LockTimeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	err = w.Update(func(tx *db.Tx) error {
		if err := tx.PutTranscript(db.Transcript{Gen: 1, Size: 48211, CRC32C: 0x1c2d3e4f, PromotedAt: at}); err != nil {
			return err
		}
		seq, err := tx.AppendHistory(db.HistoryEntry{Gen: 1, At: at, Reason: "absent", Bytes: 48211, Job: "1234", Run: "answered"})
		fmt.Println("history key:", seq)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// The writer holds the key's exclusive lock until Close: a reader
	// opened before it would wait, and time out after LockTimeout.
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := db.OpenReader(dir, name, db.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	err = r.View(func(tx *db.Tx) error {
		s, err := tx.Sidecars()
		if err != nil {
			return err
		}
		fmt.Printf("transcript: gen %d, %d bytes, crc32c %#x\n", s.Transcript.Gen, s.Transcript.Size, s.Transcript.CRC32C)
		fmt.Println("venue stamped:", s.Venue != nil) // nil: absent, which the gates read as "local"
		h, err := tx.History(0)
		if err != nil {
			return err
		}
		for _, e := range h {
			fmt.Printf("history %d: gen %d, job %s, reason %s, run %s\n", e.Seq, e.Gen, e.Job, e.Reason, e.Run)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Update(func(*db.Tx) error { return nil }))
	// Output:
	// history key: 1
	// transcript: gen 1, 48211 bytes, crc32c 0x1c2d3e4f
	// venue stamped: false
	// history 1: gen 1, job 1234, reason absent, run answered
	// update key/meta.db: read-only
}

// What a damaged meta.db looks like to a caller: an error that wraps
// ErrDamaged and says what is wrong, never a crash. A writer refuses the
// file just as a reader does, and leaves it as it was.
func ExampleOpenReader_damaged() {
	root, err := os.MkdirTemp("", "sessdb-db-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir, err := openKeyDir(root)
	if err != nil {
		log.Fatal(err)
	}
	defer dir.Close()
	name := filepath.Join("key", db.FileName)
	path := filepath.Join(root, db.FileName)

	// A file cut short under its high-water mark: bbolt would map it and
	// die of SIGBUS reading a page past the end.
	w, err := db.OpenWriter(dir, name, db.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.Truncate(path, 4*db.PageSize); err != nil {
		log.Fatal(err)
	}
	show(dir, name, path)

	// A 0-byte file: damage to report, not a fresh file to initialise.
	if err := os.Truncate(path, 0); err != nil {
		log.Fatal(err)
	}
	show(dir, name, path)
	// Output:
	// true true
	// open key/meta.db: damaged database: file is 4096 bytes, below the high-water mark 6144 of meta page 0 (txid 2)
	// true true
	// open key/meta.db: damaged database: file is 0 bytes
}

// show opens the file as a reader and as a writer and prints whether each
// was refused as damaged, and the reader's error; neither may change it.
func show(dir *os.File, name, path string) {
	before, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	var errs []error
	for _, open := range []func(*os.File, string, db.Options) (*db.DB, error){db.OpenReader, db.OpenWriter} {
		d, err := open(dir, name, db.Options{})
		if err == nil {
			d.Close()
		}
		errs = append(errs, err)
	}
	fmt.Println(errors.Is(errs[0], db.ErrDamaged), errors.Is(errs[1], db.ErrDamaged))
	fmt.Println(errs[0])
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		log.Fatalf("the file changed: %d bytes, %v", len(after), err)
	}
}
