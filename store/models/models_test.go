package models

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/internal/sharedtest"
)

// piModels is what testdata/pi-models.mjs printed: pi 0.58.3's own
// ModelRegistry on each file of testdata/files, and with no file at all
// under "(none)".
type piModels struct {
	Error   bool               `json:"error"`
	Changed map[string]float64 `json:"changed"` // "provider/id" -> window, where it differs from the built-in one
	Removed []string           `json:"removed"`
}

func loadPiModels(t *testing.T) map[string]piModels {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "PI.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]piModels
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// joined is a registry's table by "provider/id", as pi's answers are keyed.
func joined(r *Registry) map[string]float64 {
	m := make(map[string]float64, len(r.windows))
	for k, w := range r.windows {
		m[k.provider+"/"+k.id] = float64(w)
	}
	return m
}

// The generated table is pi's built-in list, model for model and window for
// window (it would not be if builtin.go were edited by hand or generated
// from another pi).
func TestBuiltinIsPis(t *testing.T) {
	pi := loadPiModels(t)["(none)"].Changed
	got := joined(Builtin())
	if len(pi) == 0 || !maps.Equal(got, pi) {
		t.Errorf("built-in table: %d models, pi lists %d; they differ", len(got), len(pi))
		for k, w := range pi {
			if got[k] != w {
				t.Errorf("  %s: %v here, %v in pi", k, got[k], w)
			}
		}
	}
	if builtinPi != "0.58.3" {
		t.Errorf("table generated from pi %s", builtinPi)
	}
}

// Every model the fixtures end on (per pi's own END-USAGE.json, and the
// synthetic transcripts of store/transcript) has a built-in window, the one
// pi's registry gives it.
func TestFixtureModelWindows(t *testing.T) {
	pi := loadPiModels(t)["(none)"].Changed
	var models []string
	for _, path := range []string{
		filepath.Join(sharedtest.Dir(t, "pi-fixtures"), "END-USAGE.json"),
		filepath.Join("..", "transcript", "testdata", "end", "PI.json"),
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var ends map[string]struct{ Model *string }
		if err := json.Unmarshal(data, &ends); err != nil {
			t.Fatal(err)
		}
		for _, e := range ends {
			if e.Model != nil && !strings.HasPrefix(*e.Model, "undefined/") && !strings.HasSuffix(*e.Model, "/5") {
				models = append(models, *e.Model)
			}
		}
	}
	seen := map[string]bool{}
	for _, m := range models {
		seen[m] = true
		w, ok := Window(m)
		if !ok || float64(w) != pi[m] {
			t.Errorf("Window(%q) = %d, %v; pi's registry: %v", m, w, ok, pi[m])
		}
	}
	if len(seen) < 5 {
		t.Errorf("only %d distinct models looked up: %v", len(seen), seen)
	}
}

// Each models file of testdata/files is judged as pi judges it: refused
// where pi refuses it, and otherwise merged into the same windows as pi's.
func TestParseAgainstPi(t *testing.T) {
	pi := loadPiModels(t)
	builtin := pi["(none)"].Changed
	files, err := filepath.Glob(filepath.Join("testdata", "files", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(pi)-1 {
		t.Fatalf("%d files, %d answers of pi", len(files), len(pi)-1)
	}
	// Stricter than pi, on purpose: a fractional window.
	stricter := map[string]bool{"strict-window-fraction.json": true}
	for _, path := range files {
		name := filepath.Base(path)
		want, ok := pi[name]
		if !ok {
			t.Fatalf("%s: no answer of pi in PI.json", name)
		}
		r, err := Load(path)
		if want.Error || stricter[name] {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) || e.File != path || r != nil {
				t.Errorf("%s: %v (registry %v); pi refuses it, want an *Error wrapping ErrMalformed", name, err, r != nil)
			}
			if stricter[name] && want.Error {
				t.Errorf("%s: pi refuses it too: not a case where this package is stricter", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v; pi loads it", name, err)
			continue
		}
		expect := maps.Clone(builtin)
		maps.Copy(expect, want.Changed)
		for _, k := range want.Removed {
			delete(expect, k)
		}
		if got := joined(r); !maps.Equal(got, expect) {
			for k, w := range expect {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("%s: %s = %v (present %v), pi %v", name, k, g, ok, w)
				}
			}
			for k, g := range got {
				if _, ok := expect[k]; !ok {
					t.Errorf("%s: %s = %v, not in pi", name, k, g)
				}
			}
		}
	}
}

func TestWindowLookup(t *testing.T) {
	r, err := Load(filepath.Join("testdata", "files", "ok-slash-id.json"))
	if err != nil {
		t.Fatal(err)
	}
	zero, err := Load(filepath.Join("testdata", "files", "ok-override-zero.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		r     *Registry
		model string
		want  int64
		ok    bool
	}{
		{r, "proxy/anthropic/claude-x", 64000, true},
		{r, "anthropic/claude-sonnet-4-5", 200000, true},
		{r, "vercel-ai-gateway/zai/glm-5-turbo", 202800, true}, // a built-in id with a '/'
		{r, "Anthropic/claude-sonnet-4-5", 0, false},           // case matters to pi
		{r, "anthropic/claude-sonnet-4-5 ", 0, false},
		{r, "claude-sonnet-4-5", 0, false},
		{r, "", 0, false},
		{r, "/", 0, false},
		{r, "anthropic/", 0, false},
		{zero, "anthropic/claude-sonnet-4-5", 0, false}, // window 0: pi reports no usage
		{zero, "anthropic/claude-opus-4-5", 200000, true},
	}
	for _, c := range cases {
		if w, ok := c.r.Window(c.model); w != c.want || ok != c.ok {
			t.Errorf("Window(%q) = %d, %v; want %d, %v", c.model, w, ok, c.want, c.ok)
		}
	}
	if Builtin().Len() != len(builtin) || r.Len() != len(builtin)+1 {
		t.Errorf("Len: built-in %d, with the file %d; want %d and %d", Builtin().Len(), r.Len(), len(builtin), len(builtin)+1)
	}
}

// An error names the file and the place, and says what is wrong there
// without echoing a value; names from the file come out shortened.
func TestErrorMessages(t *testing.T) {
	long := strings.Repeat("p", 5000)
	secret := strings.Repeat("s3cr3t", 1000)
	// A provider that defines one model m, with the model's members m.
	model := func(m string) string {
		return `{"providers":{"local":{"baseUrl":"http://l","apiKey":"k","api":"a","models":[{"id":"m"` + m + `}]}}}`
	}
	// An override of a built-in model, with the override's members o.
	override := func(o string) string {
		return `{"providers":{"anthropic":{"modelOverrides":{"claude-sonnet-4-5":{"contextWindow":1000` + o + `}}}}}`
	}
	cases := []struct {
		name, data, where string
		problem           string // what Problem says, where a row checks it
	}{
		{"window", `{"providers":{"local":{"baseUrl":"http://l","apiKey":"` + secret + `","api":"a","models":[{"id":"m","contextWindow":"` + secret + `"}]}}}`, `providers["local"].models[0].contextWindow`, "is a string, want a number"},
		// A name is cut after 40 characters, and one of 40 is whole.
		{"long provider name", `{"providers":{"` + long + `":{}}}`, `providers["` + long[:40] + `"...]`, ""},
		{"provider name of 40", `{"providers":{"` + long[:40] + `":{}}}`, `providers["` + long[:40] + `"]`, ""},
		{"syntax", `{"providers": {"x": ` + secret + `}}`, "offset 20", ""},
		{"syntax at the first byte", `x{"providers":{}}`, "offset 0", ""},
		// JSON.parse takes only JSON's own white space after the value.
		{"a byte after the value", `{"providers":{}}x`, "offset 16", "not JSON: more after the value"},
		{"a form feed after the value", "{\"providers\":{}} \t\r\n\f", "offset 20", "not JSON: more after the value"},
		{"an empty file", "", "", "not JSON: the file ends before its value does"},
		{"a file cut short", `{"providers":{"x":`, "", "not JSON: the file ends before its value does"},
		{"header value", `{"providers":{"local":{"baseUrl":"http://l","headers":{"X-Key":12345}}}}`, `providers["local"].headers["X-Key"]`, "is a number, want a string"},
		{"control characters in a name", `{"providers":{"a\u001b[31mb":[]}}`, `providers["a\x1b[31mb"]`, ""},
		// Each member pi's schema types, in a model and in an override.
		{"model cost", model(`,"cost":{"input":"1","output":1,"cacheRead":1,"cacheWrite":1}`), `providers["local"].models[0].cost.input`, "is a string, want a number"},
		{"model reasoning", model(`,"reasoning":"yes"`), `providers["local"].models[0].reasoning`, "is a string, want true or false"},
		{"model maxTokens", model(`,"reasoning":true,"maxTokens":"8k"`), `providers["local"].models[0].maxTokens`, "is a string, want a number"},
		{"model maxTokens of 0", model(`,"maxTokens":0`), `providers["local"].models[0].maxTokens`, "is not positive"},
		{"model window beyond 2^53", model(`,"contextWindow":9007199254740994`), `providers["local"].models[0].contextWindow`, "is out of range"},
		{"override name", override(`,"name":""`), `providers["anthropic"].modelOverrides["claude-sonnet-4-5"].name`, "is an empty string, want a non-empty string"},
		{"override reasoning", override(`,"reasoning":1`), `providers["anthropic"].modelOverrides["claude-sonnet-4-5"].reasoning`, "is a number, want true or false"},
		{"override cost", override(`,"cost":[]`), `providers["anthropic"].modelOverrides["claude-sonnet-4-5"].cost`, "is an array, want an object"},
		{"override cost input", override(`,"cost":{"input":null}`), `providers["anthropic"].modelOverrides["claude-sonnet-4-5"].cost.input`, "is null, want a number"},
	}
	for _, c := range cases {
		_, err := Parse("/etc/pi/models.json", []byte(c.data))
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		msg := err.Error()
		prefix := "models /etc/pi/models.json: " + c.where + ": "
		if c.where == "" {
			prefix = "models /etc/pi/models.json: "
		}
		if e.Where != c.where || !strings.HasPrefix(msg, prefix) {
			t.Errorf("%s: where %q, message %q; want where %q", c.name, e.Where, msg, c.where)
		}
		if c.problem != "" && e.Problem != c.problem {
			t.Errorf("%s: problem %q, want %q", c.name, e.Problem, c.problem)
		}
		if len(msg) > 200 || strings.Contains(msg, "s3cr3t") || strings.ContainsRune(msg, 0x1b) {
			t.Errorf("%s: message echoes the file (%d bytes): %.200q", c.name, len(msg), msg)
		}
	}
}

// What pi takes at the edges of its checks Parse takes too, with the
// window it states: JSON's white space after the value, a window of 1 and
// of 2^53, a maxTokens of 1, an override that states a cost and a window,
// a provider named "" (its models are "/id").
func TestParseTakesWhatPiTakesAtItsEdges(t *testing.T) {
	model := func(m string) string {
		return `{"providers":{"local":{"baseUrl":"http://l","apiKey":"k","api":"a","models":[{"id":"m"` + m + `}]}}}`
	}
	cases := []struct {
		name, data, model string
		want              int64
	}{
		{"white space after the value", "{\"providers\":{}} \t\r\n \n", "anthropic/claude-sonnet-4-5", 200000},
		{"a window of 1", model(`,"contextWindow":1`), "local/m", 1},
		{"a window of 2^53", model(`,"contextWindow":9007199254740992`), "local/m", 1 << 53},
		{"a maxTokens of 1", model(`,"maxTokens":1`), "local/m", defaultWindow},
		{"an override with a cost", `{"providers":{"anthropic":{"modelOverrides":{"claude-sonnet-4-5":{"cost":{"input":3},"contextWindow":1234}}}}}`, "anthropic/claude-sonnet-4-5", 1234},
		{"a provider named \"\"", `{"providers":{"":{"baseUrl":"http://l","apiKey":"k","api":"a","models":[{"id":"m","contextWindow":5000}]}}}`, "/m", 5000},
	}
	for _, c := range cases {
		r, err := Parse("models.json", []byte(c.data))
		if err != nil {
			t.Errorf("%s: %v; pi takes it", c.name, err)
			continue
		}
		if w, ok := r.Window(c.model); w != c.want || !ok {
			t.Errorf("%s: Window(%q) = %d, %v; want %d", c.name, c.model, w, ok, c.want)
		}
	}
}

// Load refuses what is not a small regular file, without blocking on a
// FIFO and without reading a large file whole.
func TestLoadHostile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The bound is 4 MiB, written out: a file of exactly that is read, one
	// byte more is too large.
	exact := filepath.Join(dir, "exact.json")
	if err := os.WriteFile(exact, []byte(`{"providers":{}}`+strings.Repeat(" ", 4<<20-16)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Load(exact); err != nil || r == nil {
		t.Errorf("Load of a file of exactly 4 MiB: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"providers":{}}`+strings.Repeat(" ", 4<<20-15)), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join("..", "..", "..", "..", "..", "nowhere"), link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want error
	}{
		{fifo, ErrNotRegular},
		{dir, ErrNotRegular},
		{big, ErrTooLarge},
		{filepath.Join(dir, "missing.json"), fs.ErrNotExist},
		{link, fs.ErrNotExist},
	}
	for _, c := range cases {
		r, err := Load(c.path)
		if !errors.Is(err, c.want) || r != nil || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Load(%s): %v, want %v naming the path", filepath.Base(c.path), err, c.want)
		}
	}
}

// Whatever the bytes, Parse returns a registry or an *Error, never panics,
// and a registry it returns always holds the built-in models.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "files", "*.json"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("f.json", data)
		var e *Error
		switch {
		case err != nil && (!errors.As(err, &e) || r != nil || len(err.Error()) > 300+len("f.json")):
			t.Fatalf("%v (registry %v)", err, r != nil)
		case err == nil && r.Len() < len(builtin):
			t.Fatalf("%d models, fewer than the built-in ones", r.Len())
		}
	})
}
