package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/walk"
)

// ReapResult says what a Reap did. Every name under the root is in
// exactly one of Removed, Kept (a key left in place) and Skipped (a name
// left alone, with why: not a key, not a directory, a fault). Swept lists
// the stray temp files removed from kept keys, as <key>/<name>. Failed
// lists, in order, the names of Skipped that are faults (an I/O error, a
// lock not had in time): reap could not do them. (sessdb reap --json
// prints actions built from it: docs/json.md.)
type ReapResult struct {
	Removed []string
	Swept   []string
	Kept    int
	Skipped map[string]string
	Failed  []string
}

// ReapOptions says how ReapWith runs. The zero value reaps for real, with
// a default number of workers.
type ReapOptions struct {
	// DryRun removes nothing; the result lists what would be removed.
	DryRun bool
	// Workers and Progress are as in InspectOptions.
	Workers  int
	Progress func(done, total int)
}

// Reap is ReapWith with only DryRun set.
func (s *Store) Reap(dryRun bool) (ReapResult, error) {
	return s.ReapWith(context.Background(), ReapOptions{DryRun: dryRun})
}

// ReapWith removes every key whose last completed promotion is older than
// the TTL (Options.Bounds.TTL; 0 keeps every key), and from the keys it
// keeps, stray temp files older than StaleTempAge. The last promotion is
// the time recorded in meta.db, or the transcript's mtime where there is
// no record (a legacy key). A key with no transcript is never removed.
//
// Each removal happens under the key's exclusive lock, after the age is
// checked again under that lock, so a promotion that lands meanwhile is
// never deleted; a promotion waiting for the lock finds the key gone and
// reports promote-failed, never promoted. The temp that a pending record
// names is never swept: it is that promotion's only copy. With DryRun
// nothing is removed and the result lists what would be.
//
// The result lists names in order. When ctx ends the walk early the result
// covers the names reaped so far, and ctx's error is returned with it.
func (s *Store) ReapWith(ctx context.Context, opts ReapOptions) (ReapResult, error) {
	res := ReapResult{Skipped: map[string]string{}}
	names, err := s.rootNames("")
	if err != nil {
		if fsat.IsNotExist(err) {
			return res, nil
		}
		return res, err
	}
	root, err := fsat.OpenDir(s.root)
	if err != nil {
		return res, err
	}
	defer root.Close()
	type outcome struct {
		removed bool
		swept   []string
		err     error
	}
	work := func(i int) outcome {
		if !ValidKey(names[i]) {
			return outcome{err: errNotAKey}
		}
		removed, swept, err := s.reapEntry(root, names[i], opts.DryRun)
		return outcome{removed, swept, err}
	}
	done := 0
	deliver := func(o outcome) error {
		name := names[done]
		done++
		for _, n := range o.swept {
			res.Swept = append(res.Swept, name+"/"+n)
		}
		switch {
		case o.err != nil:
			res.Skipped[name] = o.err.Error()
			if o.err != errNotAKey && !errors.Is(o.err, fsat.ErrNotDir) && !fsat.IsNotExist(o.err) {
				res.Failed = append(res.Failed, name)
			}
			if o.err != errNotAKey {
				s.opts.Logger.Warn().Str("key", name).Err(o.err).Msg("session_reaper_skipped")
			}
		case o.removed:
			res.Removed = append(res.Removed, name)
			if !opts.DryRun {
				s.opts.Logger.Info().Str("key", name).Msg("reaped_session")
			}
		default:
			res.Kept++
		}
		if opts.Progress != nil {
			opts.Progress(done, len(names))
		}
		return nil
	}
	_, err = walk.Ordered(ctx, len(names), walk.Workers(opts.Workers), work, deliver)
	return res, err
}

var errNotAKey = errors.New("not a key")

