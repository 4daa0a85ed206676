package shared

import (
	"context"
	"errors"
	"sort"
	"time"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/callerctx"
	"sessdb/internal/fsat"
)

// Listing is what ListOrphans found in its one listing of the
// transcripts dir and of each key's directory in it.
type Listing struct {
	// Orphans are the names under the dir that no record needs (see
	// ListOrphans), sorted, each one Remove takes.
	Orphans []string
	// MarkTemps are the temps of the dir's mark (IsMarkTemp), regular
	// files whose modification time is before ListOrphans' olderThan,
	// sorted: no key's, so no record is asked about them, and
	// RemoveMarkTemp, not Remove, takes them.
	MarkTemps []string
	// Unreadable are the key directories that could not be opened or
	// listed, each with why (nil: none).
	Unreadable map[string]error
	// Names is every name in the dir itself, as listed, sorted: what a
	// check looks at beside the records (a name that is no key, a mark's
	// temp, a key's directory with no record).
	Names []string
}

// ListOrphans lists dir, the transcripts dir, once, and returns what the
// listing found (Listing). Its orphans are the names under dir that no
// record needs: every transcript and every temp (a write in flight, or one
// that died), and every key's directory that holds nothing ("<key>/"),
// whose modification time is before olderThan and for which
// referenced(key, name, mtime) is false. Entries that are none of these
// (foreign files, links, directories that are not keys) are left out:
// reap never touches what it did not write. Key directories are listed
// without following links. A key's directory that cannot be opened or
// listed (a permission, an I/O error) is left out too, in Unreadable with
// why: one such directory must not keep every other key's orphans from
// being found. A key's directory, or a file in it, found gone has dir
// judged (DirErr): dir itself gone or stale stops the listing with
// ErrDirUnavailable, rather than taking every key or file left for gone.
// ctx is checked between key directories. A reaper or a check needs no
// second listing of dir for the mark's temps or the names that are no
// key's (on NFS, one full listing each).
//
// The modification time is when the file was written, not when it stopped
// being referenced: a generation superseded a moment ago can be old. A
// reaper must keep such a generation through the grace period itself
// (say, by the record's PromotedAt), or accept that a reader copying it
// then gets a named cold start.
func ListOrphans(ctx context.Context, dir string, referenced func(key, name string, mtime time.Time) bool, olderThan time.Time) (Listing, error) {
	ctx = callerctx.Of(ctx) // nil is context.Background()
	root, err := fsat.OpenDir(dir)
	if err != nil {
		return Listing{}, DirErrOr(dir, err)
	}
	defer root.Close()
	keys, err := sharedfs.ReadDirNames(root)
	if err != nil {
		return Listing{}, DirErrOr(dir, err)
	}
	var names, markTemps []string
	var unreadable map[string]error
	fail := func(key string, err error) {
		if unreadable == nil {
			unreadable = map[string]error{}
		}
		unreadable[key] = err
	}
	sort.Strings(keys)
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return Listing{}, err
		}
		if IsMarkTemp(key) {
			if st, err := fsat.LstatAt(root, key); err == nil && fsat.IsRegular(&st) && fsat.ModTime(&st).Before(olderThan) {
				markTemps = append(markTemps, key)
			}
			continue
		}
		if !ValidKey(key) {
			continue
		}
		kd, err := fsat.OpenDirAt(root, key)
		if err != nil && fsat.IsGone(err) {
			if err := DirErr(dir); err != nil {
				return Listing{}, err // not every key gone: the dir itself
			}
		}
		if err != nil {
			if fsat.IsGone(err) || errors.Is(err, fsat.ErrNotDir) {
				continue // gone, or a link or file named like a key: not ours
			}
			fail(key, err)
			continue
		}
		files, err := sharedfs.ReadDirNames(kd)
		if err != nil {
			kd.Close()
			if fsat.IsGone(err) {
				if err := DirErr(dir); err != nil {
					return Listing{}, err
				}
			}
			// Another host removed it since the open (ESTALE over NFS; a
			// local disk lists it empty): gone, not unreadable.
			if !fsat.IsGone(err) {
				fail(key, err)
			}
			continue
		}
		if len(files) == 0 {
			// The directory's mtime is its last entry's coming or going.
			if st, err := fsat.Fstat(kd); err == nil {
				mtime := fsat.ModTime(&st)
				if name := key + "/"; mtime.Before(olderThan) && !referenced(key, name, mtime) {
					names = append(names, name)
				}
			}
		}
		sort.Strings(files)
		goneSince := false
		for _, f := range files {
			_, isFile := parseFile(f)
			if !isFile && !isTemp(f) {
				continue
			}
			st, err := fsat.LstatAt(kd, f)
			goneSince = goneSince || fsat.IsGone(err)
			if err != nil || !fsat.IsRegular(&st) {
				continue // gone meanwhile, or not a file this package wrote
			}
			mtime := fsat.ModTime(&st)
			if !mtime.Before(olderThan) {
				continue
			}
			name := key + "/" + f
			if referenced(key, name, mtime) {
				continue
			}
			names = append(names, name)
		}
		kd.Close()
		if goneSince {
			// Removed since the listing by another host, unless the
			// dir itself is gone: then no file of it was judged.
			if err := DirErr(dir); err != nil {
				return Listing{}, err
			}
		}
	}
	return Listing{Orphans: names, MarkTemps: markTemps, Unreadable: unreadable, Names: keys}, nil
}
