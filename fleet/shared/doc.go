// Package shared keeps transcripts as write-once files in a directory that
// every worker of a fleet mounts (NFS, EFS or CephFS in production, a local
// folder in tests), for the metadata in etcd to name.
//
// # Layout
//
//	<transcripts-dir>/
//	  .sessdb-fleet                0600; the dir's mark: the ID of the one fleet whose
//	                                 transcripts it holds (WriteMark, ReadMark)
//	  .sessdb-fleet.tmp-<random>   a mark being written (or one a crash cut short)
//	  <key>/                       0700; key = 32 lowercase hex
//	    <gen>-<random>.jsonl       0600; a generation, written once, never renamed over;
//	                                 gen and random 16 hex digits each
//	    .tmp-<random>              a Write in flight (or one that died)
//
// A name is what the record stores: "<key>/<gen>-<random>.jsonl", relative
// to the transcripts dir. Names are random, so two promotions of one
// generation never collide: the one whose record commits wins, the other's
// file is an orphan.
//
// # Guarantees
//
// Write returns once the file is whole, fsynced and under its final name,
// with the directory fsynced; the name never replaced an existing one.
// Open and Remove take only names of the shapes above, check them before
// they touch a path, and never follow a link below the transcripts dir;
// Open refuses anything but a regular file. ListOrphans reports only
// files this package wrote. Write and ListOrphans stop at the end of
// their ctx, with its error; a nil one is context.Background(), as the
// fleet's walks take it, and one that breaks Go's contract is held to it
// (callerctx.Of: a Done closed while Err is nil is context.Canceled, a
// panic in Err or Done an error that wraps it). The functions are safe
// for concurrent use, also from many hosts.
//
// # Caveat
//
// What the shared filesystem promises decides what these guarantees are
// worth. NFS gives close-to-open consistency: a file closed by one client
// is read whole by another that opens it afterwards, and because every
// name is new, no client can hold a stale cached lookup of it. Rename and
// link are atomic on the server within one directory (each key's files
// stay in its directory). fsync of a file sends COMMIT: the data is on the
// server's stable storage when it returns; fsync of a directory does
// nothing on an NFS client, and the server commits creates, links and
// renames before it answers, unless the export is "async", which can lose
// acknowledged writes in a server crash and must not be used. The NFS
// client has no RENAME_NOREPLACE; Write then links and unlinks. A step
// whose reply was lost is sent again, and a server that no longer
// remembers it answers the retry with an error though the step landed (a
// LINK's EEXIST, a REMOVE's or a RENAME's ENOENT): Write takes that as
// done when the final name is the temp's own inode. A file removed by
// one client while another reads it is not kept alive for the reader as on
// a local disk: the read fails (ESTALE), the copy does not verify, and the
// resolve is a named cold start, never a torn copy. Modification times
// come from the server's clock, which may differ from the reaper's:
// ServerNow reads it. Every worker must write as the same
// user: files are 0600.
package shared
