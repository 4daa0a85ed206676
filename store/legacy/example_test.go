package legacy_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sessdb/store/legacy"
)

// The legacy counter rule: a value counts only if JavaScript's
// String(parseInt(s)) gives it back and it is positive; anything else is a
// chain of 0, on which no key is refused.
func ExampleParseResumeChain() {
	for _, s := range []string{"3", "007", "-4", "3.5", "1e3", ""} {
		fmt.Printf("%q: %d\n", s, legacy.ParseResumeChain(s))
	}
	// Output:
	// "3": 3
	// "007": 0
	// "-4": 0
	// "3.5": 0
	// "1e3": 0
	// "": 0
}

// A context sidecar is "tokens window [model]"; the model stamp is kept as
// written, uppercase included.
func ExampleParseContext() {
	for _, s := range []string{"150000 200000 Anthropic/claude-sonnet-4-5", "150000\t200000", "150000 0", "150000"} {
		c, ok := legacy.ParseContext(s)
		fmt.Printf("%q: %v %+v\n", s, ok, c)
	}
	// Output:
	// "150000 200000 Anthropic/claude-sonnet-4-5": true {Tokens:150000 Window:200000 Model:Anthropic/claude-sonnet-4-5}
	// "150000\t200000": true {Tokens:150000 Window:200000 Model:}
	// "150000 0": false {Tokens:0 Window:0 Model:}
	// "150000": false {Tokens:0 Window:0 Model:}
}

// An absent venue stamp and an unreadable one mean different things to the
// ladder: absent is "local", a link (never followed) matches no venue.
func ExampleReadVenue() {
	root, err := os.MkdirTemp("", "sessdb-legacy-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		log.Fatal(err)
	}
	dir := os.NewFile(uintptr(fd), root)
	defer dir.Close()
	venue := filepath.Join(root, legacy.VenueName)

	fmt.Println(legacy.ReadVenue(dir).State)
	if err := os.WriteFile(venue, []byte(" docker\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	s := legacy.ReadVenue(dir)
	fmt.Printf("%s %q\n", s.State, s.Value)
	if err := os.Remove(venue); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "elsewhere"), []byte("docker"), 0o600); err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink("elsewhere", venue); err != nil {
		log.Fatal(err)
	}
	fmt.Println(legacy.ReadVenue(dir).State)
	// Output:
	// absent
	// present "docker"
	// unreadable
}
