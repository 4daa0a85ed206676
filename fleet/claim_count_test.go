package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The refusal of a fleet with no record on an unmarked dir counts its
// key dirs: one is "holds 1 key dir (KEY)", as migrate --to etcd's first
// run on a slipped prefix meets it, not "holds 1 key dirs (KEY among
// them)"; two are "holds 2 key dirs (the least among them)".
func TestAnUnmarkedDirOfOneKeyDirIsCountedInTheSingular(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a := newFixture(t, c)
	first := store.Key("github", "unmarked", "one")
	a.run(first, "a's")
	if err := os.Remove(filepath.Join(a.dir, shared.MarkName)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(t).Delete(t.Context(), a.b.meta.FleetIDKey()); err != nil {
		t.Fatal(err)
	}
	b := a.otherFleet(c, strings.TrimPrefix(a.prefix, "/"))
	err := b.b.Claim(t.Context())
	if want := " holds 1 key dir (" + first + ") and no mark"; !errors.Is(err, ErrOtherFleet) || !strings.Contains(err.Error(), want) {
		t.Errorf("claim of a dir of one key dir: %v; want ErrOtherFleet saying %q", err, want)
	}
	// The rest of the message counts it in the singular too.
	for _, w := range []string{": it is another fleet's", "would sweep its transcripts", "move the key dir aside"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("claim of a dir of one key dir: %v; want it saying %q", err, w)
		}
	}
	second := store.Key("github", "unmarked", "two")
	if err := os.Mkdir(filepath.Join(a.dir, second), 0o700); err != nil {
		t.Fatal(err)
	}
	err = b.b.Claim(t.Context())
	if want := " holds 2 key dirs (" + slices.Min([]string{first, second}) + " among them)"; !errors.Is(err, ErrOtherFleet) || !strings.Contains(err.Error(), want) {
		t.Errorf("claim of a dir of two key dirs: %v; want ErrOtherFleet saying %q", err, want)
	}
	for _, w := range []string{": they are another fleet's", "would sweep their transcripts", "move the key dirs aside"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("claim of a dir of two key dirs: %v; want it saying %q", err, w)
		}
	}
}
