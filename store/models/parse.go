package models

import (
	"io"
	"os"
	"syscall"
)

// MaxFileBytes bounds a models file. pi's own are a few hundred bytes to a
// few kilobytes; 4 MiB leaves room for thousands of custom models while
// keeping a wrong path (a log, an image) from being read whole.
const MaxFileBytes = 4 << 20

// defaultWindow is the context window pi gives a custom model that states
// none.
const defaultWindow = 128000

// Load reads the models file at path and returns pi's built-in models
// merged with it as pi merges them (see Parse). The file is opened without
// blocking and must be a regular file of at most MaxFileBytes. A file that
// does not exist is an error wrapping fs.ErrNotExist: pi would go on with
// its built-in models, which a caller that wants pi's behaviour gets from
// Builtin.
func Load(path string) (*Registry, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{File: path, Err: ErrNotRegular}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: path, Err: ErrTooLarge}
	}
	return Parse(path, data)
}

// Parse reads a models file in pi 0.58.3's models.json format, named name
// in errors, and returns pi's built-in models merged with it:
//
//   - providers.<p>.modelOverrides.<id>.contextWindow replaces the window of
//     the built-in model <p>/<id> (an override of a model that is not built
//     in does nothing);
//   - each of providers.<p>.models[] is the model <p>/<id>, with its
//     contextWindow or pi's default of 128000; it replaces a built-in model
//     of the same provider and id whole (its overrides go with it), and a
//     later entry replaces an earlier one.
//
// The file is judged as pi judges it: JSON that JSON.parse accepts, the
// shape pi's schema requires (every member pi knows, of the type it wants;
// members pi does not know are ignored, as pi ignores them), and pi's own
// checks (a provider that defines models names a baseUrl and an apiKey,
// every model an api, at its level or its provider's; a custom model's
// contextWindow and maxTokens are positive; a provider without models says
// something: a baseUrl, a compat, or model overrides). Where pi would
// reject the file the error is an *Error wrapping ErrMalformed, saying
// where. One rule is stricter than pi: a context window must be a whole
// number (pi would take 128000.5 as it is; no provider has one, so it is
// taken for a typo rather than rounded).
func Parse(name string, data []byte) (*Registry, error) {
	c := checker{file: name}
	root, err := c.decode(data)
	if err != nil {
		return nil, err
	}
	providers, err := c.root(root)
	if err != nil {
		return nil, err
	}
	r := &Registry{windows: make(map[key]int64, len(builtin)+16)}
	for k, w := range Builtin().windows {
		r.windows[k] = w
	}
	for _, p := range providers {
		for _, o := range p.overrides {
			k := key{p.name, o.id}
			if _, ok := Builtin().windows[k]; ok && o.hasWindow {
				r.windows[k] = o.window
			}
		}
	}
	for _, p := range providers {
		for _, m := range p.models {
			r.windows[key{p.name, m.id}] = m.window
		}
	}
	return r, nil
}

type provider struct {
	name      string
	models    []customModel
	overrides []override
}

type customModel struct {
	id     string
	window int64
}

type override struct {
	id        string
	window    int64
	hasWindow bool
}
