package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// dump --verify's `verify` is null, with --verify given, wherever there
// is nothing a resolve would copy to read: a name that is not a key, a
// key with no dir or no record, and on a fleet a record that does not
// decode. docs/json.md said it was null only without --verify, so a
// worker reading every key's verify.result met a null it was told could
// not be there (and a key dir's damaged meta.db, whose current.jsonl is
// read, has one: `no-record`).
func TestDumpVerifyIsNullWhereThereIsNothingToRead(t *testing.T) {
	verifyOf := func(t *testing.T, out string) map[string]*struct{ Result string } {
		t.Helper()
		got := map[string]*struct{ Result string }{}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var e struct {
				Key    *string
				Verify *struct{ Result string }
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("dump line %q: %v", line, err)
			}
			if e.Key != nil {
				got[*e.Key] = e.Verify
			}
		}
		return got
	}
	t.Run("root", func(t *testing.T) {
		clearEnv(t)
		root := filepath.Join(t.TempDir(), "sessions")
		damaged := store.Key("github", "acme/verify", "pi/damaged")
		for _, d := range []string{"not-a-key", damaged} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(root, damaged, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(root, damaged, "meta.db"), []byte(strings.Repeat("\xde\xad", 4096)), 0o600)
		code, out, errs := runCLI(t, "dump", "--json", "--verify", root)
		if code != exitOK {
			t.Fatalf("dump: exit %d, %s", code, errs)
		}
		got := verifyOf(t, out)
		if v, ok := got["not-a-key"]; !ok || v != nil {
			t.Errorf("a name that is not a key: verify %+v, want null", v)
		}
		if v := got[damaged]; v == nil || v.Result != "no-record" {
			t.Errorf("a damaged meta.db: verify %+v, want no-record", v)
		}
		absent := store.Key("github", "acme/verify", "pi/absent")
		code, out, errs = runCLI(t, "dump", "--json", "--verify", "--key", absent, root)
		if v, ok := verifyOf(t, out)[absent]; code != exitOK || !ok || v != nil {
			t.Errorf("no key dir: exit %d, verify %+v, want null\n%s", code, v, errs)
		}
	})
	t.Run("fleet", func(t *testing.T) {
		f := startFleet(t)
		key := store.Key("github", "acme/verify", "pi/undecodable")
		if _, err := f.c.Client(t).Put(t.Context(), f.prefix+"/record/"+key, "\xc1 not msgpack"); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, "dump", "--json", "--verify")
		if v, ok := verifyOf(t, out)[key]; code != exitOK || !ok || v != nil {
			t.Errorf("a record that does not decode: exit %d, verify %+v, want null\n%s", code, v, errs)
		}
		absent := store.Key("github", "acme/verify", "pi/absent")
		code, out, errs = runCLI(t, "dump", "--json", "--verify", "--key", absent)
		if v, ok := verifyOf(t, out)[absent]; code != exitOK || !ok || v != nil {
			t.Errorf("no record: exit %d, verify %+v, want null\n%s", code, v, errs)
		}
	})
	docSays(t, "json.md", "null without `--verify`, and with it where there is nothing to read: a name that is not a key, a key a problem kept from being read")
}
