package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"sessdb/store"
)

// A promote onto a sessions root that does not exist makes it (0700, with
// its missing parents): the first promote of a new deployment must, so it
// is not refused. But resolve warned that the root was missing (is it
// misspelt?), and the promote after it built that root in silence. It
// warns now, once, naming the root it made as resolve's warning names
// it (quoted whole: TestAMessageAboutAPathQuotesItWhole); its exit status
// and its JSON are what they were, and a promote onto a root that exists
// says nothing.
func TestPromoteWarnsWhenItMakesTheSessionsRoot(t *testing.T) {
	clearEnv(t)
	missing := filepath.Join(t.TempDir(), "nx", "a", "sesions")
	key := store.Key("github", "acme/widget", "pi/new-root")
	job := filepath.Join(t.TempDir(), "job-1")
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", missing, "--key", key, "--job-dir", job, "--pi-version", "0.58.3", "--venue", "local")
	if code != exitOK || !strings.Contains(out, `"reason":"absent"`) || !strings.Contains(errs, "does not exist") {
		t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
	}
	appendAnswered(t, job, "1")
	code, out, errs = runCLI(t, "promote", "--sessions-dir", missing, "--job-dir", job, "--pi-version", "0.58.3")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || !p.Promoted || p.Gen != 1 || p.Reason != "promoted" {
		t.Fatalf("promote onto a missing root: exit %d\n%s%s", code, out, errs)
	}
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "sessions root") || !strings.Contains(errs, strconv.Quote(missing)) || !strings.Contains(errs, "made it") {
		t.Fatalf("promote onto a missing root: stderr %q; want one warning naming the root it made", errs)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the root after the promote: %v, %v; want a 0700 directory", fi, err)
	}

	// The root exists now: the next job's resolve and promote say nothing.
	job2 := filepath.Join(t.TempDir(), "job-2")
	if code, out, errs := runCLI(t, "resolve", "--sessions-dir", missing, "--key", key, "--job-dir", job2, "--pi-version", "0.58.3", "--venue", "local"); code != exitOK || errs != "" || !strings.Contains(out, `"reason":"resumed"`) {
		t.Fatalf("resolve under the root made: exit %d\n%s%s", code, out, errs)
	}
	appendAnswered(t, job2, "2")
	code, out, errs = runCLI(t, "promote", "--sessions-dir", missing, "--job-dir", job2, "--pi-version", "0.58.3")
	if code != exitOK || errs != "" || !strings.Contains(out, `"gen":2`) {
		t.Fatalf("promote onto a root that exists: exit %d\n%s%s; want gen 2 and nothing on stderr", code, out, errs)
	}
	// A retry of the first promote (a repeat) makes nothing and says nothing.
	if code, out, errs := runCLI(t, "promote", "--sessions-dir", missing, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK || errs != "" || !strings.Contains(out, `"repeat":true`) {
		t.Fatalf("repeat: exit %d\n%s%s", code, out, errs)
	}
}

// Jobs of a new deployment promote at once onto the root none has made
// yet (each resolve warned it was missing): one promotion makes the root,
// and only that promote may say it made it. The warning was decided by a
// look before the promotion and one after, so a promote whose root another
// made in between said "promote made it" too. Rounds of two promotes of two
// keys, started together; in each exactly one may warn.
func TestOnlyThePromoteThatMadeTheRootWarns(t *testing.T) {
	clearEnv(t)
	const rounds = 20
	for r := range rounds {
		missing := filepath.Join(t.TempDir(), "nx", "sessions")
		var jobs [2]string
		for i := range jobs {
			key := store.Key("github", "acme/widget", fmt.Sprintf("pi/race-%d-%d", r, i))
			jobs[i] = filepath.Join(t.TempDir(), "job")
			if code, out, errs := runCLI(t, "resolve", "--sessions-dir", missing, "--key", key, "--job-dir", jobs[i], "--pi-version", "0.58.3", "--venue", "local"); code != exitOK {
				t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
			}
			appendAnswered(t, jobs[i], "1")
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		var errs [2]string
		var codes [2]int
		for i := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var out, e bytes.Buffer
				codes[i] = run([]string{"promote", "--sessions-dir", missing, "--job-dir", jobs[i], "--pi-version", "0.58.3"}, &out, &e)
				errs[i] = e.String()
			}()
		}
		close(start)
		wg.Wait()
		warned := 0
		for i := range jobs {
			if codes[i] != exitOK {
				t.Fatalf("round %d: promote %d: exit %d\n%s", r, i, codes[i], errs[i])
			}
			if strings.Contains(errs[i], "made it") {
				warned++
			}
		}
		if warned != 1 {
			t.Fatalf("round %d: %d promotes said they made the root (stderr %q, %q); want the one that made it", r, warned, errs[0], errs[1])
		}
	}
}
