package shared

import (
	"time"

	"sessdb/internal/fsat"
)

// ServerNow reads the clock that stamps the files in dir: it sets dir's
// modification time to "now" the way touch(1) does, which a network
// filesystem's client asks the server to do by its own clock (NFS's
// SET_TO_SERVER_TIME), and reads that time back. A file's age comes from
// its mtime, which the server stamped: judged by this host's clock alone,
// a reaper ahead of the server's clock would take a file just written for
// an old one. dir's times change and nothing else; the time is set on the
// descriptor of dir opened, as every command opens it (a link at the
// configured path is the operator's, and followed). Where files
// are stamped by their writers' clocks (a CephFS client, a local disk),
// it reads this host's.
func ServerNow(dir string) (time.Time, error) {
	d, err := fsat.OpenDir(dir)
	if err != nil {
		return time.Time{}, DirErrOr(dir, err)
	}
	defer d.Close()
	if err := fsat.Touch(d); err != nil {
		return time.Time{}, err
	}
	st, err := fsat.Fstat(d)
	if err != nil {
		return time.Time{}, DirErrOr(dir, err)
	}
	return fsat.ModTime(&st), nil
}
