//go:build !linux

package store

import "testing"

// dirWatch would be an inotify watch; other systems have none that sees
// opens and reads (kqueue's EVFILT_VNODE does not), so B is checked by its
// flock and its tree only, and TestKeyDirSwapGuardSeesB says so by skipping.
type dirWatch struct{}

func watchDir(t *testing.T, dir string) *dirWatch {
	t.Helper()
	t.Logf("no inotify on this system: B is checked by its flock and its tree only")
	return nil
}

func (w *dirWatch) events() []string { return nil }

func (w *dirWatch) close() {}
