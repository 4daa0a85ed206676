package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
)

// A ticket's retry of the promotion the key's record names asks whether
// the generation's file is still whole (HoldsRecord). When that read
// fails (EIO on the shared dir), it tells nothing: the retry is
// promote-failed with the cause, nothing written to etcd or the dir, the
// run in its job dir; never a repeat "promoted" (the file may be lost) nor
// a promotion again (it may be whole). Once the read works, the retry is a
// repeat where the file is whole, and promoted anew at gen 3 where it was
// damaged.
func TestARetryWhoseHoldsRecordReadFailsIsPromoteFailed(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1})
	for _, damaged := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "damaged"}[damaged], func(t *testing.T) {
			f := newFixture(t, c)
			key := randHex(16)
			f.run(key, "before")
			sess, jobDir := f.job(key, "run")
			run := stagedOf(t, jobDir)
			if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
				t.Fatalf("promote = %+v, %v; want gen 2", res, err)
			}
			file := filepath.Join(f.dir, f.recordFile(key))
			if damaged {
				b, _ := os.ReadFile(file)
				b[len(b)-3] ^= 0xff
				os.WriteFile(file, b, 0o600)
			}
			before, err := f.b.meta.Get(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			files := f.files(key)

			hits := 0
			faults.Set(func(p faults.Point) error {
				if p == faults.HoldsRecordRead {
					hits++
					return syscall.EIO
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			res, err := f.promote(sess)
			faults.Set(nil)
			if hits == 0 {
				t.Fatal("the retry never asked HoldsRecord")
			}
			if !errors.Is(err, syscall.EIO) || res.Promoted || res.Repeat || res.Reason != gates.PromoteFailed {
				t.Fatalf("the retry whose HoldsRecord read failed = %+v, %v; want promote-failed with EIO", res, err)
			}
			after, err := f.b.meta.Get(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if after.Rev != before.Rev || !reflect.DeepEqual(after.Record, before.Record) || !reflect.DeepEqual(after.History, before.History) {
				t.Errorf("etcd changed: %+v, was %+v", after, before)
			}
			if now := f.files(key); !reflect.DeepEqual(now, files) {
				t.Errorf("the key's files are %v, were %v", now, files)
			}
			if !bytes.Equal(stagedOf(t, jobDir), run) {
				t.Fatal("the run left its job dir")
			}

			retry, err := f.promote(sess)
			switch {
			case err != nil:
				t.Fatalf("the retry once the read works: %v", err)
			case !damaged && (!retry.Promoted || !retry.Repeat || retry.Gen != 2):
				t.Fatalf("the retry once the read works = %+v; want a repeat of gen 2", retry)
			case damaged && (!retry.Promoted || retry.Repeat || retry.Gen != 3):
				t.Fatalf("the retry once the read works = %+v; want promoted anew at gen 3", retry)
			}
			f.holds(key, "run", retry.Gen)
		})
	}
}
