package fleet

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The "etcdctl del" a claim of an empty unmarked dir gives for a fleet
// whose own dir is lost for good (delete the fleet's ID) runs as written
// in a POSIX shell whatever the prefix: the ID's key one shell word,
// after "--" where the prefix begins with "-" (Config takes one, and one
// with a space or a "$"). Before, the key was printed bare: a shell cut
// it at its space and expanded its "$HOME", and etcdctl took "-t…" for
// an option, removing nothing.
func TestTheClaimsRemedyDeletesTheFleetIDWhateverThePrefix(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	prefix := "-t" + randHex(8) + " $HOME"
	f := newFixture(t, c, func(cfg *Config) { cfg.Prefix = prefix })
	f.prefix = prefix
	f.run(store.Key("github", "claim-remedy", "words"), "one")

	g := &fixture{t: t, c: c, prefix: prefix, dir: t.TempDir()}
	g.b = g.open()
	err := g.b.Claim(t.Context())
	if !errors.Is(err, ErrOtherFleet) {
		t.Fatalf("the claim of an empty unmarked dir of a fleet with records: %v; want ErrOtherFleet", err)
	}
	msg := err.Error()
	end := strings.Index(msg, ") and run again")
	if end < 0 {
		t.Fatalf("no remedy in %q", msg)
	}
	if got, want := etcdctlArgs(t, msg[:end]), []string{"del", prefix + "/fleet"}; !slices.Equal(got, want) {
		t.Errorf("the claim's remedy %q gives etcdctl %q; want %q", msg, got, want)
	}
}
