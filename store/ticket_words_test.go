package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A ticket that does not decode is refused with words that say what is
// wrong with it, and where, truthfully: an empty file, one of white space
// only, one cut short, bytes that are not JSON (at the offset of the
// first byte that is not), a field of the wrong type (named), an unknown
// field, a crc32c that is not one, a file over the bound. Each said "at
// byte 0" before (the decoder's InputOffset, which a failed Decode leaves
// where the value began), or, for a field of the wrong type or an unknown
// one, the offset of the object's end. Nothing of the file is quoted.
func TestAnUndecodableTicketSaysWhatIsWrongWithIt(t *testing.T) {
	whole := []byte(strings.TrimSpace(string(ticketSeeds()[1])))
	rep := func(old, new string) []byte {
		if !bytes.Contains(whole, []byte(old)) {
			t.Fatalf("%s not in %s", old, whole)
		}
		return bytes.Replace(whole, []byte(old), []byte(new), 1)
	}
	at := func(b []byte, s string) string { return strconv.Itoa(bytes.Index(b, []byte(s))) }
	aString := rep(`"resume":false`, `"resume":"SECRET"`)
	escQuotes := rep(`"resume":false`, `"resume": "\\\"SE\"CRET\\"`)
	negGen := rep(`"base":{}`, `"base":{"gen":-1}`)
	past := rep(`"bytes":0`, `"bytes":1e400`)
	oldGen := []byte(`{"key":"` + testKey + `","gen":"SECRET"}`)
	anObject := rep(`"resume":false`, `"resume" : {"S":["E",{}]}`)
	anArray := rep(`"base":{}`, `"base":["SECRET"]`)
	aBool := rep(`"base":{}`, `"base":{"file":{"dev":true}}`)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "empty: 0 bytes"},
		{"white space", []byte(" \n\t\r\n"), "only white space in its 5 bytes, no JSON"},
		{"cut short", whole[:100], "cut short: its 100 bytes end inside its JSON"},
		{"cut short before its last brace", whole[:len(whole)-1], "cut short: its " + strconv.Itoa(len(whole)-1) + " bytes end inside its JSON"},
		{"cut short after an open brace", []byte("{"), "cut short: its 1 byte end inside its JSON"},
		{"not JSON", []byte("SECRET is not json"), "not JSON at offset 0 of its 18 bytes"},
		{"a NUL in the value", []byte("{\"key\":\x00SECRET}"), "not JSON at offset 7 of its 15 bytes"},
		{"zeroed", make([]byte, 300), "not JSON at offset 0 of its 300 bytes"},
		{"a bad byte far in", append(append([]byte{}, whole[:200]...), "\x01SECRET"...), "not JSON at offset 200 of its 207 bytes"},
		// A field of the wrong type: named, and the offset where its
		// value begins (the decoder's own points past it).
		{"a string for a bool", aString, "resume: a JSON string at offset " + at(aString, `"SECR`) + ", which it cannot hold"},
		{"a string with escaped quotes for a bool", escQuotes, "resume: a JSON string at offset " + at(escQuotes, `"\\\"SE`) + ", which it cannot hold"},
		{"a negative gen", negGen, "base.gen: a JSON number at offset " + at(negGen, `-1`) + ", which it cannot hold"},
		{"a number past int64", past, "bytes: a JSON number at offset " + at(past, `1e400`) + ", which it cannot hold"},
		{"an old ticket's gen a string", oldGen, "gen: a JSON string at offset " + at(oldGen, `"SECRET"`) + ", which it cannot hold"},
		{"an object for a bool", anObject, "resume: a JSON object at offset " + at(anObject, `{"S`) + ", which it cannot hold"},
		{"an array for base", anArray, "base: a JSON array at offset " + at(anArray, `["S`) + ", which it cannot hold"},
		{"a bool for base.file.dev", aBool, "base.file.dev: a JSON bool at offset " + at(aBool, `true`) + ", which it cannot hold"},
		{"an unknown field", bytes.Replace(whole, []byte(`{`), []byte(`{"SECRET":1,`), 1), "a field a ticket does not have"},
		{"an array, not an object", []byte(" [\"SECRET\"]\n"), "a JSON array, not an object"},
		{"a string, not an object", []byte(`"SECRET"`), "a JSON string, not an object"},
		{"a number, not an object", []byte("7"), "a JSON number, not an object"},
		{"a bool, not an object", []byte("true"), "a JSON bool, not an object"},
		{"null, not an object", []byte(" null\n"), "a JSON null, not an object"},
		{"a crc32c that is not one", bytes.Replace(whole, []byte(`"crc32c":"00000000"`), []byte(`"crc32c":"SECRET!!"`), 1), "crc32c: want 8 hex digits"},
		// Not 8 digits long, or no string: said as a crc32c of the right
		// length that is not hex is, not "not a ticket's JSON".
		{"a crc32c too short", bytes.Replace(whole, []byte(`"crc32c":"00000000"`), []byte(`"crc32c":"0"`), 1), "crc32c: want 8 hex digits"},
		{"a crc32c a number", bytes.Replace(whole, []byte(`"crc32c":"00000000"`), []byte(`"crc32c":12345678`), 1), "crc32c: want 8 hex digits"},
		// One byte of white space is white space, not an empty file.
		{"one space", []byte(" "), "only white space in its 1 byte, no JSON"},
		// A brace right after the object, no newline between: trailing
		// data at offset 0 past the object's end, as one after a newline.
		{"a brace right after the object", append(append([]byte{}, whole...), '}'), "trailing data at offset " + strconv.Itoa(len(whole))},
	}
	const name = "/run/jobs/7/" + TicketName
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeTicket(name, c.b)
			want := "read ticket " + name + ": not a valid ticket (" + c.want + ")"
			if !errors.Is(err, ErrBadTicket) || err.Error() != want {
				t.Fatalf("refused as %v\nwant %s", err, want)
			}
		})
	}

	t.Run("over the bound", func(t *testing.T) {
		jobDir := t.TempDir()
		os.WriteFile(filepath.Join(jobDir, TicketName), bytes.Repeat([]byte("S"), maxTicketBytes+1), 0o600)
		_, err := ReadTicket(jobDir)
		want := "read ticket " + filepath.Join(jobDir, TicketName) + ": not a valid ticket (over 262144 bytes, the most promote reads: no resolve writes one so long)"
		if !errors.Is(err, ErrBadTicket) || err.Error() != want {
			t.Fatalf("refused as %v\nwant %s", err, want)
		}
	})
}
