package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// The benchmarks run against real members with fsync on, one and three,
// started once per benchmark. The floors are what etcd itself costs: a
// bare guarded transaction writing the record's and one history entry's
// bytes, and one linearizable read.

func clusters(b *testing.B, fn func(b *testing.B, c *etcdtest.Cluster)) {
	for _, n := range []int{1, 3} {
		c := etcdtest.Start(b, etcdtest.Options{Members: n})
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) { fn(b, c) })
		c.Close()
	}
}

func encodedSizes(b *testing.B, key string) (rec, hist []byte) {
	rec, err := encodeRecord(record(key, 1), 1)
	if err != nil {
		b.Fatal(err)
	}
	hist, err = encodeHistory(entry(1, randHex(16)))
	if err != nil {
		b.Fatal(err)
	}
	return rec, hist
}

// BenchmarkFloorTxn is a bare etcd transaction guarded by a mod revision,
// putting a record-sized and a history-entry-sized value.
func BenchmarkFloorTxn(b *testing.B) {
	clusters(b, func(b *testing.B, c *etcdtest.Cluster) {
		cli := c.Client(b)
		key := newKey()
		rec, hist := encodedSizes(b, key)
		rk := "/floor/" + key
		var rev int64
		b.ResetTimer()
		for i := range b.N {
			resp, err := cli.Txn(context.Background()).
				If(clientv3.Compare(clientv3.ModRevision(rk), "=", rev)).
				Then(clientv3.OpPut(rk, string(rec)), clientv3.OpPut(fmt.Sprintf("%s/h/%016x", rk, i), string(hist))).
				Commit()
			if err != nil || !resp.Succeeded {
				b.Fatalf("txn: %v, %v", resp, err)
			}
			rev = resp.Header.Revision
		}
		b.ReportMetric(float64(len(rec)+len(hist)), "value-bytes")
	})
}

