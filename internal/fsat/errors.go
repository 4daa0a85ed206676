package fsat

import "errors"

// ErrNotDir is returned by OpenDirAt when a name that must be a real
// directory is a link or something else.
var ErrNotDir = errors.New("not a real directory")

// ErrNotRegular is returned by OpenRegularAt and ReadSmallFile when the
// name is a link, a FIFO, a directory, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned by ReadSmallFile when the file holds more than
// the bytes allowed.
var ErrTooLarge = errors.New("file too large")

// ErrNotTheOne is returned by AddOwnerBitsAt (and Mkdir's chmod) when
// what is at the name is not what it may change: not a directory or a
// regular file, or not the owner's it was asked for.
var ErrNotTheOne = errors.New("not the owner's directory or file")

// ErrModeKept is returned, in a chmod's PathError, where a chmod this
// package made to give an owner's bits was answered with success and the
// mode, looked at again, still lacks them: the file system keeps its
// modes (vfat mounted quiet, CIFS without unix extensions), a filter
// answered for it, or the file's owner changed it again in between.
var ErrModeKept = errors.New("its mode lacks the bits after the chmod: the file system kept it, or it was changed again since")
