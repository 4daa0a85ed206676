package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// White space around a duration, in a variable or a flag, is trimmed, as
// around a whole number (design-delta.md, "Configuration"): "5s\n" from
// an env file or a secret made from a file was refused as "not a
// duration", where PI_SESSIONS_TTL_DAYS="14\n" is 14. What it surrounds
// is still judged whole: a blank within, or a value out of range once
// trimmed, is refused, naming the knob.
func TestDurationsIgnoreWhiteSpaceAroundThem(t *testing.T) {
	root := copySample(t)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "transcripts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fleet := map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://127.0.0.1:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir}
	for _, c := range []struct {
		env  map[string]string
		args []string
		name string // the knob a refusal would name
	}{
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://127.0.0.1:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir, "PI_SESSIONS_ETCD_TIMEOUT": "\t1ms\n"}, []string{"dump"}, "PI_SESSIONS_ETCD_TIMEOUT"},
		{fleet, []string{"dump", "--etcd-timeout", " 1ms "}, "--etcd-timeout"},
		{fleet, []string{"reap", "--etcd-timeout", "1ms", "--grace", "2h\n"}, "--grace"},
		{nil, []string{"stats", "--since", " 168h\n", root}, "--since"},
		{nil, []string{"check", "--deep-check-timeout", "30s\r\n", root}, "--deep-check-timeout"},
	} {
		clearEnv(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		code, _, errs := runCLI(t, c.args...)
		if code == exitUsage || strings.Contains(errs, c.name) {
			t.Errorf("%v %q: exit %d, stderr %q; want the duration taken, white space around it trimmed", c.env, c.args, code, errs)
		}
	}
	for _, c := range []struct {
		env  map[string]string
		args []string
		name string
	}{
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://127.0.0.1:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir, "PI_SESSIONS_ETCD_TIMEOUT": " 11m\n"}, []string{"dump"}, "PI_SESSIONS_ETCD_TIMEOUT"},
		{fleet, []string{"dump", "--etcd-timeout", "1 s"}, "--etcd-timeout"},
		{fleet, []string{"dump", "--etcd-timeout", " "}, "--etcd-timeout"},
		{fleet, []string{"reap", "--grace", " 91d "}, "--grace"},
		{nil, []string{"stats", "--since", "\n-1h", root}, "--since"},
		{nil, []string{"check", "--deep-check-timeout", " 1 m", root}, "--deep-check-timeout"},
	} {
		clearEnv(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		code, out, errs := runCLI(t, c.args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.name) {
			t.Errorf("%v %q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", c.env, c.args, code, out, errs, c.name)
		}
	}
}
