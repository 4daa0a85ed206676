package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A legacy key dir root owns in a worker's root, one the worker may write
// in (0777: a legacy worker run as root under umask 0), is the worker's
// to migrate: what the worker's own migration makes there (meta.db) is
// its own, and its resolves resume the key after it as before it. Only
// root's migration there would make a meta.db root's (what root makes is
// the dir's owner's), and fails the key for that. The worker's own
// migration failed it too, "the meta.db made in it would be root's",
// which it would not be: a key the worker migrated before, and cannot
// give itself (a chown is root's). One the worker may not write in (0755)
// fails its migration, the dry run's too, as it failed since root's
// migration was judged (the run's create of meta.db would fail).
func TestTheOwnersMigrationOfAKeyDirRootOwnsThatItMayWriteIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a key dir root owns in a root nobody owns, and nobody to run the migration as")
	}
	for _, c := range []struct {
		mode    os.FileMode
		migrate bool
	}{{0o777, true}, {0o755, false}} {
		w := newNobodysWorker(t)
		dir := filepath.Join(w.root, workerKey)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(w.root, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{
			"current.jsonl": header + `{"type":"message","id":"1","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}` + "\n",
			"pi-version":    "0.58.3",
			"venue":         "local",
		} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, c.mode); err != nil {
			t.Fatal(err)
		}
		resolve := func(job string) string {
			t.Helper()
			code, out, errs := w.runAs("resolve", "--sessions-dir", w.root, "--key", workerKey, "--job-dir", filepath.Join(w.base, job), "--pi-version", "0.58.3", "--venue", "local")
			if code != exitOK {
				t.Fatalf("%04o: the worker's resolve (%s): exit %d\n%s\n%s", c.mode, job, code, out, errs)
			}
			return out
		}
		if out := resolve("before"); !strings.Contains(out, `"reason":"resumed"`) {
			t.Fatalf("%04o: the worker's resolve of the legacy key: %s; want resumed", c.mode, out)
		}
		if !c.migrate {
			for _, dry := range []string{"--dry-run", "--workers=1"} {
				code, out, errs := w.runAs("migrate", dry, w.root)
				if code != exitFault || !strings.Contains(out, "may not write") {
					t.Errorf("%04o: the worker's migration (%s): exit %d\n%s\n%s; want the key failed, as a key dir it may not write in", c.mode, dry, code, out, errs)
				}
			}
			continue
		}
		code, out, errs := w.runAs("migrate", w.root)
		if code != exitOK || !strings.Contains(out, "1 migrate") {
			t.Fatalf("%04o: the worker's own migration of a key dir root owns that it may write in: exit %d\n%s\n%s; want it migrated", c.mode, code, out, errs)
		}
		st, err := os.Stat(filepath.Join(dir, "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != nobody {
			t.Errorf("%04o: meta.db after the worker's migration is uid %d's; want the worker's", c.mode, uid)
		}
		if out := resolve("after"); !strings.Contains(out, `"reason":"resumed"`) {
			t.Errorf("%04o: the worker's resolve after its migration: %s; want resumed", c.mode, out)
		}
	}
}
