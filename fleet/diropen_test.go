package fleet

import (
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/faults"
)

// Open tells a transcripts dir the configuration got wrong (missing, not
// a directory, not searchable: exit 2, as a mistyped path is) from one
// whose storage is failing, which is shared.ErrDirUnavailable whatever
// errno the mount answers with: ESTALE and EIO (NFS), ENOTCONN (a FUSE
// mount, ceph-fuse or sshfs, whose daemon died), ETIMEDOUT. Before:
// only ESTALE and EIO were, and a dead FUSE mount was "no transcripts
// dir", a configuration error (exit 2) for every command, where its
// resolves must be the named cold start store-unavailable.
func TestOpenTellsAFailingMountFromAWrongPath(t *testing.T) {
	defer faults.Set(nil)
	for _, c := range []struct {
		errno       syscall.Errno
		unavailable bool
	}{
		{unix.ESTALE, true}, {unix.EIO, true}, {unix.ENOTCONN, true}, {unix.ETIMEDOUT, true},
		{unix.ENOENT, false}, {unix.ENOTDIR, false}, {unix.EACCES, false}, {unix.ELOOP, false},
	} {
		faults.Set(func(p faults.Point) error {
			if p == faults.SharedDirStat {
				return c.errno
			}
			return nil
		})
		_, err := Open(Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}}, TranscriptsDir: t.TempDir()})
		if got := errors.Is(err, shared.ErrDirUnavailable); got != c.unavailable || got == errors.Is(err, ErrNoTranscriptsDir) || !errors.Is(err, c.errno) {
			t.Errorf("%v: Open = %v; want unavailable %v (else no transcripts dir), with the errno", c.errno, err, c.unavailable)
		}
	}
}
