package store

import (
	"crypto/sha256"
	"encoding/hex"
)

// KeyLength is the length of a key in hex characters (128 bits), the legacy
// store's KEY_LENGTH, so a migrated fleet keeps its directory names.
const KeyLength = 32

// Key derives the key of a conversation from its kind, repository and ref:
// SHA-256 over kind NUL repo NUL ref, hex, first 32 characters. The NUL
// separator keeps a shifted boundary ("a", "bc" vs "ab", "c") from
// colliding, and the hash keeps every ref, however hostile, out of paths.
func Key(kind, repo, ref string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(repo))
	h.Write([]byte{0})
	h.Write([]byte(ref))
	return hex.EncodeToString(h.Sum(nil))[:KeyLength]
}

// ValidKey reports whether k has the form of a key: exactly 32 lowercase
// hex characters. Every key taken from outside is checked before it
// touches a path.
func ValidKey(k string) bool {
	if len(k) != KeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
