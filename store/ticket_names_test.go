package store

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// A ticket that names a field in another case than a ticket's ("GEN"),
// or one field twice in one object, is refused: Go's decoder took the
// first in any case, Unicode's folds included (the Kelvin sign for k),
// and kept the last of two, and neither is what any resolve writes. Its
// words name the field as a ticket names it, and where the name is,
// never the name as the file spells it. Before, each of these read and
// promoted, as the last value said.
func TestATicketNamingAFieldInAnotherCaseOrTwiceIsRefused(t *testing.T) {
	seeds := ticketSeeds()
	warm := []byte(strings.TrimSpace(strings.ReplaceAll(string(seeds[0]), ticketRootMark, "/var/lib/pi/sessions")))
	cold := []byte(strings.TrimSpace(strings.ReplaceAll(string(seeds[2]), ticketRootMark, "/var/lib/pi/sessions")))
	old := []byte(strings.TrimSpace(string(seeds[4])))
	at := func(b []byte, s string, n int) string {
		i := -1
		for range n {
			j := bytes.Index(b[i+1:], []byte(s))
			if j < 0 {
				t.Fatalf("%s not in %s", s, b)
			}
			i += 1 + j
		}
		return strconv.Itoa(i)
	}
	rep := func(b []byte, old, new string) []byte {
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s not in %s", old, b)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
	upper := rep(warm, `"resume"`, `"RESUME"`)
	kelvin := rep(warm, `"key"`, "\"\u212aey\"")
	longS := rep(warm, `"size"`, "\"\u017fize\"")
	baseGen := rep(warm, `"gen"`, `"Gen"`)
	fileDev := rep(cold, `"dev"`, `"DEV"`)
	oldGen := rep(old, `"gen"`, `"gEN"`)
	bytesTwice := rep(warm, `"bytes":412`, `"bytes":412,"bytes":412`)
	keyTwice := rep(warm, `"resume":true`, `"resume":true,"key":"`+testKey+`"`)
	baseTwice := rep(warm, `"venue"`, `"base":{},"venue"`)
	genTwice := rep(warm, `"gen":3`, `"gen":3,"gen":3`)
	inoTwice := rep(cold, `"ino":131`, `"ino":131,"ino":132`)
	oldTwice := rep(old, `"gen":3`, `"gen":1,"gen":3`)
	jobDirTwice := rep(warm, `"job_dir"`, `"job_dir":"/elsewhere","job_dir"`)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"a name in capitals", upper, "resume: named in another case at offset " + at(upper, `"RESUME"`, 1) + ", which no resolve writes"},
		{"a name with the Kelvin sign", kelvin, "key: named in another case at offset " + at(kelvin, "\"\u212aey\"", 1) + ", which no resolve writes"},
		{"a name with a long s", longS, "base.size: named in another case at offset " + at(longS, "\"\u017fize\"", 1) + ", which no resolve writes"},
		{"base's gen in another case", baseGen, "base.gen: named in another case at offset " + at(baseGen, `"Gen"`, 1) + ", which no resolve writes"},
		{"base.file's dev in capitals", fileDev, "base.file.dev: named in another case at offset " + at(fileDev, `"DEV"`, 1) + ", which no resolve writes"},
		{"an old ticket's gen in another case", oldGen, "gen: named in another case at offset " + at(oldGen, `"gEN"`, 1) + ", which no resolve writes"},
		{"bytes twice, the same value", bytesTwice, "bytes: named twice, again at offset " + at(bytesTwice, `"bytes"`, 2)},
		{"key twice", keyTwice, "key: named twice, again at offset " + at(keyTwice, `"key"`, 2)},
		{"base twice", baseTwice, "base: named twice, again at offset " + at(baseTwice, `"base"`, 2)},
		{"base's gen twice", genTwice, "base.gen: named twice, again at offset " + at(genTwice, `"gen"`, 2)},
		{"base.file's ino twice", inoTwice, "base.file.ino: named twice, again at offset " + at(inoTwice, `"ino"`, 2)},
		{"an old ticket's gen twice", oldTwice, "gen: named twice, again at offset " + at(oldTwice, `"gen"`, 2)},
		{"job_dir twice", jobDirTwice, "job_dir: named twice, again at offset " + at(jobDirTwice, `"job_dir"`, 2)},
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
	// The same names as a resolve writes them, one each, in every object,
	// a name written with an escape among them, read as ever.
	escaped := rep(warm, `"venue"`, `"v\u0065nue"`)
	for _, b := range [][]byte{warm, cold, old, escaped, bytes.ReplaceAll(seeds[1], []byte(ticketRootMark), []byte("/r"))} {
		if _, err := decodeTicket(name, b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
}
