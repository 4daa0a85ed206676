package legacy

import "errors"

// The readers return no errors (but Observe, ObserveVenue and
// ObserveResumeChain, for a read that failed for want of the process's own
// resources, and ObserveVenue for a read that failed on the file): a
// read-path miss is a cold start with a reason, not a fault. The sentinel below only
// tells readStamp why a name held no value, and never leaves the package.
var (
	// errName is returned by readSidecar when the name it is given is not a
	// single path component ("", ".", "..", a '/' or a NUL in it), or the
	// directory is nil: nothing is opened for such a name, and readStamp
	// reports it unreadable, not absent.
	errName = errors.New("not a single path component")
)
