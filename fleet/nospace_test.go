package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// nospace raises (or, with on false, disarms) etcd's NOSPACE alarm on
// every member, as a member over its --quota-backend-bytes raises it:
// from then on every write is refused, "mvcc: database space exceeded".
func (f *fixture) nospace(on bool) {
	f.t.Helper()
	cli := f.c.Client(f.t)
	members, err := cli.MemberList(f.t.Context())
	if err != nil {
		f.t.Fatal(err)
	}
	action := etcdserverpb.AlarmRequest_ACTIVATE
	if !on {
		action = etcdserverpb.AlarmRequest_DEACTIVATE
	}
	m := etcdserverpb.NewMaintenanceClient(cli.ActiveConnection())
	for _, mem := range members.Members {
		if _, err := m.Alarm(f.t.Context(), &etcdserverpb.AlarmRequest{Action: action, MemberID: mem.ID, Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// docs/fleet.md's NOSPACE paragraph, as the code does it: reads go on;
// a promote is promote-failed, its generation file removed; reap's and
// check --repair's lock is refused, so reap removes no expired key (each
// failed) and the repair no orphan, while reap still sweeps the orphans;
// once the alarm is disarmed the next reap removes the key, and the
// promote run again promotes.
func TestUnderTheNOSPACEAlarm(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	expired := store.Key("github", "nospace", "expired")
	live := store.Key("github", "nospace", "live")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(expired, "old")
	f.now = time.Time{}
	f.run(live, "l1")
	sess, _ := f.job(live, "l2")
	orphan := func(name string) string {
		p := filepath.Join(f.dir, live, name)
		if err := os.WriteFile(p, []byte("died"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-4 * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return live + "/" + name
	}
	f.nospace(true)

	f.holds(live, "l1", 1) // reads go on
	res, err := f.promote(sess)
	if err == nil || res.Reason != gates.PromoteFailed || !strings.Contains(err.Error(), "database space exceeded") {
		t.Fatalf("promote under NOSPACE = %+v, %v; want promote-failed, database space exceeded", res, err)
	}
	if got, want := f.files(live), []string{f.recordFile(live)}; !slices.Equal(got, want) {
		t.Errorf("after the failed promote the key's files are %v, want only %v", got, want)
	}

	first := orphan(".tmp-0123456789abcdef")
	var repair string
	if _, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(x store.Finding) error {
		if x.Path == first {
			repair = x.Repair
		}
		return nil
	}); err != nil {
		t.Fatalf("check --repair: %v", err)
	}
	if !strings.HasPrefix(repair, "not removed: lock ") || !strings.Contains(repair, "database space exceeded") {
		t.Errorf("check --repair's line for the orphan = %q; want not removed: lock ..., database space exceeded", repair)
	}

	reaped, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || len(reaped.Removed) != 0 || !strings.Contains(errString(reaped.Skipped[expired]), "database space exceeded") || !slices.Equal(reaped.Swept, []string{first}) {
		t.Fatalf("reap under NOSPACE = %+v, %v; want %s failed (database space exceeded) and %s swept", reaped, err, expired, first)
	}

	f.nospace(false)
	reaped, err = f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || !slices.Equal(reaped.Removed, []string{expired}) {
		t.Fatalf("reap once disarmed = %+v, %v; want %s removed", reaped, err, expired)
	}
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("the promote run again = %+v, %v; want promoted gen 2", res, err)
	}
	f.holds(live, "l2", 2)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
