package migrate

import (
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"sessdb/db"
	"sessdb/internal/jsstr"
	"sessdb/store/legacy"
)

// plainStamp is a stamp the legacy format can surely carry: text within
// the sidecar cap, with no white space around it.
func plainStamp(s string) bool {
	return s != "" && len(s) <= legacy.SidecarMaxBytes && utf8.ValidString(s) && strings.TrimFunc(s, jsstr.IsSpace) == s
}

// FuzzLegacyFiles gives ToLegacy's writer any values a meta.db can hold
// (the db is the operator's or another host's to have written). What it
// agrees to write, the legacy reader reads back as the same value, by
// legacy's own rules (SidecarValue, ParseResumeChain, ParseContext),
// checked here apart from the writer's own check; what it refuses is
// ErrNotLegacy, before anything is written, and never a value the legacy
// format plainly carries. Its error quotes a value in a bounded length,
// however long the value.
func FuzzLegacyFiles(f *testing.F) {
	f.Add("0.54.2", true, "local", true, uint64(3), true, int64(160000), int64(200000), "anthropic/claude-sonnet-4")
	f.Add("", false, "", false, uint64(0), false, int64(0), int64(0), "")
	f.Add(" 0.54.2", true, "(pending)", true, uint64(1)<<53+1, true, int64(-1), int64(5), "a b")
	f.Add("\xff", true, "ci\n", true, uint64(18446744073709551615), true, int64(9223372036854775807), int64(9223372036854775807), "M/X")
	f.Add("v", true, "\ufeffci", true, uint64(9007199254740993), true, int64(1), int64(0), "")
	f.Add("v", false, "", false, uint64(0), true, int64(1), int64(2), "a b")
	dir, err := os.Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { dir.Close() })
	f.Fuzz(func(t *testing.T, pi string, hasVenue bool, venue string, hasChain bool, chain uint64, hasCtx bool, tokens, window int64, model string) {
		v := Values{PiVersion: pi}
		if hasVenue {
			v.Venue = &venue
		}
		if hasChain {
			v.ResumeChain = &chain
		}
		if hasCtx {
			v.Context = &db.Context{Tokens: tokens, Window: window, Model: model}
		}
		files, _, err := legacyFiles(dir, v)
		measurable := window > 0 && tokens >= 0
		carried := (pi == "" || plainStamp(pi)) && (!hasVenue || plainStamp(venue)) && (!hasChain || chain < 1<<53) &&
			(!hasCtx || !measurable || tokens < 1<<53 && window < 1<<53 && (model == "" || legacy.NormaliseModel(model) == model))
		if err != nil {
			if !errors.Is(err, ErrNotLegacy) || carried {
				t.Fatalf("legacyFiles(%+v) = %v", v, err)
			}
			if n := len(err.Error()); n > notLegacyErrorMax {
				t.Fatalf("legacyFiles of values of %d bytes: an error of %d bytes, want at most %d", len(pi)+len(venue)+len(model), n, notLegacyErrorMax)
			}
			return
		}
		read := func(name string) (string, bool, bool) {
			for _, lf := range files {
				if lf.name == name {
					if lf.content == nil {
						return "", false, true
					}
					got, ok := legacy.SidecarValue([]byte(*lf.content))
					return got, ok, true
				}
			}
			return "", false, false
		}
		if got, ok, _ := read(legacy.PiVersionName); pi != "" && (!ok || got != pi) || pi == "" && ok && got != "" {
			t.Fatalf("pi version %q reads back as %q %v", pi, got, ok)
		}
		if got, ok, listed := read(legacy.VenueName); !listed || hasVenue && (!ok && venue != "" || got != venue) || !hasVenue && ok {
			t.Fatalf("venue %q (given %v) reads back as %q %v", venue, hasVenue, got, ok)
		}
		if got, ok, listed := read(legacy.ResumeChainName); !listed || hasChain && legacy.ParseResumeChain(got) != chain || !hasChain && ok {
			t.Fatalf("chain %d (given %v) reads back as %q %v", chain, hasChain, got, ok)
		}
		got, ok, listed := read(legacy.ContextName)
		if !listed || (!hasCtx || !measurable) && ok {
			t.Fatalf("context %d %d %q (given %v) written as %q", tokens, window, model, hasCtx, got)
		}
		if hasCtx && measurable {
			c, cok := legacy.ParseContext(got)
			if !ok || !cok || c.Tokens != tokens || c.Window != window || c.Model != model {
				t.Fatalf("context %d %d %q reads back as %q: %+v %v", tokens, window, model, got, c, cok)
			}
		}
	})
}
