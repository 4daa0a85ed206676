package store

import (
	"regexp"
	"testing"
)

var keyPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// FuzzValidKey checks the key validator against the pattern it promises
// (a key from outside touches a path only if it passes), and that every
// derived key passes.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{testKey, "../x", "/etc/passwd", "2dc0f8ddc6a9b84a405d1cd6ab3055a\x00", "2DC0F8DDC6A9B84A405D1CD6AB3055A9", ""} {
		f.Add(s, "github", "acme/widget")
	}
	f.Fuzz(func(t *testing.T, s, kind, repo string) {
		if got, want := ValidKey(s), keyPattern.MatchString(s); got != want {
			t.Fatalf("ValidKey(%q) = %v, the pattern says %v", s, got, want)
		}
		if k := Key(kind, repo, s); !ValidKey(k) {
			t.Fatalf("Key(%q, %q, %q) = %q is not a valid key", kind, repo, s, k)
		}
	})
}
