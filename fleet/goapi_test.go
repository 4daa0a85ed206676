package fleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/fleet"
	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The fleet's Go API as a worker's code and an operator's tool use it:
// contexts, Close, one Backend shared by many goroutines.

const apiHeader = `{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/workspace"}` + "\n"

var apiJob = store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}

// apiFleet opens a fleet of its own on c, and a store on it.
func apiFleet(t *testing.T, c *etcdtest.Cluster) (*fleet.Backend, *store.Store) {
	t.Helper()
	p := make([]byte, 8)
	rand.Read(p)
	b, err := fleet.Open(fleet.Config{
		Config:         etcdmeta.Config{Endpoints: c.Endpoints(), Prefix: "/sessdb/" + hex.EncodeToString(p)},
		TranscriptsDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
}

// apiPromote runs one job on key: resolve, the run appends line, promote.
func apiPromote(t *testing.T, s *store.Store, key, line string) (store.Session, store.PromoteResult) {
	t.Helper()
	jd := filepath.Join(t.TempDir(), "job")
	sess, err := s.Resolve(key, apiJob, jd)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(jd, store.StagedDirName, store.TranscriptName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !sess.Resume {
		f.WriteString(apiHeader)
	}
	f.WriteString(line + "\n")
	f.Close()
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: apiJob.PiVersion})
	if err != nil || !res.Promoted {
		t.Fatalf("promote %s: %+v %v", key, res, err)
	}
	return sess, res
}

func apiLine(marker string) string {
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"user","content":%q}}`, marker, marker)
}

// A migration out of etcd that ctx ended while it listed the fleet is
// interrupted, as one ended between keys is, and as a sessions root's
// migration ended before its first key is: the CLI exits 130 on it, not
// 1 with the cancellation for a fault.
func TestFromEtcdEndedWhileListingIsInterrupted(t *testing.T) {
	c := etcdtest.Start1(t)
	b, s := apiFleet(t, c)
	apiPromote(t, s, store.Key("github", "acme/widget", "1"), apiLine("one"))
	for _, end := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		{"past its deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		}},
	} {
		ctx, cancel := end.ctx()
		root := filepath.Join(t.TempDir(), "sessions")
		sum, err := fleet.FromEtcd(ctx, b, root, fleet.MigrateOptions{}, func(fleet.MigrateReport) error { return nil })
		cancel()
		if !errors.Is(err, ctx.Err()) || !sum.Interrupted || sum.Entries != 0 {
			t.Errorf("%s: %+v, %v; want ctx's error, interrupted before any key", end.name, sum, err)
		}
		if names, _ := os.ReadDir(root); len(names) != 0 {
			t.Errorf("%s: the root holds %v", end.name, names)
		}
	}
}
