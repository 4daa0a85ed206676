package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A promotion whose transcript is the size of the one before it (promoted
// with AllowRewrite, an entry rewritten in place) and whose rename landed
// before its pending record was cleared leaves a transcript in place that
// the sizes do not tell: lostPromotion reads it whole against the record
// first. That
// read, too, is the caller's: BeginContext and ViewContext stopped as it
// began end with ctx's error. Given context.Background() (ctx50's M6,
// which no test killed), the read went on to the file's end (gigabytes,
// possibly), found the record's transcript in place, and the key was
// opened, nil error. The key is as it was: a resolve after the stops
// resumes the promotion.
func TestABeginOrViewStoppedAsItReadsATranscriptTheSizeOfTheOneBeforeEndsThere(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	b, ok := s.backend.(keyDirs)
	if !ok {
		t.Fatalf("backend %T; want keyDirs", s.backend)
	}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, strings.Repeat("x", 4<<20))
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	rewritten := bytes.Clone(staged(t, jobDir))
	rewritten[len(rewritten)-10] = 'y' // within the entry's text: same size, another sum
	stage(t, jobDir, rewritten)
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("crash")
		}
		return nil
	})
	res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi, AllowRewrite: true})
	faults.Set(nil)
	temps, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*"))
	if res.Promoted || len(temps) != 1 {
		t.Fatalf("the crashed promotion = %+v, %d temps", res, len(temps))
	}
	// The roll-forward's rename landed; its commit, which clears the
	// pending record, did not.
	if err := os.Rename(temps[0], filepath.Join(root, testKey, TranscriptName)); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(context.Context) (interface{ Close() error }, error){
		"begin": func(ctx context.Context) (interface{ Close() error }, error) {
			return b.BeginContext(ctx, testKey, Base{})
		},
		"view": func(ctx context.Context) (interface{ Close() error }, error) {
			return b.ViewContext(ctx, testKey, gates.Bounds{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reads := cancelAtBaseRead(t, cancel)
			c, err := open(ctx)
			faults.Set(nil)
			if err == nil {
				c.Close()
			}
			if *reads != 1 || !errors.Is(err, context.Canceled) {
				t.Fatalf("%s stopped as it read a transcript the size of the one before (%d reads): %v; want context.Canceled", name, *reads, err)
			}
		})
	}
	if _, jobDir := mustResolve(t, s, testKey, localJob()); !bytes.Equal(staged(t, jobDir), rewritten) {
		t.Fatal("the key after the stops does not resume the promotion whose rename landed")
	}
}
