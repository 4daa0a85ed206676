package etcdmeta

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/callerctx"
)

// fleetIDLen is the length of a fleet's ID: 32 lowercase hex characters,
// 128 random bits, so that two fleets never draw the same one.
const fleetIDLen = 32

// FleetIDKey is the etcd key that holds the fleet's ID: <prefix>/fleet.
func (s *Store) FleetIDKey() string { return s.cfg.Prefix + "/fleet" }

// FleetID returns the ID of the fleet whose records live under this
// Store's prefix: a random name kept at FleetIDKey, the same for every
// worker of the fleet and for as long as its etcd data lasts (a snapshot
// restored keeps it). A transcripts dir is tied to one fleet by a mark
// that names this ID (package shared), so that two fleets never take
// each other's transcripts for orphans.
//
// With create, a fleet that has none gets one: the first of any number of
// writers racing for it makes it, in one transaction guarded by the key
// not existing, and all of them return that one. Without create, a fleet
// that has none is "" and nothing is written (an audit changes nothing).
// A value that is not an ID sessdb made is ErrDamaged; errors are those
// of every request.
func (s *Store) FleetID(ctx context.Context, create bool) (string, error) {
	ctx = callerctx.Of(ctx)
	c, cancel, err := s.start(ctx, "fleet id")
	if err != nil {
		return "", err
	}
	defer cancel()
	key := s.FleetIDKey()
	// Once made the ID never changes, so the nearest member's copy, read
	// without a round through the leader, is as good as any; only its
	// absence may be a member behind the one that made it.
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, key, clientv3.WithSerializable())
	})
	if err != nil {
		return "", s.cfg.opErr(ctx, "fleet id", "", err)
	}
	if len(resp.Kvs) == 0 {
		if create {
			return s.makeFleetID(ctx, c, key)
		}
		if resp, err = hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
			return s.cli.Get(c, key)
		}); err != nil {
			return "", s.cfg.opErr(ctx, "fleet id", "", err)
		}
		if len(resp.Kvs) == 0 {
			return "", nil
		}
	}
	return fleetIDOf(key, resp.Kvs[0].Value)
}

// makeFleetID writes a new ID at key unless one is there, and returns the
// one there after. The write is guarded by the key's absence, so a write
// etcd's client sends again (see ConflictError.Resent) finds its own ID
// there, which it returns as any other writer's.
func (s *Store) makeFleetID(ctx, c context.Context, key string) (string, error) {
	var b [fleetIDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("fleet id: %w", err)
	}
	resp, err := s.cli.Txn(c).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
	).Then(clientv3.OpPut(key, hex.EncodeToString(b[:]))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return "", s.cfg.opErr(ctx, "fleet id", "", err)
	}
	if resp.Succeeded {
		return hex.EncodeToString(b[:]), nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		// Removed again between the compare and the read: none of
		// sessdb's writes does that, an operator's delete can.
		return "", fmt.Errorf("fleet id %s: %w: removed while it was made", key, ErrDamaged)
	}
	return fleetIDOf(key, kvs[0].Value)
}

// fleetIDOf checks that v is an ID sessdb made.
func fleetIDOf(key string, v []byte) (string, error) {
	if len(v) != fleetIDLen {
		return "", fmt.Errorf("fleet id %s: %w: %d bytes, not an ID (%d lowercase hex characters)", key, ErrDamaged, len(v), fleetIDLen)
	}
	if !lowerHex(string(v)) {
		return "", fmt.Errorf("fleet id %s: %w: %q is not an ID (%d lowercase hex characters)", key, ErrDamaged, v, fleetIDLen)
	}
	return string(v), nil
}

// HasRecords reports whether any key has a record under the prefix (one
// is enough: a fleet's first writer asks, before it marks a transcripts
// dir that holds key dirs, whether any could be this fleet's).
func (s *Store) HasRecords(ctx context.Context) (bool, error) {
	ctx = callerctx.Of(ctx)
	c, cancel, err := s.start(ctx, "has records")
	if err != nil {
		return false, err
	}
	defer cancel()
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, s.recordDir(), clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly())
	})
	if err != nil {
		return false, s.cfg.opErr(ctx, "has records", s.cfg.Prefix, err)
	}
	return len(resp.Kvs) > 0, nil
}
