package shared

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The name shapes names.go promises, written out as patterns.
var (
	generationPattern = regexp.MustCompile(`^[0-9a-f]{32}/[0-9a-f]{16}-[0-9a-f]{16}\.jsonl$`)
	tempPattern       = regexp.MustCompile(`^[0-9a-f]{32}/\.tmp-[0-9a-f]{16}$`)
	keyDirPattern     = regexp.MustCompile(`^[0-9a-f]{32}/$`)
)

const fuzzKey = "0123456789abcdef0123456789abcdef"

func nameSeeds() []string {
	return []string{
		fuzzKey + "/" + fileName(7, "89abcdef01234567"),
		fuzzKey + "/" + fileName(1<<64-1, "0000000000000000"),
		fuzzKey + "/" + tmpPrefix + "89abcdef01234567",
		fuzzKey + "/",
		fuzzKey + "/0000000000000007-89ABCDEF01234567.jsonl",
		fuzzKey + "/0000000000000007-89abcdef01234567.jsonl/",
		fuzzKey + "/0000000000000007-89abcdef01234567.jsonl.tmp",
		fuzzKey + "/+000000000000007-89abcdef01234567.jsonl",
		fuzzKey + "/0000000000000007_89abcdef01234567.jsonl",
		fuzzKey + "/../0000000000000007-89abcdef01234567.jsonl",
		fuzzKey + "/.tmp-89abcdef0123456",
		fuzzKey + "/.tmp-89abcdef01234567\x00",
		fuzzKey + "//.tmp-89abcdef01234567",
		// A temp and a generation under a key that is no key (mutation
		// sweep: ParseTemp's `!found || !ValidKey(key)` made an `&&`
		// took the temp's; no seed held it).
		strings.ToUpper(fuzzKey) + "/" + tmpPrefix + "89abcdef01234567",
		strings.ToUpper(fuzzKey) + "/" + fileName(7, "89abcdef01234567"),
		".nfs000000000123", "lost+found", "", "/", "../" + fuzzKey[3:] + "/x",
	}
}

// FuzzParseName checks the parsers of names in the transcripts dir (a dir
// every host of the fleet writes, and any tenant who can write there)
// against the patterns of what Write makes: a name is a generation, a
// temp, or a key's dir exactly when it matches that pattern, never two of
// them; a generation's parts are the name's, and make it again.
func FuzzParseName(f *testing.F) {
	for _, s := range nameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		key, gen, isGen := ParseName(name)
		if want := generationPattern.MatchString(name); isGen != want {
			t.Fatalf("ParseName(%q) = %v, the pattern says %v", name, isGen, want)
		}
		if isGen {
			g, err := strconv.ParseUint(name[33:49], 16, 64)
			if key != name[:32] || err != nil || gen != g || key+"/"+fileName(gen, name[50:66]) != name {
				t.Fatalf("ParseName(%q) = %q, %d: not the name's parts", name, key, gen)
			}
		}
		tkey, isTemp := ParseTemp(name)
		if want := tempPattern.MatchString(name); isTemp != want {
			t.Fatalf("ParseTemp(%q) = %v, the pattern says %v", name, isTemp, want)
		}
		if isTemp && tkey != name[:32] {
			t.Fatalf("ParseTemp(%q) = %q", name, tkey)
		}
		rkey, file, removable := splitRemovable(name)
		if want := isGen || isTemp || keyDirPattern.MatchString(name); removable != want {
			t.Fatalf("splitRemovable(%q) = %v; a generation %v, a temp %v", name, removable, isGen, isTemp)
		}
		if removable && rkey+"/"+file != name {
			t.Fatalf("splitRemovable(%q) = %q, %q", name, rkey, file)
		}
		if isGen && isTemp {
			t.Fatalf("%q is both a generation and a temp", name)
		}
	})
}

// FuzzListOrphans plants a file of any name a file can have in a key's
// dir of the transcripts dir, and a dir of that name at its top, beside a
// generation and a temp that reap may take, all old and unreferenced:
// ListOrphans lists the planted file only if its name is a generation's
// or a temp's exactly, lists nothing it did not find, and Remove of every
// name it lists removes that file and nothing else.
func FuzzListOrphans(f *testing.F) {
	for _, s := range nameSeeds() {
		if i := strings.LastIndexByte(s, '/'); i >= 0 {
			s = s[i+1:]
		}
		f.Add(s)
	}
	f.Add(fuzzKey)
	f.Fuzz(func(t *testing.T, file string) {
		if file == "" || file == "." || file == ".." || len(file) > 255 || strings.ContainsAny(file, "/\x00") {
			return // no file has that name
		}
		dir := t.TempDir()
		old := time.Now().Add(-time.Hour)
		known := []string{fuzzKey + "/" + fileName(3, "0123456789abcdef"), fuzzKey + "/" + tmpPrefix + "fedcba9876543210"}
		planted := fuzzKey + "/" + file
		var paths []string
		for _, n := range append(slices.Clone(known), planted) {
			p := filepath.Join(dir, n)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
		// A dir of that name at the top, with a generation in it: listed
		// only if the name is a key.
		top := filepath.Join(dir, file)
		if err := os.MkdirAll(top, 0o700); err == nil {
			os.WriteFile(filepath.Join(top, fileName(1, "0123456789abcdef")), []byte("y"), 0o600)
			paths = append(paths, filepath.Join(top, fileName(1, "0123456789abcdef")))
		}
		for _, p := range paths {
			os.Chtimes(p, old, old)
		}
		names, _, unreadable, err := listOrphans(context.Background(), dir, func(string, string, time.Time) bool { return false }, time.Now().Add(-time.Minute))
		if err != nil || len(unreadable) != 0 {
			t.Fatalf("ListOrphans: %v, %v", err, unreadable)
		}
		want := slices.Clone(known)
		if generationPattern.MatchString(planted) || tempPattern.MatchString(planted) {
			want = append(want, planted)
		}
		if ValidKey(file) {
			want = append(want, file+"/"+fileName(1, "0123456789abcdef"))
		}
		slices.Sort(want)
		want = slices.Compact(want)
		if !slices.Equal(names, want) {
			t.Fatalf("planted %q: ListOrphans listed %q, want %q", file, names, want)
		}
		for _, n := range names {
			if err := Remove(dir, n); err != nil {
				t.Fatalf("Remove(%q): %v", n, err)
			}
			if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
				t.Fatalf("Remove(%q) left it: %v", n, err)
			}
		}
		if !slices.Contains(names, planted) {
			if _, err := os.Lstat(filepath.Join(dir, planted)); err != nil {
				t.Fatalf("%q, not listed, is gone: %v", planted, err)
			}
		}
	})
}
