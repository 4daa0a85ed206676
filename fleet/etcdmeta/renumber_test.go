package etcdmeta

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
)

// The largest history a key can need renumbering: a whole ring in the
// slots up to the last, and a hostile lot below it (more than etcd's
// default --max-txn-ops of 128, which the test cluster runs with). The
// renumber is one transaction within that limit: the ring at 1 to 64, each
// value as it was, everything below it removed, and the record's revision
// unchanged; the next write lands at 65.
func TestRenumberHistoryKeepsTheRingInOneTransaction(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	rev, ring := createAtTheTop(t, s, key)
	cli := c.Client(t)
	below := []uint64{0, 5, 64, 65}
	for i := range 300 {
		below = append(below, 1000+uint64(i))
	}
	for _, seq := range below {
		v, _ := encodeHistory(entry(1, randHex(16)))
		if _, err := cli.Put(ctx(t), s.historyKey(key, seq), string(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx(t), s.historyDir(key)+"!not-a-slot", "x"); err != nil {
		t.Fatal(err)
	}
	did, err := s.RenumberHistory(ctx(t), key, rev)
	if err != nil || did != (Renumbered{Kept: HistoryLimit, Dropped: int64(len(below)) + 1}) {
		t.Fatalf("RenumberHistory = %+v, %v; want %d kept, %d dropped", did, err, HistoryLimit, len(below)+1)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil || st.Rev != rev || len(st.History) != HistoryLimit {
		t.Fatalf("after: rev %d (want %d), %d entries, %v", st.Rev, rev, len(st.History), err)
	}
	for i, e := range st.History {
		if e.Seq != uint64(i+1) || e.Ticket != ring[i].Ticket || e.At != ring[i].At {
			t.Fatalf("entry %d: seq %d ticket %s; want seq %d ticket %s", i, e.Seq, e.Ticket, i+1, ring[i].Ticket)
		}
	}
	if n, err := cli.Get(ctx(t), s.historyDir(key), clientPrefix()...); err != nil || n.Count != HistoryLimit {
		t.Fatalf("the key holds %v history keys (%v), want %d", n.Count, err, HistoryLimit)
	}
	if did, err := s.RenumberHistory(ctx(t), key, rev); err != nil || did != (Renumbered{}) {
		t.Fatalf("a second RenumberHistory = %+v, %v; want nothing done", did, err)
	}
	// A new process resolves the key first, as a job does: the record's
	// hint, which still names the last slot, is its guess.
	fresh := open(t, c)
	if _, err := fresh.GetRecord(ctx(t), key); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Put(ctx(t), key, rev, record(key, HistoryLimit+1), entry(HistoryLimit+1, randHex(16))); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Get(ctx(t), key); err != nil || st.History[HistoryLimit-1].Seq != HistoryLimit+1 {
		t.Fatalf("the write after: %+v, %v; want it at %d", st.History[HistoryLimit-1], err, HistoryLimit+1)
	}
}

// A renumber guarded by a base the key has moved from (or by none) writes
// nothing: a *ConflictError naming what the key holds.
func TestRenumberHistoryOnAMovedBaseWritesNothing(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	e := entry(1, randHex(16))
	e.Seq = math.MaxUint64 - 1
	rev, err := s.Create(ctx(t), key, record(key, 1), []HistoryEntry{e})
	if err != nil {
		t.Fatal(err)
	}
	var ce *ConflictError
	if _, err := s.RenumberHistory(ctx(t), key, rev-1); !errors.As(err, &ce) || ce.Current.Rev != rev {
		t.Fatalf("RenumberHistory on an old base = %v; want a conflict naming revision %d", err, rev)
	}
	if _, err := s.RenumberHistory(ctx(t), key, 0); !errors.As(err, &ce) {
		t.Fatalf("RenumberHistory on base 0 = %v; want a conflict", err)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil || len(st.History) != 1 || st.History[0].Seq != math.MaxUint64-1 {
		t.Fatalf("after: %+v, %v; want the history as it was", st.History, err)
	}
}

// A renumber whose commit landed, its answer lost (one member of three
// takes requests and sends nothing back), and after which the key took a
// write before the hedge's next try was served (the job's retry, a
// refusal's entry: the key takes them again once renumbered) is the
// renumber, landed: not a conflict. The next try's compares fail, and the
// key no longer holds exactly the history the renumber wrote; before, that
// was taken for a conflict, and check --repair said "left as is: the key
// changed while it was repaired" of a history it had numbered again. The
// write after it is kept, above the renumbered entries.
func TestARenumberLandedUnderALostAnswerIsNotAConflict(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start3(t)
	const timeout = 3 * time.Second
	ps, s := proxiedStore(t, c, timeout)
	// The writer after the renumber talks to the members, not the proxies.
	w := open(t, c)
	cli := c.Client(t)
	ps[0].BlackholeAnswers()
	lost := 0
	for i := range 6 {
		key := newKey()
		var ring []HistoryEntry
		for g := range 3 {
			e := entry(uint64(g+1), randHex(16))
			e.Seq = math.MaxUint64 - 1 - uint64(2-g)
			ring = append(ring, e)
		}
		rev, err := w.Create(ctx(t), key, record(key, 3), ring)
		if err != nil {
			t.Fatal(err)
		}
		// Once the renumber's entries are in, the key takes a write: a
		// refusal's entry (the record kept) or a promotion (moved).
		wctx, stop := context.WithCancel(ctx(t))
		events := cli.Watch(wctx, w.historyKey(key, 1))
		wrote := make(chan error, 1)
		next := entry(4, randHex(16))
		go func() {
			for resp := range events {
				for _, ev := range resp.Events {
					if ev.Type == clientv3.EventTypePut {
						var err error
						if i%2 == 0 {
							_, err = w.AppendHistory(ctx(t), key, rev, next)
						} else {
							_, err = w.Put(ctx(t), key, rev, record(key, 4), next)
						}
						wrote <- err
						return
					}
				}
			}
			wrote <- errors.New("no renumber seen")
		}()
		// The balancer sends each request to the next member, and each
		// renumber sends two through it (its read, its commit's first
		// try; a try sent again goes to one member alone): from key to
		// key the commit's first try meets each member in turn. Requests
		// of the test's own between them would break that turn: with
		// one read more for every other key (as here before the hedge's
		// tries were sent apart), the commits could miss the member
		// whose answers are lost every time.
		did, err := s.RenumberHistory(ctx(t), key, rev)
		var werr error
		select {
		case werr = <-wrote:
			// The write after the renumber landed before its answer
			// came: the commit's first answer was lost.
			lost++
		default:
			werr = <-wrote
		}
		if werr != nil {
			t.Fatalf("key %d: the write after the renumber: %v", i, werr)
		}
		stop()
		t.Logf("key %d: %+v, %v", i, did, err)
		if err != nil || did != (Renumbered{Kept: 3}) {
			t.Errorf("key %d: RenumberHistory = %+v, %v; want the 3 entries renumbered (it landed)", i, did, err)
		}
		st, err := w.Get(ctx(t), key)
		if err != nil || len(st.History) != 4 {
			t.Fatalf("key %d: after: %+v, %v; want 4 entries", i, st.History, err)
		}
		for j, e := range st.History {
			want := next
			if j < 3 {
				want = ring[j]
			}
			if e.Seq != uint64(j+1) || e.Ticket != want.Ticket {
				t.Errorf("key %d: entry %d at %d, ticket %s; want at %d, ticket %s", i, j, e.Seq, e.Ticket, j+1, want.Ticket)
			}
		}
	}
	if lost == 0 {
		t.Fatal("no renumber's commit went to the member whose answers are lost: the test proves nothing")
	}
}

// A name under the key's history that is no slot's, below the ring (so no
// Get reads it), and sorts among the slots the renumber writes (between
// slot 1 and slot n+1: a slot's name and more, or an upper-case digit) is
// in neither of its range deletes.
// Renumbered, the key's history held it among its newest entries, and
// every Get of the key was ErrDamaged where before only its writes were,
// the renumber counting it "dropped". It is refused, ErrDamaged naming
// it, and nothing is written.
func TestRenumberHistoryAmongForeignNamesWritesNothing(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	cli := c.Client(t)
	for _, foreign := range []string{"0000000000000001x", "00000000000000010", "000000000000000A"} {
		key := newKey()
		rev, _ := createAtTheTop(t, s, key)
		if _, err := cli.Put(ctx(t), s.historyDir(key)+foreign, "x"); err != nil {
			t.Fatal(err)
		}
		did, err := s.RenumberHistory(ctx(t), key, rev)
		if _, gerr := s.Get(ctx(t), key); gerr != nil {
			t.Errorf("%s: after RenumberHistory (%+v, %v), Get = %v", foreign, did, err, gerr)
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), foreign) {
			t.Errorf("%s: RenumberHistory = %+v, %v; want ErrDamaged naming it", foreign, did, err)
		}
		if st, err := s.Get(ctx(t), key); err == nil && (len(st.History) != HistoryLimit || !LastSlot(st.History[HistoryLimit-1].Seq)) {
			t.Errorf("%s: history after: %d entries, newest at %x; want it as it was", foreign, len(st.History), st.History[len(st.History)-1].Seq)
		}
	}
}

// A key changed between the renumber's read and its commit, by a writer
// that takes no lock (an operator's etcdctl, an older binary), is left as
// it is: the commit's compares see the record moved, a name put under the
// history (an older binary's write above the last slot), and an entry the
// read saw removed, each on its own; a *ConflictError, nothing written.
// The history holds a copy of its newest entry in the slot the renumber
// puts that entry in, written before the read: a try that lost is not
// taken for its sibling landed; nor is one that finds other bytes written
// there since the read.
func TestRenumberHistoryOfAKeyChangedBeforeItsCommitWritesNothing(t *testing.T) {
	c := etcdtest.Start1(t)
	s := open(t, c)
	cli := c.Client(t)
	for _, tc := range []struct {
		name   string
		change func(key string, ring []HistoryEntry) error
	}{
		{"record moved", func(key string, _ []HistoryEntry) error {
			got, err := cli.Get(ctx(t), s.recordKey(key))
			if err == nil {
				_, err = cli.Put(ctx(t), s.recordKey(key), string(got.Kvs[0].Value))
			}
			return err
		}},
		{"a name put", func(key string, _ []HistoryEntry) error {
			_, err := cli.Put(ctx(t), s.historyKey(key, math.MaxUint64), "x")
			return err
		}},
		{"an entry removed", func(key string, ring []HistoryEntry) error {
			_, err := cli.Delete(ctx(t), s.historyKey(key, ring[1].Seq))
			return err
		}},
		// The slot the newest entry goes to, written since the read with
		// other bytes: not that entry, so no renumber of this history.
		{"the newest's slot written", func(key string, _ []HistoryEntry) error {
			_, err := cli.Put(ctx(t), s.historyKey(key, 4), "another writer's")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := newKey()
			var ring []HistoryEntry
			for i := range 3 {
				e := entry(uint64(i+1), randHex(16))
				e.Seq = math.MaxUint64 - 1 - uint64(2-i)
				ring = append(ring, e)
			}
			// The copy makes 4 entries: the newest goes to slot 4.
			cp := ring[2]
			cp.Seq = 4
			rev, err := s.Create(ctx(t), key, record(key, 3), append([]HistoryEntry{cp}, ring...))
			if err != nil {
				t.Fatal(err)
			}
			before, err := cli.Get(ctx(t), s.historyDir(key), clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { faults.Set(nil) })
			faults.Set(func(p faults.Point) error {
				if p == faults.EtcdRenumberBeforeCommit {
					faults.Set(nil)
					return tc.change(key, ring)
				}
				return nil
			})
			did, err := s.RenumberHistory(ctx(t), key, rev)
			faults.Set(nil)
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Errorf("RenumberHistory of a key changed before its commit = %+v, %v; want a conflict", did, err)
			}
			after, err := cli.Get(ctx(t), s.historyDir(key), clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			// Nothing renumbered: the slots below the ring hold only the
			// copy, at 4, as before.
			for _, kv := range after.Kvs {
				if name := string(kv.Key[len(s.historyDir(key)):]); name < "0000000000000004" {
					t.Errorf("after: %s holds an entry; want nothing below the copy at 4", name)
				}
			}
			if len(after.Kvs) < len(before.Kvs)-1 {
				t.Errorf("after: %d history keys, before %d", len(after.Kvs), len(before.Kvs))
			}
		})
	}
}

// createAtTheTop creates key with a full ring of history entries in the
// last slots a history takes (its newest in the last one), and returns
// the record's revision and the entries in order.
func createAtTheTop(t *testing.T, s *Store, key string) (Rev, []HistoryEntry) {
	t.Helper()
	var ring []HistoryEntry
	for i := range HistoryLimit {
		e := entry(uint64(i+1), randHex(16))
		e.Seq = math.MaxUint64 - 1 - uint64(HistoryLimit-1-i)
		ring = append(ring, e)
	}
	rev, err := s.Create(ctx(t), key, record(key, HistoryLimit), ring)
	if err != nil {
		t.Fatal(err)
	}
	return rev, ring
}
