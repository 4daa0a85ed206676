package db

import (
	"context"
	"os"
)

// OpenSidecars opens the meta.db of the key dir dir, read-write under its
// exclusive lock when write is set (creating it when absent, as
// OpenWriter does), read-only under its shared lock otherwise, and reads
// its sidecars: the step that every protocol holding a key begins with
// (a promotion, a roll-forward, a repair, a reap, a migration). dir is
// opened by the caller with O_DIRECTORY|O_NOFOLLOW. On error nothing is
// held.
func OpenSidecars(dir *os.File, opts Options, write bool) (*DB, Sidecars, error) {
	return OpenSidecarsContext(context.Background(), dir, opts, write)
}

// OpenSidecarsContext is OpenSidecars, its wait for the lock ended early
// once ctx is done (see OpenReaderContext).
func OpenSidecarsContext(ctx context.Context, dir *os.File, opts Options, write bool) (*DB, Sidecars, error) {
	d, err := open(ctx, dir, dir.Name()+"/"+FileName, opts, write)
	if err != nil {
		return nil, Sidecars{}, err
	}
	var sc Sidecars
	if err := d.View(func(tx *Tx) (err error) { sc, err = tx.Sidecars(); return err }); err != nil {
		d.Close()
		return nil, Sidecars{}, err
	}
	return d, sc, nil
}
