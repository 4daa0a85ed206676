package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sessdb/internal/sample"
)

// The shipped sample as a sessions root and moved into a fleet (migrate,
// then migrate --to etcd) prints the same dump, dump --json, check and
// reap --dry-run, field for field, but where docs/fleet.md and
// docs/json.md say a fleet differs: LAYOUT etcd; the fields only a key
// dir has (schema, created, meta_pages) null; file, the generation file
// the record names. The transcript's mtime is its file's, which the
// migration wrote anew. The sample's README.txt, a name in the root but
// no record, is removed first: the root would list it and the fleet
// cannot.
func TestFleetOutputMatchesTheRoot(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	if err := os.Remove(filepath.Join(root, "README.txt")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "migrate", root); code != exitOK {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	f := startFleet(t)
	if sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root); sum.Migrated != 5 {
		t.Fatalf("--to etcd = %+v, want 5 keys migrated", sum)
	}
	// The same command on the root: the fleet's variables unset, then
	// set back.
	env := func(dir, endpoints, transcripts, prefix string) {
		t.Setenv("PI_SESSIONS_DIR", dir)
		t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", endpoints)
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", transcripts)
		t.Setenv("PI_SESSIONS_ETCD_PREFIX", prefix)
	}
	fleetEnv := []string{"", os.Getenv("PI_SESSIONS_ETCD_ENDPOINTS"), f.dir, f.prefix}
	onRoot := func(args ...string) (int, string, string) {
		t.Helper()
		env(root, "", "", "")
		defer env(fleetEnv[0], fleetEnv[1], fleetEnv[2], fleetEnv[3])
		return runCLI(t, args...)
	}

	genFile := regexp.MustCompile(`^([0-9a-f]{32})/([0-9a-f]{16})-[0-9a-f]{16}\.jsonl$`)
	for _, args := range [][]string{
		{"dump", "--json", "--verify", "--history", "64"},
		{"check", "--json"},
		{"reap", "--dry-run", "--json"},
	} {
		rc, rout, rerrs := onRoot(args...)
		fc, fout, ferrs := runCLI(t, args...)
		if rc != exitOK || fc != exitOK {
			t.Fatalf("%v: exit %d on the root, %d on the fleet\n%s%s%s%s", args, rc, fc, rout, rerrs, fout, ferrs)
		}
		rl, fl := strings.Split(strings.TrimSpace(rout), "\n"), strings.Split(strings.TrimSpace(fout), "\n")
		if len(rl) != len(fl) {
			t.Fatalf("%v: %d lines on the root, %d on the fleet\n%s\n%s", args, len(rl), len(fl), rout, fout)
		}
		for i := range rl {
			var r, g map[string]any
			if json.Unmarshal([]byte(rl[i]), &r) != nil || json.Unmarshal([]byte(fl[i]), &g) != nil {
				t.Fatalf("%v line %d: not JSON\n%s\n%s", args, i, rl[i], fl[i])
			}
			if args[0] == "dump" && r["summary"] == nil {
				if r["layout"] != "db" || g["layout"] != "etcd" {
					t.Errorf("%s: layout %v on the root, %v on the fleet", r["key"], r["layout"], g["layout"])
				}
				for _, k := range []string{"schema", "created", "meta_pages"} {
					if g[k] != nil {
						t.Errorf("%s: %s is %v on the fleet, want null", g["key"], k, g[k])
					}
					g[k] = r[k]
				}
				rec, _ := g["record"].(map[string]any)
				m := genFile.FindStringSubmatch(fmt.Sprint(g["file"]))
				if r["file"] != nil || m == nil || m[1] != g["key"] || rec == nil || m[2] != fmt.Sprintf("%016x", int(rec["gen"].(float64))) {
					t.Errorf("%s: file %v on the root, %v on the fleet; want null and the record's generation file", g["key"], r["file"], g["file"])
				}
				g["layout"], g["file"] = r["layout"], r["file"]
				for _, m := range []map[string]any{r, g} {
					if tr, ok := m["transcript"].(map[string]any); ok {
						delete(tr, "mtime")
					}
				}
			}
			if !reflect.DeepEqual(r, g) {
				t.Errorf("%v line %d differs:\nroot  %s\nfleet %s", args, i, rl[i], fl[i])
			}
		}
	}
	// The tables: the same lines, but dump's LAYOUT.
	for _, args := range [][]string{{"dump"}, {"dump", "--history", "64"}, {"check"}, {"reap", "--dry-run"}} {
		_, rout, _ := onRoot(args...)
		_, fout, _ := runCLI(t, args...)
		if args[0] == "dump" {
			rout = strings.ReplaceAll(rout, "  db      ", "  etcd    ")
		}
		if rout != fout || rout == "" {
			t.Errorf("%v:\n--- root\n%s--- fleet\n%s", args, rout, fout)
		}
	}

	// The expired key's meta.db damaged on the root, its record on the
	// fleet: reap cannot tell whether it expired, and says so alike, a
	// key it could not do (fail, exit 1), not a key kept. Before, the
	// fleet's reap counted it kept and exited 0. The detail is each
	// store's own error.
	if err := os.Truncate(filepath.Join(root, sample.Expired, "meta.db"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Client(t).Put(t.Context(), f.prefix+"/record/"+sample.Expired, "\xc1"); err != nil {
		t.Fatal(err)
	}
	args := []string{"reap", "--dry-run", "--json"}
	rc, rout, rerrs := onRoot(args...)
	fc, fout, ferrs := runCLI(t, args...)
	rl, fl := strings.Split(strings.TrimSpace(rout), "\n"), strings.Split(strings.TrimSpace(fout), "\n")
	if rc != exitFault || fc != rc || len(rl) != len(fl) || !strings.Contains(rerrs, sample.Expired) || !strings.Contains(ferrs, sample.Expired) {
		t.Fatalf("a damaged expired key: exit %d on the root, %d on the fleet; want 1, naming it on stderr\n%s%s%s%s", rc, fc, rout, rerrs, fout, ferrs)
	}
	failed := 0
	for i := range rl {
		var r, g map[string]any
		if json.Unmarshal([]byte(rl[i]), &r) != nil || json.Unmarshal([]byte(fl[i]), &g) != nil {
			t.Fatalf("line %d: not JSON\n%s\n%s", i, rl[i], fl[i])
		}
		if r["action"] == "fail" && g["action"] == "fail" && r["key"] == sample.Expired && g["key"] == sample.Expired && r["detail"] != nil && g["detail"] != nil {
			failed++
			r["detail"], g["detail"] = nil, nil
		}
		if !reflect.DeepEqual(r, g) {
			t.Errorf("a damaged expired key, line %d differs:\nroot  %s\nfleet %s", i, rl[i], fl[i])
		}
	}
	if failed != 1 {
		t.Errorf("a damaged expired key: %d fail actions for it on both; want 1\nroot\n%s\nfleet\n%s", failed, rout, fout)
	}
}
