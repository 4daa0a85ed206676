package shared

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What WriteMark writes ReadMark reads back as it was written, for a
// prefix of any UTF-8 a fleet's configuration takes, up to its bound; a
// mark already in place is never replaced; and a prefix past the bound
// is refused before anything is written.
func TestMarkRoundTrip(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	for _, prefix := range []string{"/sessdb", "sessdb", "/ünï/côdé/\u2028", `/with "quotes" and \backslash`, "/" + strings.Repeat("p", markPrefixMax-3)} {
		dir := t.TempDir()
		got, err := WriteMark(dir, Mark{ID: id, Prefix: prefix})
		if err != nil || got.ID != id || got.Prefix != prefix {
			t.Fatalf("WriteMark(%.40q) = %+v, %v", prefix, got, err)
		}
		read, found, err := ReadMark(dir)
		if err != nil || !found || read != got {
			t.Fatalf("ReadMark after WriteMark(%.40q) = %+v, %v, %v", prefix, read, found, err)
		}
		other, err := WriteMark(dir, Mark{ID: strings.Repeat("f", 32), Prefix: "/other"})
		if err != nil || other != got {
			t.Fatalf("a second WriteMark = %+v, %v; want the first mark, kept", other, err)
		}
		names, _ := os.ReadDir(dir)
		if len(names) != 1 {
			t.Fatalf("the dir holds %v; want the mark alone", names)
		}
	}
	dir := t.TempDir()
	if _, err := WriteMark(dir, Mark{ID: id, Prefix: "/" + strings.Repeat("p", markPrefixMax)}); err == nil || errors.Is(err, ErrBadMark) {
		t.Fatalf("WriteMark of a prefix past the bound: %v; want an error of its own", err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("a refused WriteMark left %v", names)
	}
}

// parseMark takes what formatMark makes and nothing else, and never
// panics; what it takes, formatMark gives back byte for byte.
func FuzzMark(f *testing.F) {
	f.Add(formatMark(Mark{ID: "0123456789abcdef0123456789abcdef", Prefix: "/sessdb"}))
	f.Add([]byte("sessdb fleet mark 1\nid 0123456789abcdef0123456789abcdef\nprefix \"\"\n"))
	f.Add([]byte("sessdb fleet mark 1\nid x\nprefix \"/sessdb\"\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMark(b)
		if err != nil {
			return
		}
		if again := formatMark(m); string(again) != string(b) {
			t.Fatalf("parseMark took %q as %+v, which formats as %q", b, m, again)
		}
	})
}

// A mark the dir holds that ReadMark cannot take is ErrBadMark naming it,
// and WriteMark leaves it as it is.
func TestABadMarkIsNeverReplaced(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, MarkName)
	if err := os.WriteFile(p, []byte("not a mark\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ReadMark(dir); !found || !errors.Is(err, ErrBadMark) || !strings.Contains(err.Error(), p) {
		t.Fatalf("ReadMark = %v, %v; want ErrBadMark naming %s", found, err, p)
	}
	if _, err := WriteMark(dir, Mark{ID: "0123456789abcdef0123456789abcdef", Prefix: "/sessdb"}); !errors.Is(err, ErrBadMark) {
		t.Fatalf("WriteMark over a bad mark: %v; want ErrBadMark", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "not a mark\n" {
		t.Fatalf("the bad mark became %q", b)
	}
}
