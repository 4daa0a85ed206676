package etcdmeta

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

// open opens a Store on c, closed at cleanup; edit adjusts the config.
func open(t testing.TB, c *etcdtest.Cluster, edit ...func(*Config)) *Store {
	t.Helper()
	cfg := Config{Endpoints: c.Endpoints(), RequestTimeout: 10 * time.Second}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newKey() string { return randHex(16) }

func ptr[T any](v T) *T { return &v }

// record is a realistic record for gen: ~170 bytes encoded, the size of a
// promoted key's record with every sidecar set.
func record(key string, gen uint64) Record {
	return Record{
		Transcript: &Transcript{Gen: gen, Size: 48211 + int64(gen), CRC32C: 0x8a9136aa, PromotedAt: time.Now().UnixNano(),
			File: fmt.Sprintf("%s/%016x-%s.jsonl", key, gen, randHex(8))},
		PiVersion:   ptr("0.58.3"),
		Venue:       ptr("local"),
		ResumeChain: ptr(gen),
		Context:     &Context{Tokens: 61234, Window: 200000, Model: "anthropic/claude-sonnet-4-5"},
	}
}

func entry(gen uint64, ticket string) HistoryEntry {
	return HistoryEntry{Gen: gen, At: time.Now().UnixNano(), Resumed: true, Reason: "resumed", Bytes: 48211,
		Chain: gen, Job: "job-" + ticket[:8], Ticket: ticket, Run: "answered", BaseGen: gen - 1}
}

// mustPut puts the next generation of key onto base and returns the new
// revision.
func mustPut(t testing.TB, s *Store, key string, base Rev, gen uint64) Rev {
	t.Helper()
	rev, err := s.Put(ctx(t), key, base, record(key, gen), entry(gen, randHex(16)))
	if err != nil {
		t.Fatalf("put %s gen %d on %d: %v", key, gen, base, err)
	}
	return rev
}

func clientPrefix() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
}

// promoteAfterARingOfRefusals appends a ring and one more of refusals to
// key (at record revision rev) through appender, then promotes gen 2
// through writer, whose guess of the newest slot is what the test made
// it, and wants the promotion's entry the newest, at slot want: above
// every entry, inside the ring Get reads.
func promoteAfterARingOfRefusals(t *testing.T, appender, writer *Store, key string, rev Rev, want uint64) {
	t.Helper()
	for i := range HistoryLimit + 1 {
		if _, err := appender.AppendHistory(ctx(t), key, rev, HistoryEntry{Gen: 1, Outcome: "run-incomplete", Ticket: fmt.Sprint(i)}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	ticket := randHex(16)
	if _, err := writer.Put(ctx(t), key, rev, record(key, 2), entry(2, ticket)); err != nil {
		t.Fatal(err)
	}
	st, err := appender.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	newest := st.History[len(st.History)-1]
	if newest.Ticket != ticket || newest.Seq != want {
		t.Fatalf("newest history entry = seq %d ticket %q, want the promotion's at seq %d", newest.Seq, newest.Ticket, want)
	}
}

// listenHolding listens on a loopback port and runs serve on each
// connection it accepts (nil: none; the connection is held open, a member
// that takes it and answers nothing); every connection, and the
// listener, are closed when t ends.
func listenHolding(t *testing.T, serve func(net.Conn)) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			if serve != nil {
				go serve(c)
			}
		}
	}()
	return l
}

// paceOn is an attempt's request timeout on c (see etcdtest.Pace), paced
// by rounds of a lock taken and released and a read on a Store of its own
// that reaches every member directly (edit adjusts its config: a login),
// which go on beside the attempt.
func paceOn(t *testing.T, p *etcdtest.Pace, c *etcdtest.Cluster, edit ...func(*Config)) time.Duration {
	t.Helper()
	s := open(t, c, edit...)
	key := newKey()
	return p.Timeout(func() time.Duration {
		began := time.Now()
		if unlock, _, err := s.Lock(context.Background(), key); err == nil {
			unlock()
		}
		s.GetRecord(context.Background(), key) // timed only: an error counts as its time
		return time.Since(began)
	})
}
