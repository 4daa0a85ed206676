package etcdmeta

import (
	"os"
	"regexp"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// drawnLayout reads the key patterns of the tree in doc.go.
func drawnLayout(t *testing.T) map[string]*regexp.Regexp {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`^//\t  (\S+)\s`)
	vars := strings.NewReplacer("<key>", "[0-9a-f]{32}", "<seq>", "[0-9a-f]{16}", "<lease>", "[0-9a-f]+")
	pats := map[string]*regexp.Regexp{}
	for _, line := range strings.Split(string(src), "\n") {
		if m := entry.FindStringSubmatch(line); m != nil {
			pats[m[1]] = regexp.MustCompile("^" + vars.Replace(regexp.QuoteMeta(m[1])) + "$")
		}
	}
	if len(pats) == 0 {
		t.Fatal("no tree found in doc.go")
	}
	return pats
}

// TestLayout writes every kind of value and compares etcd's keys with the
// tree drawn in the package doc, both ways.
func TestLayout(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	if _, err := s.AppendHistory(ctx(t), key, rev, HistoryEntry{Outcome: "superseded"}); err != nil {
		t.Fatal(err)
	}
	unlock, _, err := s.Lock(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := s.FleetID(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	resp, err := s.cli.Get(ctx(t), "", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	pats := drawnLayout(t)
	used := map[string]bool{}
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		rest, ok := strings.CutPrefix(k, s.Prefix()+"/")
		if !ok {
			t.Errorf("key %q is outside the prefix %q", k, s.Prefix())
			continue
		}
		matched := false
		for name, re := range pats {
			if re.MatchString(rest) {
				used[name], matched = true, true
			}
		}
		if !matched {
			t.Errorf("key %q is not in the drawn tree", k)
		}
	}
	for name := range pats {
		if !used[name] {
			t.Errorf("the drawn %q was not written", name)
		}
	}
}
