package store

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store/legacy"
)

// A FIFO at any name reap meets never blocks it, dry or not: one named
// like a key, and like a reap-owned dir, under the root; one at meta.db's,
// the transcript's, a legacy sidecar's, a temp's, a meta.db temp's and a
// moved-aside meta.db's names in a key dir (an expired key, a fresh one,
// and one with no record); and one inside a reap-owned dir. Nothing opens
// a FIFO (an open for reading waits for a writer): each is a notice, or
// its key left whole or kept; no FIFO is removed, and check still finds
// each.
func TestReapNeverBlocksOnAFIFO(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	fresh, old, bare := Key("a", "b", "fresh"), Key("a", "b", "old"), Key("a", "b", "bare")
	runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh")
	expiredKey(t, s, clock, old)
	if err := os.Mkdir(filepath.Join(root, bare), 0o700); err != nil {
		t.Fatal(err)
	}
	aside := ReapedPrefix + Key("a", "b", "aside") + "-0123456789abcdef"
	if err := os.Mkdir(filepath.Join(root, aside), 0o700); err != nil {
		t.Fatal(err)
	}
	sidecar := ""
	for _, n := range []string{"venue", "chain", "pi-version"} {
		if legacy.IsSidecar(n) {
			sidecar = n
			break
		}
	}
	var fifos []string
	mk := func(p string) {
		t.Helper()
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		fifos = append(fifos, p)
	}
	mk(filepath.Join(root, Key("a", "b", "fifo")))
	mk(filepath.Join(root, ReapedPrefix+Key("a", "b", "fifo2")+"-0123456789abcdef"))
	mk(filepath.Join(root, aside, db.FileName))
	mk(filepath.Join(root, aside, tmpPrefix+"00000000000000aa"))
	mk(filepath.Join(root, bare, db.FileName))
	mk(filepath.Join(root, bare, TranscriptName))
	for _, k := range []string{fresh, old} {
		for _, n := range []string{tmpPrefix + "00000000000000aa", db.TempPrefix + "00000000000000aa", AsidePrefix + "20261101T120000Z"} {
			mk(filepath.Join(root, k, n))
		}
		if sidecar != "" {
			mk(filepath.Join(root, k, sidecar))
		}
	}
	// A key whose transcript is a FIFO, its record naming it.
	piped := Key("a", "b", "piped")
	expiredKey(t, s, clock, piped)
	os.Remove(filepath.Join(root, piped, TranscriptName))
	mk(filepath.Join(root, piped, TranscriptName))
	// And one whose meta.db is, beside a transcript (a legacy key's look).
	metaPiped := Key("a", "b", "metapiped")
	expiredKey(t, s, clock, metaPiped)
	os.Remove(filepath.Join(root, metaPiped, db.FileName))
	mk(filepath.Join(root, metaPiped, db.FileName))
	// Old enough for every temp rule.
	past := clock.now.Add(-30 * 24 * time.Hour)
	for _, p := range fifos {
		os.Chtimes(p, past, past)
	}

	for _, dry := range []bool{true, false, false} {
		done := make(chan ReapResult, 1)
		go func() {
			res, _ := s.Reap(dry)
			done <- res
		}()
		select {
		case res := <-done:
			t.Logf("reap (dry %v): removed %v, kept %d, failed %v, refused %v, skipped %q", dry, res.Removed, res.Kept, res.Failed, res.Refused, res.Skipped)
		case <-time.After(60 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("reap (dry %v) blocked for a minute:\n%s", dry, buf[:runtime.Stack(buf, true)])
		}
	}
	for _, p := range fifos {
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s: %v, %v; want the FIFO left", p, st, err)
		}
	}
	done := make(chan []Finding, 1)
	go func() { done <- checkFindings(t, s, CheckOptions{}) }()
	select {
	case found := <-done:
		var named []string
		for _, f := range found {
			named = append(named, fmt.Sprintf("%s: %s", f.Path, f.Kind))
		}
		for _, p := range fifos {
			rel, _ := filepath.Rel(root, p)
			hit := false
			for _, n := range named {
				if strings.HasPrefix(n, rel+":") || strings.HasPrefix(rel, strings.SplitN(n, ":", 2)[0]+"/") {
					hit = true
				}
			}
			if !hit {
				t.Errorf("check names nothing of the FIFO %s: %v", rel, named)
			}
		}
	case <-time.After(60 * time.Second):
		t.Fatal("check blocked on a FIFO")
	}
}