// reapEntry removes key if it has expired, else sweeps its stray temps.
func (s *Store) reapEntry(root *os.File, key string, dryRun bool) (removed bool, swept []string, err error) {
	if ttl := s.opts.Bounds.TTL; ttl > 0 {
		if removed, err = s.reapKey(root, key, ttl, dryRun); removed || err != nil {
			return removed, nil, err
		}
	}
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return false, nil, err
	}
	defer kd.Close()
	swept, err = s.sweepStaleTemps(kd, s.opts.Now().Add(-StaleTempAge), dryRun)
	if err != nil {
		err = fmt.Errorf("sweep stray temps: %w", err)
	}
	return false, swept, err
}

func (s *Store) reapKey(root *os.File, key string, ttl time.Duration, dryRun bool) (bool, error) {
	kd, err := fsat.OpenDirAt(root, key)
	if err != nil {
		return false, err
	}
	defer kd.Close()
	st, err := fsat.LstatAt(kd, TranscriptName)
	noTranscript := fsat.IsNotExist(err)
	if err != nil && !noTranscript {
		return false, err
	}
	now := s.opts.Now()
	_, err = fsat.LstatAt(kd, db.FileName)
	hadDB := err == nil
	// A key with no transcript is never removed, unless its record says
	// it had one: then an earlier removal was interrupted after the
	// transcript went, and this one finishes it.
	if noTranscript && !hadDB {
		return false, nil
	}
	// A first look without the exclusive lock, so that the many fresh keys
	// of a walk are never write-locked: the record under the shared lock,
	// or for a legacy key its transcript's mtime, its only clock. The mtime
	// is no filter for a db key: a copy or a restore from backup makes it
	// recent while the record keeps the promotion time, and dump would call
	// expired what reap never removed.
	if hadDB {
		d, sc, err := db.OpenSidecars(kd, s.dbOptions(), false)
		if err != nil {
			return false, err
		}
		d.Close()
		last, err := lastPromotion(kd, sc)
		if err != nil || !expired(last, now, ttl) {
			return false, err
		}
	} else if noTranscript || !expired(time.Unix(st.Mtim.Unix()), now, ttl) {
		return false, nil
	}
	if dryRun {
		return true, nil
	}

	// The lock: a legacy key gets a meta.db for it, removed again below if
	// the key stays.
	d, sc, err := db.OpenSidecars(kd, s.dbOptions(), true)
	if err != nil {
		return false, err
	}
	defer d.Close()
	last, err := lastPromotion(kd, sc)
	if err != nil || !expired(last, s.opts.Now(), ttl) {
		if !hadDB {
			fsat.UnlinkAt(kd, db.FileName)
		}
		return false, err
	}
	if err := s.fault(faults.ReapBeforeRemove); err != nil {
		return false, err
	}
	return true, s.removeKeyDir(root, kd, key)
}

// lastPromotion is the recorded time of the key's last promotion, or the
// transcript's mtime where there is no record.
func lastPromotion(kd *os.File, sc db.Sidecars) (time.Time, error) {
	if sc.Transcript != nil {
		return time.Unix(0, sc.Transcript.PromotedAt), nil
	}
	st, err := fsat.LstatAt(kd, TranscriptName)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(st.Mtim.Unix()), nil
}

func expired(last, now time.Time, ttl time.Duration) bool { return now.Sub(last) > ttl }

// removeKeyDir removes the transcript first, so that from the first step
// on the key can only cold-start, then every other entry, meta.db last
// (its lock is held through the removal, and its record lets the next
// reap finish an interrupted one), then the dir itself. It never descends:
// a subdirectory in a key dir is not the store's and stops the removal.
func (s *Store) removeKeyDir(root, kd *os.File, key string) error {
	if err := fsat.UnlinkAt(kd, TranscriptName); err != nil && !fsat.IsNotExist(err) {
		return fmt.Errorf("reap %s: %w", key, err)
	}
	if err := s.fault(faults.ReapAfterTranscript); err != nil {
		return err
	}
	names, err := fsat.ReadDirNames(kd)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if n == db.FileName {
			continue
		}
		if err := fsat.UnlinkAt(kd, n); err != nil {
			errs = append(errs, err)
		}
	}
	if err := fsat.UnlinkAt(kd, db.FileName); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, err)
	}
	if err := fsat.RmdirAt(root, key); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("reap %s: %w", key, errors.Join(errs...))
	}
	return nil
}
