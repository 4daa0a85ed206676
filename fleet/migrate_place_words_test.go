package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// PlaceError says, for a Go caller, which of the four places it refused,
// in that place's words: a CLI names its settings itself, and the
// library's own message was asked by no test, so one that said another
// place's words survived (mutnew47's PL15, PL16, PL17).
func TestPlaceErrorSaysWhichPlace(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	key := store.Key("github", "acme/widget", "words")
	for _, d := range []string{filepath.Join(root, "fleet"), filepath.Join(root, key, "t")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ root, dir, want string }{
		{root, root, "the transcripts dir " + root + " is the sessions root this migration moves:"},
		{root, filepath.Join(root, key, "t"), "is inside the key dir " + key + " of the sessions root this migration moves (" + root + ")"},
		{root, filepath.Join(root, "fleet"), "is inside the sessions root this migration moves (" + root + "), at fleet:"},
		{filepath.Join(root, "fleet"), root, "the sessions root " + filepath.Join(root, "fleet") + " is inside the transcripts dir " + root + ", at fleet,"},
	} {
		var pe *PlaceError
		if err := CheckPlaces(tc.root, tc.dir); !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckPlaces(%s, %s) = %v; want %q", tc.root, tc.dir, err, tc.want)
		}
	}
}
