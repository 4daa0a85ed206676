package access

import (
	"os/user"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func stat(uid, gid, mode uint32) *unix.Stat_t {
	var st unix.Stat_t
	st.Uid, st.Gid = uid, gid
	setMode(&st.Mode, unix.S_IFREG|mode)
	return &st
}

// setMode sets a Stat_t's Mode, 32 bits on Linux, 16 on macOS and FreeBSD.
func setMode[T ~uint16 | ~uint32](m *T, v uint32) { *m = T(v) }

// Judge asks of an entry what the root's owner needs: its owner's bits
// when the entry is the owner's own, the group's or others' when it is
// root's; nothing of a third user's (its own to judge), nothing when the
// owner is root (root may use anything), and, the owner not known,
// nothing of an entry root owns.
func TestJudge(t *testing.T) {
	// A worker with no passwd entry (a container's uid): the root's
	// group is taken for its own.
	w := unknownUID(t)
	worker := &Owner{UID: w, GID: 1000}
	for _, c := range []struct {
		name             string
		st               *unix.Stat_t
		owner            *Owner
		modeLacks, other uint32
	}{
		{"the owner's, whole", stat(w, 1000, 0o600), worker, 0, 0},
		{"the owner's, no write", stat(w, 1000, 0o400), worker, 0o200, 0},
		{"root's, none for others", stat(0, 0, 0o600), worker, 0, 0o600},
		{"root's, readable by others", stat(0, 0, 0o604), worker, 0, 0o200},
		{"root's, the root's group may", stat(0, 1000, 0o660), worker, 0, 0},
		{"in the root's group the others' bits do not count", stat(0, 1000, 0o606), worker, 0, 0o600},
		{"in a root root owns", stat(w, 1000, 0o000), &Owner{}, 0, 0},
		{"a third user's, none for others", stat(w+1, 1000, 0o600), worker, 0, 0},
		{"owner unknown, the entry's own bits", stat(w, 1000, 0o500), nil, 0o200, 0},
		{"owner unknown, root's entry", stat(0, 0, 0o000), nil, 0, 0},
	} {
		if m, o := Judge(c.st, 0o600, c.owner); m != c.modeLacks || o != c.other {
			t.Errorf("%s: Judge = %04o, %04o; want %04o, %04o", c.name, m, o, c.modeLacks, c.other)
		}
	}
}

// A user the system knows is in the groups its user database gives, not
// in the root's group for that: nobody in a root of group 5000, which it
// is not in, may not use a file of that group's bits.
func TestAKnownOwnersGroupsAreLookedUp(t *testing.T) {
	u, err := user.LookupId("65534")
	if err != nil {
		t.Skipf("no passwd entry for uid 65534 here (%v)", err)
	}
	if ids, _ := u.GroupIds(); slices.Contains(ids, "5000") {
		t.Skip("uid 65534 is in group 5000 here")
	}
	if _, o := Judge(stat(0, 5000, 0o660), 0o600, &Owner{UID: 65534, GID: 5000}); o != 0o600 {
		t.Errorf("a group the owner is not in, the root's: lacks %04o, want 0600", o)
	}
}

// unknownUID returns a uid the user database does not know.
func unknownUID(t *testing.T) uint32 {
	t.Helper()
	for uid := uint32(54321); uid < 54421; uid++ {
		if _, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err != nil {
			return uid
		}
	}
	t.Skip("every uid from 54321 to 54420 has a passwd entry here")
	return 0
}

// Verbs names bits as what they let one do, a directory's x as enter.
func TestVerbs(t *testing.T) {
	for _, c := range []struct {
		bits uint32
		dir  bool
		want string
	}{
		{0o400, false, "read"},
		{0o600, false, "read or write"},
		{0o700, true, "read, write or enter"},
		{0o100, false, "execute"},
	} {
		if got := Verbs(c.bits, c.dir); got != c.want {
			t.Errorf("Verbs(%04o, %v) = %q, want %q", c.bits, c.dir, got, c.want)
		}
	}
}
