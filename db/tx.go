package db

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Tx is a transaction on a DB, given to the function passed to View or
// Update and valid only until it returns. It is not safe for concurrent use.
// Reads work in both kinds of transaction; writes in a View return
// ErrReadOnly.
//
// Once a method has returned ErrDamaged, or a write has failed, the
// transaction is rolled back whatever the function returns.
type Tx struct {
	tx   *bolt.Tx  // nil for a reader's snapshot
	snap *snapshot // nil for a transaction through bbolt
	db   *DB
	done bool  // set when the function returns: a Tx kept past it answers ErrClosed, never an ended bbolt tx
	err  error // the first damage or failed write; it ends the transaction
}

// do runs fn, which touches bbolt, under the DB's guard.
func (tx *Tx) do(op string, write bool, fn func() error) error {
	switch {
	case tx.done:
		return pathErr(op, tx.db.name, ErrClosed)
	case tx.err != nil:
		return tx.err
	case write && (tx.tx == nil || !tx.tx.Writable()):
		return pathErr(op, tx.db.name, ErrReadOnly)
	}
	err := tx.db.call(fn)
	if err == nil {
		return nil
	}
	err = pathErr(op, tx.db.name, err)
	// A function that drops a failed write's error and returns nil would
	// otherwise commit its other writes without that one: the first
	// failure decides the transaction. Damage ends it too, since whatever
	// the function reads next comes from the same untrustworthy pages.
	if write || errors.Is(err, ErrDamaged) {
		tx.err = err
	}
	return err
}

// root is what the transaction reads the top of the file through.
func (tx *Tx) root() rootView {
	if tx.snap != nil {
		return tx.snap
	}
	return boltRoot{tx.tx}
}

// view returns a top-level bucket to read, or nil without error when the
// file's schema predates the bucket (an old file read by a newer binary).
func (tx *Tx) view(name string) (bucketView, error) {
	b := tx.root().bucket(name)
	if b == nil && tx.db.schema >= bucketSince(name) {
		return nil, damaged("no %s/ bucket", name)
	}
	return b, nil
}

// bucket returns a top-level bucket to write, with the same rule as view.
// It goes to bbolt directly, not through bucketView: only a writer's
// transaction writes, and a writer always has bbolt.
func (tx *Tx) bucket(name string) (*bolt.Bucket, error) {
	b := tx.tx.Bucket([]byte(name))
	if b == nil && tx.db.schema >= bucketSince(name) {
		return nil, damaged("no %s/ bucket", name)
	}
	return b, nil
}

// Meta returns meta/. A schema 0 file has none and returns the zero Meta.
func (tx *Tx) Meta() (Meta, error) {
	var m Meta
	err := tx.do("read", false, func() (err error) {
		m, err = readMeta(tx.root(), SchemaVersion)
		return err
	})
	return m, err
}

// Sidecars reads every sidecar key at once. A value that does not decode is
// ErrDamaged naming the key.
func (tx *Tx) Sidecars() (Sidecars, error) {
	var s Sidecars
	err := tx.do("read", false, func() error {
		b, err := tx.view(bucketSidecars)
		if b == nil {
			return err
		}
		s, err = readSidecars(b)
		return err
	})
	if err != nil {
		return Sidecars{}, err
	}
	return s, nil
}

// readSidecars decodes every sidecar key of b.
func readSidecars(b bucketView) (Sidecars, error) {
	var s Sidecars
	// Each key is decoded even after another failed, and errors.Join keeps
	// every failure: one error reports all the damage in sidecars/, not
	// only its first key.
	get := func(key string, decode func(v []byte) error) error {
		// nil is an absent key, and also a nested bucket under the key's
		// name: bbolt's Get answers nil for both, and so does snapBucket,
		// so both paths read such a file alike.
		v := b.Get([]byte(key))
		if v == nil {
			return nil
		}
		if err := decode(v); err != nil {
			return damagedBy(bucketSidecars+"/"+key, err)
		}
		return nil
	}
	err := errors.Join(
		get(keyTranscript, func(v []byte) error {
			t, err := decodeTranscript(v)
			s.Transcript = &t
			return err
		}),
		get(keyPiVersion, func(v []byte) error {
			p, err := decodeString(v)
			s.PiVersion = &p
			return err
		}),
		get(keyVenue, func(v []byte) error {
			p, err := decodeString(v)
			s.Venue = &p
			return err
		}),
		get(keyResumeChain, func(v []byte) error {
			n, err := decodeUint(v)
			s.ResumeChain = &n
			return err
		}),
		get(keyContext, func(v []byte) error {
			c, err := decodeContext(v)
			s.Context = &c
			return err
		}),
		get(keyPending, func(v []byte) error {
			p, err := decodePending(v)
			s.Pending = &p
			return err
		}),
	)
	return s, err
}

// PutTranscript sets sidecars/transcript. A Gen lower than the file
// already records, in the transcript it replaces or in the newest history
// entry, is refused as ErrDamaged: the caller computed it from a read that
// missed the record, and a generation never goes back.
func (tx *Tx) PutTranscript(t Transcript) error {
	v, err := encodeTranscript(t)
	if err != nil {
		// putSidecar turns the encode error into the transaction's
		// failure, with the op and path every other error has.
		return tx.putSidecar(keyTranscript, nil, err)
	}
	if err := tx.do("put", true, func() error { return tx.notBack(t.Gen) }); err != nil {
		return err
	}
	return tx.putSidecar(keyTranscript, v, nil)
}

