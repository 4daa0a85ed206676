package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/dirflock"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// The job dir is foreign ground: the worker made it, and the job's
// container can write anything under <job-dir>/session/ (links, FIFOs,
// devices, hard links to files it can see). Every name under it is reached
// relative to a descriptor of the job dir, never through a link, and
// nothing is ever opened for writing that the store did not just create.

// openJobDir opens the job dir, making it (0700, its last component only)
// when it does not exist yet: the worker names it, so its path is trusted
// as the sessions root's is, and a missing parent is still an error.
func openJobDir(path string) (*os.File, error) {
	jd, err := fsat.OpenDir(path)
	if fsat.IsNotExist(err) {
		if _, merr := fsat.Mkdir(path, 0o700); merr != nil {
			return nil, merr
		}
		jd, err = fsat.OpenDir(path)
	}
	return jd, err
}

// lockStaging takes the exclusive flock of sd, a job dir's staged dir,
// without waiting, for a resolve's staging or a promote of the staged
// file, from its open to its end (ErrJobDirBusy where another holds it);
// fsat.CloseFlocked lets go of it (closing alone would not, while a child
// forked meanwhile holds a copy of sd). The staged dir's, not the job
// dir's: a worker may hold the job dir's own flock around the command
// (flock(1) $JOB). A file system without flock (some network ones answer ENOLCK or
// EOPNOTSUPP) goes unlocked, as before the lock: it guards a worker's
// misuse, not the store's data. The tests play such a file system
// through internal/dirflock, as they play it for a key dir's flock.
//
// Only an exclusive holder makes it busy. ReadTicket, finding no ticket,
// asks whether the lock is held (stagingNow) with a shared flock it lets
// go of at once: a resolve whose flock came in that instant was refused
// for a look, not for a resolve or promote under way. A flock refused
// while a shared one is to be had is tried again, until
// stagingLookWaitMost has passed.
func lockStaging(sd *os.File) error {
	if take, _ := dirflock.Flock(); !take {
		return nil
	}
	var until time.Time
	for {
		if err := fsat.Flock(sd, unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
			return nil
		}
		// An exclusive holder refuses the shared flock too.
		if fsat.Flock(sd, unix.LOCK_SH|unix.LOCK_NB) != nil {
			return ErrJobDirBusy
		}
		fsat.Flock(sd, unix.LOCK_UN)
		if until.IsZero() {
			until = time.Now().Add(stagingLookWaitMost)
		} else if time.Now().After(until) {
			return ErrJobDirBusy
		}
		if testHookStagingLooked != nil {
			testHookStagingLooked()
		}
		time.Sleep(time.Millisecond)
	}
}

// stagingLookWaitMost bounds how long lockStaging waits out shared
// flocks of its staged dir (a look's, held for a few system calls).
const stagingLookWaitMost = time.Second

// testHookStagingLooked is called, when set, where lockStaging found its
// staged dir's flock held only shared, before it tries again.
var testHookStagingLooked func()

// stagedDir makes <jobDir>/session (0700, a real directory, never a link)
// and returns it opened.
func stagedDir(jd *os.File) (*os.File, error) {
	if err := fsat.MkdirAt(jd, StagedDirName, 0o700); err != nil {
		return nil, err
	}
	dir, err := fsat.OpenDirAt(jd, StagedDirName)
	if err != nil {
		return nil, err
	}
	// The dir may have been there already, with any mode.
	if err := unix.Fchmod(int(dir.Fd()), 0o700); err != nil {
		dir.Close()
		return nil, &os.PathError{Op: "chmod", Path: dir.Name(), Err: err}
	}
	return dir, nil
}

// createStaged creates dir/current.jsonl afresh, empty, 0600: a cold start
// unless the copy fills it. Whatever regular file or link was at the name
// is unlinked first, never opened: truncating a name that is a hard link
// to another key's transcript would empty that transcript. A directory, a
// FIFO, a device or a socket there is ErrStagedNotFile.
func createStaged(dir *os.File) (*os.File, error) {
	st, err := fsat.LstatAt(dir, TranscriptName)
	switch {
	case fsat.IsNotExist(err):
	case err != nil:
		return nil, err
	case fsat.IsRegular(&st) || st.Mode&unix.S_IFMT == unix.S_IFLNK:
		if err := fsat.UnlinkAt(dir, TranscriptName); err != nil && !fsat.IsNotExist(err) {
			return nil, err
		}
	default:
		return nil, &os.PathError{Op: "stage", Path: fsat.Join(dir, TranscriptName), Err: ErrStagedNotFile}
	}
	if err := faults.At(faults.StagedAfterUnlink); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	// O_EXCL: if anything appeared at the name since the unlink, the
	// create fails instead of opening it.
	f, err := fsat.OpenAt(dir, TranscriptName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	return f, nil
}

// jobDirApart refuses (ErrJobDirInStore) a job dir that is dir, the
// store's directory, that lies inside one of its keys' dirs (a key's own,
// or one a reap or check --quarantine moved aside), or that holds it.
// The worker hands <job-dir>/session to the job's container and removes
// the job dir when the job ends: a job dir that is or holds the store
// would hand the container the store (a root named "session" under the
// job dir is that dir) or lose it to the clean-up, and one inside a key
// dir would leave in that key names no writer made, for which reap then
// keeps the key for ever. A job dir under dir but outside every key is a
// name the store leaves alone (check's not-a-key).
//
// Both paths are compared absolute, the links of the part of each that
// exists resolved: the check guards against a worker's configuration,
// which names both, not against the container, which reaches nothing
// above <job-dir>/session. Two names of one directory that no link
// makes (a bind mount, a case-insensitive file system) are not seen. Two
// paths that cannot be compared (either's links lead past PATH_MAX, a
// relative one's working directory is gone, a part cannot be looked at)
// are refused too: the kernel may still take them, and where they lead
// is not known.
func jobDirApart(jobDir, dir string) error {
	job, jerr := fsat.ResolvedPath(jobDir)
	storeDir, serr := fsat.ResolvedPath(dir)
	// Each names the path that could not be resolved: a root a worker
	// mistyped is no fault of its job dir's.
	if jerr != nil {
		return fmt.Errorf("%w: %s cannot be told apart from the store's directory %s: where the job dir leads is not known (%w)", ErrJobDirInStore, jobDir, dir, jerr)
	}
	if serr != nil {
		return fmt.Errorf("%w: %s cannot be told apart from the store's directory %s: where the store's directory leads is not known (%w)", ErrJobDirInStore, jobDir, dir, serr)
	}
	if rel, ok := within(job, storeDir); ok {
		first, _, _ := strings.Cut(rel, string(filepath.Separator))
		switch {
		case rel == ".":
			return fmt.Errorf("%w: %s is the store's directory", ErrJobDirInStore, jobDir)
		case keyDirName(first):
			return fmt.Errorf("%w: %s is inside %s, a key's dir in the store's directory %s", ErrJobDirInStore, jobDir, first, storeDir)
		}
		return nil
	}
	if _, ok := within(storeDir, job); ok {
		return fmt.Errorf("%w: %s holds the store's directory %s", ErrJobDirInStore, jobDir, storeDir)
	}
	return nil
}

// keyDirName reports whether name, under the store's directory, is a
// key's dir: the key's own, or one a reap or check --quarantine moved
// aside (which a reap removes, or an operator restores).
func keyDirName(name string) bool { return ValidKey(name) || isOwned(name) }

// within reports whether path is base or below it, and path relative to
// base. Both are absolute and clean.
func within(path, base string) (string, bool) {
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}
