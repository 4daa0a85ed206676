package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
)

// ReapResult says what a Reap did. Skipped maps a name under the root to
// why it was left alone (not a key, not a directory, a fault).
type ReapResult struct {
	Removed []string          `json:"removed"`
	Kept    int               `json:"kept"`
	Skipped map[string]string `json:"skipped,omitempty"`
}

// Reap removes every key whose last completed promotion is older than the
// TTL (Options.Bounds.TTL; 0 keeps everything). The last promotion is the
// time recorded in meta.db, or the transcript's mtime where there is no
// record (a legacy key). A key with no transcript is never removed.
//
// Each removal happens under the key's exclusive lock, after the age is
// checked again under that lock, so a promotion that lands meanwhile is
// never deleted; a promotion waiting for the lock finds the key gone and
// reports promote-failed, never promoted. With dryRun nothing is removed
// and Removed lists what would be.
func (s *Store) Reap(dryRun bool) (ReapResult, error) {
	res := ReapResult{Skipped: map[string]string{}}
	ttl := s.opts.Bounds.TTL
	if ttl <= 0 {
		return res, nil
	}
	root, err := openDir(s.root)
	if err != nil {
		if isNotExist(err) {
			return res, nil
		}
		return res, err
	}
	defer root.Close()
	names, err := readDirNames(root)
	if err != nil {
		return res, err
	}
	for _, name := range names {
		if !ValidKey(name) {
			res.Skipped[name] = "not a key"
			continue
		}
		removed, err := s.reapKey(root, name, ttl, dryRun)
		switch {
		case err != nil:
			res.Skipped[name] = err.Error()
			s.opts.Logger.Warn().Str("key", name).Err(err).Msg("session_reaper_skipped")
		case removed:
			res.Removed = append(res.Removed, name)
			if !dryRun {
				s.opts.Logger.Info().Str("key", name).Msg("reaped_session")
			}
		default:
			res.Kept++
		}
	}
	return res, nil
}

func (s *Store) reapKey(root *os.File, key string, ttl time.Duration, dryRun bool) (bool, error) {
	kd, err := openDirAt(root, key)
	if err != nil {
		return false, err
	}
	defer kd.Close()
	// A cheap filter without the lock: the transcript's mtime is never
	// later than the promotion time recorded for it (the temp is written
	// before the commit), so a key this finds fresh is fresh.
	st, err := lstatAt(kd, TranscriptName)
	if err != nil {
		if isNotExist(err) {
			return false, nil
		}
		return false, err
	}
	now := s.opts.Now()
	if !expired(time.Unix(st.Mtim.Unix()), now, ttl) {
		return false, nil
	}
	_, err = lstatAt(kd, db.FileName)
	hadDB := err == nil
	if dryRun {
		if !hadDB {
			return true, nil
		}
		d, err := db.OpenReader(kd, join(kd, db.FileName), db.Options{LockTimeout: s.opts.LockTimeout})
		if err != nil {
			return false, err
		}
		defer d.Close()
		last, err := lastPromotion(kd, d)
		return err == nil && expired(last, now, ttl), err
	}

	// The lock: a legacy key gets a meta.db for it, removed again below if
	// the key stays.
	d, err := db.OpenWriter(kd, join(kd, db.FileName), db.Options{LockTimeout: s.opts.LockTimeout, Now: s.opts.Now})
	if err != nil {
		return false, err
	}
	defer d.Close()
	last, err := lastPromotion(kd, d)
	if err != nil || !expired(last, s.opts.Now(), ttl) {
		if !hadDB {
			unlinkAt(kd, db.FileName)
		}
		return false, err
	}
	if err := s.fault(FaultReapBeforeClear); err != nil {
		return false, err
	}
	return true, removeKeyDir(root, kd, key)
}

// lastPromotion is the recorded time of the key's last promotion, or the
// transcript's mtime where there is no record.
func lastPromotion(kd *os.File, d *db.DB) (time.Time, error) {
	var sc db.Sidecars
	if err := d.View(func(tx *db.Tx) (err error) { sc, err = tx.Sidecars(); return err }); err != nil {
		return time.Time{}, err
	}
	if sc.Transcript != nil {
		return time.Unix(0, sc.Transcript.PromotedAt), nil
	}
	st, err := lstatAt(kd, TranscriptName)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(st.Mtim.Unix()), nil
}

func expired(last, now time.Time, ttl time.Duration) bool { return now.Sub(last) > ttl }

// removeKeyDir removes every entry of a key dir, meta.db last (its lock is
// held through the removal), then the dir itself. It never descends: a
// subdirectory in a key dir is not the store's and stops the removal.
func removeKeyDir(root, kd *os.File, key string) error {
	names, err := readDirNames(kd)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if n == db.FileName {
			continue
		}
		if err := unlinkAt(kd, n); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unlinkAt(kd, db.FileName); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, err)
	}
	if err := rmdirAt(root, key); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("reap %s: %w", key, errors.Join(errs...))
	}
	return nil
}
