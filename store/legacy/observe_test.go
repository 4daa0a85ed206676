// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the promise is the same there, and tested on these two.

//go:build !freebsd

package legacy

import (
	"errors"
	"syscall"
	"testing"

	"sessdb/internal/testfs"
)

// Each of the four sidecars, not read for want of a descriptor (EMFILE),
// is Observe's error, and read with descriptors is its value, as the
// Read* readers read it; ObserveVenue and ObserveResumeChain likewise
// for theirs. The key dir
// holds that sidecar alone: the others, absent, take no descriptor, so
// the starved read is that sidecar's own.
func TestObserveWithoutADescriptorIsAnError(t *testing.T) {
	for _, name := range []string{VenueName, PiVersionName, ResumeChainName, ContextName} {
		t.Run(name, func(t *testing.T) {
			k := newKeyDir(t)
			k.write(t, name, map[string]string{VenueName: "local", PiVersionName: "0.58.3", ResumeChainName: "3", ContextName: "48000 200000 a/b"}[name])
			var o Observed
			var err, verr, cerr error
			testfs.Starved(t, func() {
				o, err = Observe(k.dir)
				_, verr = ObserveVenue(k.dir)
				_, cerr = ObserveResumeChain(k.dir)
			})
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("Observe with no descriptor for %s = %+v, %v; want EMFILE", name, o, err)
			}
			if (name == VenueName) != errors.Is(verr, syscall.EMFILE) {
				t.Fatalf("ObserveVenue with no descriptor, %s present: %v", name, verr)
			}
			if (name == ResumeChainName) != errors.Is(cerr, syscall.EMFILE) {
				t.Fatalf("ObserveResumeChain with no descriptor, %s present: %v", name, cerr)
			}
			if n, err := ObserveResumeChain(k.dir); err != nil || n != ReadResumeChain(k.dir) {
				t.Fatalf("ObserveResumeChain = %d, %v; want %d as ReadResumeChain reads it", n, err, ReadResumeChain(k.dir))
			}
			o, err = Observe(k.dir)
			want := Observed{Venue: ReadVenue(k.dir), PiVersion: ReadPiVersion(k.dir), ResumeChain: ReadResumeChain(k.dir), Context: ReadContext(k.dir)}
			if err != nil || o.Venue != want.Venue || o.PiVersion != want.PiVersion || o.ResumeChain != want.ResumeChain || (o.Context == nil) != (want.Context == nil) || o.Context != nil && *o.Context != *want.Context {
				t.Fatalf("Observe = %+v, %v; want %+v as the Read* readers read it", o, err, want)
			}
		})
	}
}
