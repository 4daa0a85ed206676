package main

import (
	"encoding/json"
	"testing"

	"sessdb/internal/sample"
)

// Each knob works as its variable and as its flag, and the flag wins
// (issue 2: "Flags and the environment variables of DESIGN.md's
// configuration table both work (flags win)"): a variable alone moves
// resolve's verdict on the shipped sample, and the flag given beside it
// moves it back. TestFlagsWinOverEnvironment only shows that a flag
// hides a variable that does not parse.
func TestEveryKnobWorksAsVariableAndAsFlag(t *testing.T) {
	for _, c := range []struct {
		key, env, val, flag, flagVal string
		byEnv, byFlag                string
	}{
		{sample.Expired, "PI_SESSIONS_TTL_DAYS", "0", "--ttl-days", "14", "resumed", "expired"},
		{sample.Resumable, "PI_SESSION_MAX_BYTES", "1000", "--max-bytes", "0", "too-large", "resumed"},
		{sample.Resumable, "PI_SESSION_MAX_AGE_DAYS", "30", "--max-age-days", "60", "conversation-too-old", "resumed"},
		{sample.LongChain, "PI_SESSION_MAX_RESUME_CHAIN", "4", "--max-resume-chain", "5", "resume-chain-too-long", "resumed"},
		{sample.Resumable, "PI_SESSION_MAX_CONTEXT_PCT", "20", "--max-context-pct", "100", "context-too-full", "resumed"},
	} {
		atSampleTime(t)
		root := copySample(t)
		resolve := func(extra ...string) string {
			t.Helper()
			args := append([]string{"resolve", "--key", c.key, "--job-dir", t.TempDir(), "--pi-version", "0.58.3"}, extra...)
			code, out, errs := runCLI(t, args...)
			var r resolveOutput
			if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
				t.Fatalf("%s=%s %q: exit %d %s%s", c.env, c.val, extra, code, out, errs)
			}
			return r.Reason
		}
		// The sessions root too: a variable naming another root loses to
		// the flag.
		t.Setenv("PI_SESSIONS_DIR", t.TempDir())
		if got := resolve("--sessions-dir", root); got == "absent" {
			t.Fatalf("%s: PI_SESSIONS_DIR won over --sessions-dir", c.key)
		}
		t.Setenv("PI_SESSIONS_DIR", root)
		t.Setenv(c.env, c.val)
		if got := resolve(); got != c.byEnv {
			t.Errorf("%s=%s: %s, want %s", c.env, c.val, got, c.byEnv)
		}
		if got := resolve(c.flag, c.flagVal); got != c.byFlag {
			t.Errorf("%s=%s %s %s: %s, want %s (the flag wins)", c.env, c.val, c.flag, c.flagVal, got, c.byFlag)
		}
	}
}
