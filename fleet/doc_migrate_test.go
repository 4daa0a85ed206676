package fleet

import (
	"os"
	"strings"
	"testing"
)

// The package doc says when a migration finds a key already: at the
// same generation only with the same stamps or one history, the same
// bytes under another root's stamps being a conflict
// (TestMigrateToEtcdOfTheSameBytesWithOtherStampsIsAConflict and its
// sibling the other way). It said a destination holding the same
// generation is already, which a Go caller of ToEtcd or FromEtcd read as
// the whole rule.
func TestPackageDocSaysTheSameBytesUnderOtherStampsAreAConflict(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(src), "//", "")), " ")
	for _, says := range []string{
		"A destination holding the same generation (gen, size, CRC32C) is already, with the same stamps or one history: the same bytes under another venue, pi version, chain, context reading or promotion time, whose promotion neither side's history holds, are another root's key, a conflict naming the stamps.",
	} {
		if !strings.Contains(text, says) {
			t.Errorf("fleet's package doc does not say %q", says)
		}
	}
	if strings.Contains(text, "A destination holding the same generation (gen, size, CRC32C) is already. ") {
		t.Error("fleet's package doc still says the same generation is already, whatever its stamps")
	}
}
