package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
)

// BenchmarkFloor measures, in the same run as the protocols, the system
// operations no implementation of them can avoid: the floors the ratios are
// taken against.
//
//	SIZE/copy        open the transcript, create a new file in a new
//	                 directory (as a resolve stages into a new job dir),
//	                 io.Copy between the two *os.File (which is
//	                 copy_file_range), close both
//	SIZE/copy-fsync  the same, then fsync the copy: the floor of a durable
//	                 temp, reported beside the floors
//	fsync-new-file   create a new file, write 64 bytes, fsync, close
//	rename-dirsync   rename a file in a directory, fsync the directory
//	empty-commit     one bbolt commit with nothing in it, on a meta.db
//	                 after 70 promotions, through package db
func BenchmarkFloor(b *testing.B) {
	for _, sz := range sizes {
		data := Transcript(sz.bytes)
		for _, sync := range []bool{false, true} {
			name := sz.name + "/copy"
			if sync {
				name = sz.name + "/copy-fsync"
			}
			b.Run(name, func(b *testing.B) {
				src := filepath.Join(workDir(b), "src.jsonl")
				if err := os.WriteFile(src, data, 0o600); err != nil {
					b.Fatal(err)
				}
				next := freshDirs(b)
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := copyFile(src, filepath.Join(next(), "dst.jsonl"), os.O_EXCL, sync); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("fsync-new-file", func(b *testing.B) {
		dir := workDir(b)
		small := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n")
		for i := 0; i < b.N; i++ {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(small); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rename-dirsync", func(b *testing.B) {
		dir := workDir(b)
		names := [2]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
		if err := os.WriteFile(names[0], []byte("x"), 0o600); err != nil {
			b.Fatal(err)
		}
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		for i := 0; i < b.N; i++ {
			if err := os.Rename(names[i%2], names[(i+1)%2]); err != nil {
				b.Fatal(err)
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("empty-commit", func(b *testing.B) {
		root := filepath.Join(workDir(b), "sessions")
		s := newStore(b, root)
		key := benchKey(1)
		promoteN(b, s, key, Transcript(4096), 70)
		kd, err := os.Open(filepath.Join(root, key))
		if err != nil {
			b.Fatal(err)
		}
		defer kd.Close()
		d, err := db.OpenWriter(kd, filepath.Join(root, key, db.FileName), db.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		for b.Loop() {
			if err := d.Update(func(*db.Tx) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// copyFile copies src to dst with io.Copy between two *os.File, which Go
// turns into copy_file_range; flag is os.O_TRUNC or os.O_EXCL.
func copyFile(src, dst string, flag int, sync bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|flag, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if sync {
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}