// BenchmarkFloorGet is one linearizable read of one record-sized value.
func BenchmarkFloorGet(b *testing.B) {
	clusters(b, func(b *testing.B, c *etcdtest.Cluster) {
		cli := c.Client(b)
		rec, _ := encodedSizes(b, newKey())
		if _, err := cli.Put(context.Background(), "/floor/get", string(rec)); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := cli.Get(context.Background(), "/floor/get"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGet is Store.Get of a key with a full history ring (64
// entries): what resolve pays.
func BenchmarkGet(b *testing.B) {
	clusters(b, func(b *testing.B, c *etcdtest.Cluster) {
		s := open(b, c)
		key := newKey()
		var rev Rev
		for gen := uint64(1); gen <= HistoryLimit; gen++ {
			rev = mustPut(b, s, key, rev, gen)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := s.Get(context.Background(), key); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGetRecord is Store.GetRecord of the same key: the record
// alone, against BenchmarkFloorGet.
func BenchmarkGetRecord(b *testing.B) {
	clusters(b, func(b *testing.B, c *etcdtest.Cluster) {
		s := open(b, c)
		key := newKey()
		var rev Rev
		for gen := uint64(1); gen <= HistoryLimit; gen++ {
			rev = mustPut(b, s, key, rev, gen)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := s.GetRecord(context.Background(), key); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPut is Store.Put throughput with 1, 4 and 16 writers, each on a
// key of its own or all on one key. On one key every writer reads, puts on
// what it read and, losing the compare, goes again from the state the
// conflict carries (no extra read); conflicts/op counts the lost compares
// per committed put. ns/op is wall time per committed put.
func BenchmarkPut(b *testing.B) {
	clusters(b, func(b *testing.B, c *etcdtest.Cluster) {
		s := open(b, c)
		for _, writers := range []int{1, 4, 16} {
			for _, shared := range []bool{false, true} {
				name := fmt.Sprintf("writers=%d/keys=distinct", writers)
				if shared {
					name = fmt.Sprintf("writers=%d/keys=one", writers)
				}
				b.Run(name, func(b *testing.B) { benchPut(b, s, writers, shared) })
			}
		}
	})
}

func benchPut(b *testing.B, s *Store, writers int, shared bool) {
	one := newKey()
	var done, conflicts atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range writers {
		wg.Go(func() {
			key := one
			if !shared {
				key = newKey()
			}
			st, err := s.Get(context.Background(), key)
			if err != nil {
				b.Error(err)
				return
			}
			for done.Add(1) <= int64(b.N) {
				gen := uint64(1)
				if t := st.Record.Transcript; t != nil {
					gen = t.Gen + 1
				}
				rev, err := s.Put(context.Background(), key, st.Rev, record(key, gen), entry(gen, randHex(16)))
				var ce *ConflictError
				switch {
				case err == nil:
					st = State{Rev: rev, Record: record(key, gen)}
				case errors.As(err, &ce):
					conflicts.Add(1)
					st = ce.Current
					done.Add(-1) // not a committed put: go again
				default:
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
}

// BenchmarkPutOnABusyKey is Store.Put on a key that has had many
// promotions since etcd last compacted (every trimmed history entry is a
// tombstone etcd's index keeps until then), beside a key that has had
// HistoryLimit. client=cached is a long-lived Store, which knows the key's
// last history slot. The other two are a new process, as a CLI promote
// is: it reads the record (PeekRecord, as the fleet's Begin does), then
// puts (after a linearizable Get, which reads the history too, where the
// member it asked was behind); client=new takes the record's hint of the
// newest slot, and client=new-nohint forgets it, as before the hint, and
// looks the slot up with a range over the key's history.
func BenchmarkPutOnABusyKey(b *testing.B) {
	clusters(b, func(b *testing.B, c *etcdtest.Cluster) {
		s := open(b, c)
		forget := func() {
			s.mu.Lock()
			s.lastSeq = nil
			s.mu.Unlock()
		}
		for _, prior := range []int{HistoryLimit, 4096} {
			key := newKey()
			var rev Rev
			for gen := uint64(1); gen <= uint64(prior); gen++ {
				rev = mustPut(b, s, key, rev, gen)
			}
			gen := uint64(prior)
			for _, client := range []string{"cached", "new-nohint", "new"} {
				b.Run(fmt.Sprintf("prior=%d/client=%s", prior, client), func(b *testing.B) {
					for b.Loop() {
						if client != "cached" {
							forget()
							st, err := s.PeekRecord(ctx(b), key)
							if err != nil {
								b.Fatal(err)
							}
							if client == "new-nohint" {
								forget()
							}
							if st.Rev != rev {
								// A member behind the last put: Begin reads
								// the key linearizably instead.
								if _, err := s.Get(ctx(b), key); err != nil {
									b.Fatal(err)
								}
							}
						}
						gen++
						rev = mustPut(b, s, key, rev, gen)
					}
				})
			}
		}
	})
}

// BenchmarkHedge is what hedging costs on a healthy cluster, where no try
// is ever sent again: a read (GetRecord) and a guarded commit (Put, under
// Hedge as fleet's commit is), each hedged and not (hedgeOff, the test's
// knob), side by side, against three members given one endpoint (Hedge
// then sends once, by construction) and all three.
func BenchmarkHedge(b *testing.B) {
	c := etcdtest.Start3(b)
	conflict := func(err error) bool {
		var ce *ConflictError
		return errors.As(err, &ce)
	}
	for _, eps := range []int{1, 3} {
		for _, op := range []string{"read", "commit"} {
			for _, hedge := range []bool{false, true} {
				b.Run(fmt.Sprintf("endpoints=%d/%s/hedge=%v", eps, op, hedge), func(b *testing.B) {
					s := open(b, c, func(cfg *Config) { cfg.Endpoints = c.Endpoints()[:eps] })
					s.hedgeOff = !hedge
					key := newKey()
					rev := mustPut(b, s, key, 0, 1)
					rec, h := record(key, 2), entry(2, randHex(16))
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						var err error
						if op == "read" {
							_, err = s.GetRecord(context.Background(), key)
						} else {
							base := rev
							rev, err = Hedge(s, context.Background(), func(c context.Context) (Rev, error) {
								return s.Put(c, key, base, rec, h)
							}, conflict, nil)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkHedgeAlone is Hedge's own work around a try that answers at
// once (no request): its goroutine, channel, ticker and context, against
// the try called directly (hedge=false), with three endpoints given.
func BenchmarkHedgeAlone(b *testing.B) {
	c := etcdtest.Start3(b)
	for _, hedge := range []bool{false, true} {
		b.Run(fmt.Sprintf("hedge=%v", hedge), func(b *testing.B) {
			s := open(b, c)
			s.hedgeOff = !hedge
			ends := func(error) bool { return true }
			b.ReportAllocs()
			for range b.N {
				if _, err := Hedge(s, context.Background(), func(context.Context) (int, error) { return 1, nil }, ends, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
