package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/sharedtest"
	"sessdb/store/models"
)

// The reading and the model a promotion stores are pi 0.58.3's own at the
// end of the run (issue 11): END-USAGE.json holds what pi itself computed
// for every shared transcript (../shared/tools/pi-end-usage.mjs).
func TestPromotedReadingIsPisOwn(t *testing.T) {
	fixtures := sharedtest.Dir(t, "pi-fixtures")
	raw, err := os.ReadFile(filepath.Join(fixtures, "END-USAGE.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]struct {
		Tokens *int64  `json:"tokens"`
		Model  *string `json:"model"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	real := sharedtest.Dir(t, "pi")
	checked := 0
	for name, w := range want {
		path := filepath.Join(fixtures, name)
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(real, name)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, data)
			res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if len(data) == 0 {
				if res.Reason != gates.Absent {
					t.Fatalf("an empty file: %+v", res)
				}
				return
			}
			if !res.Promoted {
				t.Fatalf("promote: %+v", res)
			}
			c := contextOf(t, root, testKey)
			model := ""
			if w.Model != nil {
				model = *w.Model
			}
			window, known := models.Builtin().Window(model)
			switch {
			case w.Tokens == nil || !known:
				if c != nil {
					t.Fatalf("pi reports %v tokens of %q (window known: %v), yet a reading was stored: %+v", w.Tokens, model, known, c)
				}
			case c == nil:
				t.Fatalf("pi reports %d tokens of %s, no reading was stored", *w.Tokens, model)
			case c.Tokens != *w.Tokens || c.Model != model || c.Window != window:
				t.Fatalf("stored %d of %d (%s), pi reports %d of %s", c.Tokens, c.Window, c.Model, *w.Tokens, model)
			}
		})
		checked++
	}
	t.Logf("%d transcripts: the stored reading is pi's own", checked)
}
