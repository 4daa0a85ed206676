package fleet

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// etcdctlArgs is what etcdctl's flag parser (pflag's rule: an argument
// that begins with "-" is an option, until a "--") takes from the
// etcdctl commands in text, run by sh: the arguments that are no option,
// or the option it does not know.
func etcdctlArgs(t *testing.T, text string) []string {
	t.Helper()
	i := strings.Index(text, "etcdctl del")
	if i < 0 {
		t.Fatalf("no etcdctl command in %q", text)
	}
	const standIn = `etcdctl() { opts=1; for a; do if [ $opts = 1 ]; then case $a in --) opts=0;; --prefix) ;; -*) printf 'unknown flag %s\n' "$a"; return;; *) printf '%s\n' "$a";; esac; else printf '%s\n' "$a"; fi; done; }; `
	out, err := exec.Command("sh", "-c", standIn+text[i:]).Output()
	if err != nil {
		t.Fatalf("sh ran %q: %v", text[i:], err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// A prefix may begin with "-" (Config takes "-sessdb"): the etcdctl
// commands check names for a record that does not decode and for a
// history with no record give etcdctl the keys as keys, not as options.
// Before, "etcdctl del --prefix -t…/history/KEY/" was refused by etcdctl
// ("unknown shorthand flag: 't'", measured with etcdctl 3.4.23), and the
// advice removed nothing.
func TestRepairAdviceUnderAPrefixLikeAnOptionNamesTheKeys(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	prefix := "-t" + randHex(8)
	f := newFixture(t, c, func(cfg *Config) { cfg.Prefix = prefix })
	f.prefix = prefix
	undecodable := store.Key("github", "dash-prefix", "undecodable")
	stray := store.Key("github", "dash-prefix", "stray")
	f.run(undecodable, "one")
	f.run(stray, "one")
	cli := c.Client(t)
	if _, err := cli.Put(t.Context(), prefix+"/record/"+undecodable, "\xc1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(t.Context(), prefix+"/record/"+stray); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{Repair: true})
	advice := found[prefix+"/record/"+undecodable].Repair
	want := []string{"del", prefix + "/history/" + undecodable + "/", "del", prefix + "/record/" + undecodable}
	if got := etcdctlArgs(t, advice); !slices.Equal(got, want) {
		t.Errorf("the advice %q gives etcdctl %q; want %q", advice, got, want)
	}
	dir := prefix + "/history/" + stray + "/"
	detail := found[dir].Detail
	if got := etcdctlArgs(t, detail); !slices.Equal(got, []string{"del", dir}) {
		t.Errorf("the finding %q gives etcdctl %q; want %q", detail, got, []string{"del", dir})
	}
}

// A prefix whose first component is "history" ("/history/x": Config
// takes it, only a later component may not be) holds "/history/" in every
// key's path: check --repair's advice for a record that does not decode
// is the record's (its history and record named), not a history entry's.
// Before, the record's finding was taken for a history entry's by its
// path, and its advice was "remove the entry with etcdctl del", naming
// neither key.
func TestRepairAdviceUnderAPrefixNamedHistoryIsTheRecords(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	prefix := "/history/" + randHex(8)
	f := newFixture(t, c, func(cfg *Config) { cfg.Prefix = prefix })
	f.prefix = prefix
	key := store.Key("github", "history-prefix", "undecodable")
	f.run(key, "one")
	if _, err := c.Client(t).Put(t.Context(), prefix+"/record/"+key, "\xc1"); err != nil {
		t.Fatal(err)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{Repair: true})
	advice := found[prefix+"/record/"+key].Repair
	want := []string{"del", prefix + "/history/" + key + "/", "del", prefix + "/record/" + key}
	if !strings.Contains(advice, prefix+"/record/"+key) {
		t.Fatalf("the advice for the undecodable record is %q; want it to name %q", advice, want)
	}
	if got := etcdctlArgs(t, advice); !slices.Equal(got, want) {
		t.Errorf("the advice %q gives etcdctl %q; want %q", advice, got, want)
	}
}
