package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	slegacy "sessdb/store/legacy"
)

// tmpSeq is the legacy module-global tmpSeq: with the pid it makes the
// transcript temp's name unique per writer.
var tmpSeq atomic.Uint64

// legacyPromote is the legacy promoteSession (§3.2) of the staged transcript at
// stagedPath into keyDir. Its error is what the legacy store reported as
// promote-failed.
func legacyPromote(keyDir, stagedPath string, sess Session, req Request, o legacyOptions) (Result, error) {
	// Step 2: inspectFile, lstat only; nothing is touched on a refusal.
	st, err := os.Lstat(stagedPath)
	switch {
	case err != nil || st.Size() == 0 && st.Mode().IsRegular():
		return Result{Reason: gates.Absent}, nil
	case !st.Mode().IsRegular():
		return Result{Reason: gates.NotARegularFile}, nil
	case o.Bounds.MaxBytes > 0 && st.Size() > o.Bounds.MaxBytes:
		return Result{Reason: gates.TooLarge}, nil
	}
	// Step 3: mkdir -p.
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return Result{Reason: gates.PromoteFailed}, err
	}
	// Step 4: the O_EXCL lock file.
	lock := filepath.Join(keyDir, lockName)
	lfd, locked, err := takeLock(lock, o.now())
	if err != nil {
		return Result{Reason: gates.PromoteFailed}, err
	}
	if locked {
		return Result{Reason: gates.Locked}, nil
	}
	res, err := promoteLocked(keyDir, stagedPath, sess, req, o)
	// Step 5.5: close, then unlink the lock by path.
	unix.Close(lfd)
	if uerr := unix.Unlink(lock); err == nil && uerr != nil {
		res.SidecarErrors = append(res.SidecarErrors, pathErr("unlink", lock, uerr))
	}
	if err != nil {
		return Result{Reason: gates.PromoteFailed}, err
	}
	return res, nil
}

// takeLock is the legacy takeLock: at most two attempts at an O_EXCL
// create, a lock older than lockStale swept in between.
func takeLock(lock string, now time.Time) (fd int, locked bool, err error) {
	for attempt := 0; attempt < 2; attempt++ {
		fd, err = unix.Open(lock, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
		if err == nil {
			return fd, false, nil
		}
		if err != unix.EEXIST {
			return -1, false, pathErr("open", lock, err)
		}
		var st unix.Stat_t
		if unix.Lstat(lock, &st) != nil {
			continue // released meanwhile
		}
		if now.Sub(time.Unix(st.Mtim.Unix())) <= lockStale {
			return -1, true, nil
		}
		unix.Unlink(lock) // a rival may have swept it already
	}
	return -1, true, nil
}

func promoteLocked(keyDir, stagedPath string, sess Session, req Request, o legacyOptions) (Result, error) {
	// Step 5.1: the per-writer temp, unlinked first because copyFileSync
	// follows a link at the destination.
	tmp := filepath.Join(keyDir, fmt.Sprintf("%s.%d.%d%s", transcriptName, os.Getpid(), tmpSeq.Add(1)-1, incoming))
	unix.Unlink(tmp)
	n, err := legacyCopyFile(stagedPath, tmp, o.Durable)
	if err != nil {
		return Result{}, err
	}
	// Step 5.2: the (pending) sentinel, fatal.
	if err := writeSidecar(keyDir, slegacy.VenueName, slegacy.PendingVenue, o.Durable); err != nil {
		return Result{}, err
	}
	// Step 5.3: the swap.
	canonical := filepath.Join(keyDir, transcriptName)
	if err := rename(tmp, canonical); err != nil {
		return Result{}, err
	}
	res := Result{Promoted: true, Reason: gates.Promoted, Bytes: n}
	failed := func(err error) {
		if err != nil {
			res.SidecarErrors = append(res.SidecarErrors, err)
		}
	}
	// Step 5.4: the post-swap sidecars, in order, errors swallowed.
	if sess.Venue != "" {
		failed(writeSidecar(keyDir, slegacy.VenueName, sess.Venue, o.Durable))
	}
	failed(writeSidecar(keyDir, slegacy.PiVersionName, req.PiVersion, o.Durable))
	var chain uint64
	if sess.Resume {
		chain = readResumeChain(keyDir) + 1
	}
	failed(writeSidecar(keyDir, slegacy.ResumeChainName, fmt.Sprint(chain), o.Durable))
	switch {
	case !sess.Resume:
		if err := unix.Unlink(filepath.Join(keyDir, slegacy.ContextName)); err != nil && err != unix.ENOENT {
			failed(pathErr("unlink", filepath.Join(keyDir, slegacy.ContextName), err))
		}
	case req.Context != nil:
		v := fmt.Sprintf("%d %d", req.Context.Tokens, req.Context.Window)
		if sess.Model != "" {
			v += " " + sess.Model
		}
		failed(writeSidecar(keyDir, slegacy.ContextName, v, o.Durable))
	}
	if o.Durable {
		// One directory fsync makes every rename above durable.
		if err := syncPath(keyDir); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// writeSidecar is the legacy link-safe replace: unlink <name>.incoming,
// write it, rename it over name.
func writeSidecar(keyDir, name, value string, durable bool) error {
	tmp := filepath.Join(keyDir, name+incoming)
	unix.Unlink(tmp)
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return pathErr("open", tmp, err)
	}
	if _, err := unix.Write(fd, []byte(value)); err != nil {
		unix.Close(fd)
		return pathErr("write", tmp, err)
	}
	if durable {
		if err := unix.Fsync(fd); err != nil {
			unix.Close(fd)
			return pathErr("fsync", tmp, err)
		}
	}
	if err := unix.Close(fd); err != nil {
		return pathErr("close", tmp, err)
	}
	return rename(tmp, filepath.Join(keyDir, name))
}

// legacyCopyFile is Node's copyFileSync as libuv runs it on Linux: open the
// source, fstat it, open the destination, fstat it, truncate it, chmod it
// to the source's mode, copy_file_range (copyRange), close both.
func legacyCopyFile(src, dst string, durable bool) (int64, error) {
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, pathErr("open", src, err)
	}
	defer unix.Close(in)
	var sst, dst0 unix.Stat_t
	if err := unix.Fstat(in, &sst); err != nil {
		return 0, pathErr("fstat", src, err)
	}
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, uint32(sst.Mode&0o7777))
	if err != nil {
		return 0, pathErr("open", dst, err)
	}
	defer unix.Close(out)
	if err := unix.Fstat(out, &dst0); err != nil {
		return 0, pathErr("fstat", dst, err)
	}
	if err := unix.Ftruncate(out, 0); err != nil {
		return 0, pathErr("truncate", dst, err)
	}
	if err := unix.Fchmod(out, uint32(sst.Mode&0o7777)); err != nil {
		return 0, pathErr("chmod", dst, err)
	}
	n, err := copyRange(in, out, sst.Size)
	if err != nil {
		return n, pathErr("copy", dst, err)
	}
	if durable {
		if err := unix.Fsync(out); err != nil {
			return n, pathErr("fsync", dst, err)
		}
	}
	return n, nil
}

func rename(from, to string) error {
	if err := unix.Rename(from, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

func syncPath(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return pathErr("open", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return pathErr("fsync", dir, err)
	}
	return nil
}
