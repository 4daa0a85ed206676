package legacy

import (
	"slices"
	"strings"
	"time"
)

// LockStale is the legacy LOCK_STALE_MS: a legacy lock file at most this
// old (by its mtime), or dated in the future, may belong to a live legacy
// promotion; an older one is stale.
const LockStale = time.Hour

// TempSuffix ends the name of every temp the legacy writer made.
const TempSuffix = ".incoming"

// sidecarNames are the four sidecars, in the order they are read,
// written and reported.
var sidecarNames = [...]string{PiVersionName, VenueName, ResumeChainName, ContextName}

// SidecarNames returns the four sidecars, in the order they are read,
// written and reported. A new slice each call: no caller can change
// another's list.
func SidecarNames() []string { return slices.Clone(sidecarNames[:]) }

// IsSidecar reports whether n is one of the four sidecar names.
func IsSidecar(n string) bool { return slices.Contains(sidecarNames[:], n) }

// IsTemp reports whether n is a name the legacy writer gave a temp, and
// only those (a killed legacy worker leaves them behind): the transcript's
// per-writer copy current.jsonl.<pid>.<n>.incoming (both decimal: the
// process id and a counter), the fixed current.jsonl.incoming it replaced,
// and <sidecar>.incoming. Another name ending .incoming is not the
// store's: the walks that remove legacy files (migrate, reap) leave it,
// and check reports it as a file the store does not write. This is the
// one definition migrate, check and reap go by.
func IsTemp(n string) bool {
	base, ok := strings.CutSuffix(n, TempSuffix)
	if !ok {
		return false
	}
	if base == TranscriptName || IsSidecar(base) {
		return true
	}
	rest, ok := strings.CutPrefix(base, TranscriptName+".")
	if !ok {
		return false
	}
	pid, seq, ok := strings.Cut(rest, ".")
	return ok && decimal(pid) && decimal(seq)
}

// IsName reports whether n is a file of the legacy layout besides the
// transcript: a sidecar, the lock, or a temp (IsTemp).
func IsName(n string) bool {
	return IsSidecar(n) || n == LockName || IsTemp(n)
}

// decimal reports a non-empty string of ASCII digits, as JavaScript
// formats a process id or a small counter.
func decimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
