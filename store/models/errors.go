package models

import (
	"errors"
	"fmt"
)

// These errors can be returned by Load (all three) and Parse (ErrMalformed),
// always inside an *Error that names the file and, where it can, the place
// in it. A file that cannot be opened is Load's *fs.PathError instead.
var (
	// ErrMalformed is returned, inside an *Error, when a models file is not
	// one pi would load: not JSON, not of the shape pi's schema requires, or
	// refused by pi's own checks. pi then reports the error and goes on with
	// its built-in models alone (Builtin).
	ErrMalformed = errors.New("malformed models file")
	// ErrTooLarge is returned, inside an *Error, when a models file is
	// larger than MaxFileBytes.
	ErrTooLarge = errors.New("models file larger than MaxFileBytes")
	// ErrNotRegular is returned, inside an *Error, when the path names
	// something other than a regular file (a directory, a FIFO, a device).
	ErrNotRegular = errors.New("models file is not a regular file")
)

// Error describes a models file that cannot be used, and where in it the
// problem lies. Its message quotes names from the file only shortened and
// escaped, and never a value.
type Error struct {
	File string // the path or name the file was given by
	// Where is the place in the file: a JSON path such as
	// providers["mock"].models[0].contextWindow, or "offset 123" for a
	// syntax error; "" for the whole file.
	Where   string
	Problem string // what is wrong there, "" when Err says it all
	Err     error  // ErrMalformed, ErrTooLarge, ErrNotRegular, or a read error
}

// Error returns "models <file>: <where>: <problem> (<err>)", leaving out
// the parts that are empty.
func (e *Error) Error() string {
	msg := "models " + e.File + ": "
	if e.Where != "" {
		msg += e.Where + ": "
	}
	if e.Problem != "" {
		return fmt.Sprintf("%s%s (%v)", msg, e.Problem, e.Err)
	}
	return msg + e.Err.Error()
}

// Unwrap returns Err, so that errors.Is(err, ErrMalformed) and its kin hold
// and a read error's own type stays reachable through errors.As.
func (e *Error) Unwrap() error { return e.Err }
