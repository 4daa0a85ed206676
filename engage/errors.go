package engage

import (
	"errors"

	"sessdb/store/transcript"
)

// These errors can be returned when reading a transcript (Read, ReadFile).
// A file that is not a pi transcript at all is a *transcript.InvalidError
// instead, which names the reason.
var (
	// ErrCycle is returned, wrapped with the entry id, when following
	// parentId from the leaf comes back to an entry already walked. pi would
	// loop forever on such a file. It is transcript.ErrCycle, so either name
	// matches with errors.Is.
	ErrCycle = transcript.ErrCycle

	// ErrNotRegular is returned by ReadFile, wrapped with the path, for a
	// path that is not a regular file (a FIFO, a device, a directory): it
	// is refused before it is read.
	ErrNotRegular = errors.New("not a regular file")

	// ErrChanged is returned by ReadFile, wrapped with the path, when the
	// file was rewritten while it was read (it shrank, or its first line
	// changed), as pi rewrites a file it migrates or whose header it finds
	// invalid: what was read is neither the old file nor the new one. Read
	// it again. A file appended to meanwhile, as pi writes, is not changed:
	// it is read as far as the read got.
	ErrChanged = errors.New("rewritten while it was read (pi rewrites a file it migrates); read it again")
)

// These errors can be returned when replaying a transcript
// (Transcript.Replay).
var (
	// ErrOptions is returned when the options describe no threshold or no
	// ratio: a window not above the reserve, a negative reserve, a window
	// above MaxWindow, or a ratio outside (0, 1]. The zero Options is refused with it rather than read
	// as a window of 0. It is wrapped with the option at fault and its value.
	ErrOptions = errors.New("invalid replay options")
)
