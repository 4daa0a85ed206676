package fleet

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// The stamps a conflict of the same bytes names are every one the ladder
// reads, not the venue and the pi-version alone: another root's key that
// differs only in its context reading, or only in its promotion time (the
// expiry's clock), is a conflict both ways naming that stamp alone, and
// etcd keeps the first root's record. Comparing fewer stamps survived
// every test (mutnew47's ST08, ST09): such a key was already, exit 0, its
// jobs judged by the other root's reading or expired by its time.
func TestMigrateOfTheSameBytesNamesTheContextAndThePromotionTime(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "stamps")
	hostA := filepath.Join(t.TempDir(), "a")
	newHostBuilder(t, hostA).mustPromote(key, migJob, "the same turn", store.PromoteRequest{})
	if got, _ := runMigration(t, true, hostA, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first root into the fleet: %+v", got[key])
	}
	tokens := int64(1234)
	for _, tc := range []struct {
		name        string
		req         store.PromoteRequest
		later       time.Duration
		want, other string
	}{
		{"context", store.PromoteRequest{Tokens: &tokens, Window: 200000}, 0, "context none in etcd, 1234/200000", "promoted"},
		{"promoted", store.PromoteRequest{}, time.Minute, "promoted ", "context"},
	} {
		root := filepath.Join(t.TempDir(), tc.name)
		h := newHostBuilder(t, root)
		h.now = h.now.Add(tc.later)
		h.mustPromote(key, migJob, "the same turn", tc.req)
		for _, to := range []bool{true, false} {
			for _, dry := range []bool{true, false} {
				opts := migOpts()
				opts.DryRun = dry
				got, _ := runMigration(t, to, root, f.b, opts)
				if r := got[key]; r.Action != Conflict || !strings.Contains(r.Cause, "same bytes") || !strings.Contains(r.Cause, tc.want) ||
					strings.Contains(r.Cause, tc.other) || strings.Contains(r.Cause, "venue") || strings.Contains(r.Cause, "pi-version") {
					t.Errorf("%s: to etcd %v, dry run %v: %s %q; want a conflict naming %q alone", tc.name, to, dry, r.Action, r.Cause, tc.want)
				}
			}
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || st.Record.Context != nil {
		t.Fatalf("etcd's record: %+v, %v; want the first root's, no context", st.Record, err)
	}
}
