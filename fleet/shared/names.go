package shared

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Name shapes: a transcript is "<key>/<gen>-<random>.jsonl" (gen 16 hex
// digits, so names sort by generation; random 16 hex digits), a write in
// flight is "<key>/.tmp-<random>".
const (
	keyLen    = 32
	hexLen    = 16
	ext       = ".jsonl"
	tmpPrefix = ".tmp-"
	fileLen   = hexLen + 1 + hexLen + len(ext)
)

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidKey reports whether key is 32 lowercase hex characters.
func ValidKey(key string) bool { return len(key) == keyLen && lowerHex(key) }

// ParseName splits a transcript name into its key and generation, and
// reports whether it is exactly a name Write makes.
func ParseName(name string) (key string, gen uint64, ok bool) {
	key, file, found := strings.Cut(name, "/")
	if !found || !ValidKey(key) {
		return "", 0, false
	}
	g, ok := parseFile(file)
	if !ok {
		return "", 0, false
	}
	return key, g, true
}

// parseFile parses the file part "<gen>-<random>.jsonl".
func parseFile(file string) (uint64, bool) {
	if len(file) != fileLen || file[hexLen] != '-' || !strings.HasSuffix(file, ext) ||
		!lowerHex(file[:hexLen]) || !lowerHex(file[hexLen+1:2*hexLen+1]) {
		return 0, false
	}
	g, err := strconv.ParseUint(file[:hexLen], 16, 64)
	return g, err == nil
}

// ParseTemp reports whether name is exactly the name of a Write in flight
// ("<key>/.tmp-<random>"), and returns its key.
func ParseTemp(name string) (key string, ok bool) {
	key, file, found := strings.Cut(name, "/")
	if !found || !ValidKey(key) || !isTemp(file) {
		return "", false
	}
	return key, true
}

func isTemp(file string) bool {
	r, ok := strings.CutPrefix(file, tmpPrefix)
	return ok && len(r) == hexLen && lowerHex(r)
}

// splitRemovable splits a name Remove accepts: a transcript name or a
// temp name under a key, or a key's directory ("<key>/", file "").
func splitRemovable(name string) (key, file string, ok bool) {
	key, file, found := strings.Cut(name, "/")
	if !found || !ValidKey(key) {
		return "", "", false
	}
	if _, isFile := parseFile(file); !isFile && !isTemp(file) && file != "" {
		return "", "", false
	}
	return key, file, true
}

func random() (string, error) {
	var b [hexLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func fileName(gen uint64, rnd string) string { return fmt.Sprintf("%016x-%s%s", gen, rnd, ext) }