// notBack refuses a transcript generation below one the file records. It
// walks sidecars/ instead of asking bbolt's binary search, which misses a
// key among keys out of order: that is how issue 15 saw a promotion take a
// file from generation 6 back to 1.
func (tx *Tx) notBack(gen uint64) error {
	b, err := tx.bucket(bucketSidecars)
	if err != nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		// A nested bucket (v == nil) named transcript is no record: Get
		// would not return it either, so it cannot hold a generation.
		if string(k) != keyTranscript || v == nil {
			continue
		}
		cur, err := decodeTranscript(v)
		if err != nil {
			return damagedBy(bucketSidecars+"/"+keyTranscript, err)
		}
		if cur.Gen > gen {
			return damaged("%s/%s: generation %d would go back to %d", bucketSidecars, keyTranscript, cur.Gen, gen)
		}
	}
	// A file whose sidecars/transcript was deleted or lost still remembers
	// its newest generation in history/: the check covers both records,
	// since either alone can be the one the caller's read missed.
	h, err := tx.bucket(bucketHistory)
	if h == nil {
		return err
	}
	if k, v := h.Cursor().Last(); k != nil {
		e, err := decodeHistory(k, v)
		if err != nil {
			return damagedBy(bucketHistory+"/"+keyHex(k), err)
		}
		if e.Gen > gen {
			return damaged("%s/%s: generation %d is below the newest history entry's %d", bucketSidecars, keyTranscript, gen, e.Gen)
		}
	}
	return nil
}

// PutSidecars writes sc as the key's sidecars, in one transaction with
// whatever else tx does. Transcript, PiVersion, Venue and ResumeChain are
// put where sc holds them and left as they are where it does not (a
// record once made is never taken away); Context and Pending are put,
// and their nil deletes them, as PutContext and PutPending do. The
// transcript goes first: PutTranscript's check against the history must
// see the history as it was before any entry the caller appends.
func (tx *Tx) PutSidecars(sc Sidecars) error {
	if sc.Transcript != nil {
		if err := tx.PutTranscript(*sc.Transcript); err != nil {
			return err
		}
	}
	if sc.PiVersion != nil {
		if err := tx.PutPiVersion(*sc.PiVersion); err != nil {
			return err
		}
	}
	if sc.Venue != nil {
		if err := tx.PutVenue(*sc.Venue); err != nil {
			return err
		}
	}
	if sc.ResumeChain != nil {
		if err := tx.PutResumeChain(*sc.ResumeChain); err != nil {
			return err
		}
	}
	if err := tx.PutContext(sc.Context); err != nil {
		return err
	}
	return tx.PutPending(sc.Pending)
}

// PutPiVersion sets sidecars/pi-version; "" records an unknown version.
func (tx *Tx) PutPiVersion(v string) error {
	b, err := encodeString(v)
	return tx.putSidecar(keyPiVersion, b, err)
}

// PutVenue sets sidecars/venue.
func (tx *Tx) PutVenue(v string) error {
	b, err := encodeString(v)
	return tx.putSidecar(keyVenue, b, err)
}

// PutResumeChain sets sidecars/resume-chain.
func (tx *Tx) PutResumeChain(n uint64) error {
	return tx.putSidecar(keyResumeChain, encodeUint(n), nil)
}

// PutContext sets sidecars/context; nil deletes it (no measurement).
func (tx *Tx) PutContext(c *Context) error {
	if c == nil {
		return tx.putSidecar(keyContext, nil, nil)
	}
	v, err := encodeContext(*c)
	return tx.putSidecar(keyContext, v, err)
}

// PutPending sets sidecars/pending; nil deletes it (no promotion in flight).
func (tx *Tx) PutPending(p *Pending) error {
	if p == nil {
		return tx.putSidecar(keyPending, nil, nil)
	}
	v, err := encodePending(*p)
	return tx.putSidecar(keyPending, v, err)
}

// recordSize refuses a record an open would refuse as damage.
func recordSize(v []byte) error {
	if len(v) > MaxRecordBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrRecordTooLarge, len(v), MaxRecordBytes)
	}
	return nil
}

// putSidecar puts v under key in sidecars/, or deletes key when v is nil.
// encErr is an encode error of the caller's, reported from inside do so
// that it fails the transaction as a failed Put would: a record that could
// not be written must not let the rest of the update commit without it.
func (tx *Tx) putSidecar(key string, v []byte, encErr error) error {
	return tx.do("put", true, func() error {
		if encErr != nil {
			return fmt.Errorf("%s/%s: %w", bucketSidecars, key, encErr)
		}
		if err := recordSize(v); err != nil {
			return fmt.Errorf("%s/%s: %w", bucketSidecars, key, err)
		}
		b, err := tx.bucket(bucketSidecars)
		if err != nil {
			return err
		}
		if v == nil {
			err = b.Delete([]byte(key))
		} else {
			err = b.Put([]byte(key), v)
		}
		if err != nil {
			return fmt.Errorf("%s/%s: %w", bucketSidecars, key, err)
		}
		return nil
	})
}
