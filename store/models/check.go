package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// checker judges a models file the way pi would load it, naming the file
// in every error.
type checker struct{ file string }

// fail reports a problem at where. Every problem is ErrMalformed: pi meets
// each of them the same way, reporting the error and using no models file.
func (c *checker) fail(where, problem string) error {
	return &Error{File: c.file, Where: where, Problem: problem, Err: ErrMalformed}
}

// decode parses data as JSON.parse would: one value, JSON whitespace around
// it, duplicate keys resolved to the last. Numbers are kept as written.
func (c *checker) decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// Numbers stay as written: decoded to float64, 1e400 is an error
	// ("cannot unmarshal number"), where JSON.parse reads Infinity and pi
	// goes on to judge the member (number does the same).
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			// Offset counts the byte that broke the syntax; the
			// place named is that byte's own offset.
			return nil, c.fail("offset "+strconv.FormatInt(max(syn.Offset-1, 0), 10), "not JSON: "+syn.Error())
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, c.fail("", "not JSON: the file ends before its value does")
		}
		return nil, c.fail("", "not JSON: "+err.Error())
	}
	// A Decoder stops after one value; JSON.parse refuses a file with
	// anything but whitespace after it.
	rest := data[dec.InputOffset():]
	if i := bytes.IndexFunc(rest, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); i >= 0 {
		return nil, c.fail("offset "+strconv.FormatInt(dec.InputOffset()+int64(i), 10), "not JSON: more after the value")
	}
	return v, nil
}

// root checks the top of the file: an object with a "providers" object.
func (c *checker) root(v any) ([]provider, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, c.fail("", "the file is "+kind(v)+", want an object")
	}
	pv, ok := obj["providers"]
	if !ok {
		return nil, c.fail("", `no "providers" member`)
	}
	pm, ok := pv.(map[string]any)
	if !ok {
		return nil, c.fail("providers", "is "+kind(pv)+", want an object")
	}
	// Providers in name order: each writes only its own keys, so the
	// order cannot change a window, and a fixed one makes the first
	// problem reported the same on every run.
	var out []provider
	for _, name := range sortedKeys(pm) {
		p, err := c.provider("providers"+member(name), name, pm[name])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// provider checks one provider against pi's schema, then against pi's own
// checks (validateConfig).
func (c *checker) provider(at, name string, v any) (provider, error) {
	p := provider{name: name}
	obj, ok := v.(map[string]any)
	if !ok {
		return p, c.fail(at, "is "+kind(v)+", want an object")
	}
	for _, f := range []string{"baseUrl", "apiKey", "api"} {
		if err := c.optString(at, obj, f); err != nil {
			return p, err
		}
	}
	if err := c.common(at, obj, "headers", "compat"); err != nil {
		return p, err
	}
	if err := c.optBool(at, obj, "authHeader"); err != nil {
		return p, err
	}
	var models []any
	if mv, ok := obj["models"]; ok {
		if models, ok = mv.([]any); !ok {
			return p, c.fail(at+".models", "is "+kind(mv)+", want an array")
		}
	}
	for i, mv := range models {
		m, err := c.model(at+".models["+strconv.Itoa(i)+"]", mv)
		if err != nil {
			return p, err
		}
		p.models = append(p.models, m)
	}
	if ov, ok := obj["modelOverrides"]; ok {
		om, ok := ov.(map[string]any)
		if !ok {
			return p, c.fail(at+".modelOverrides", "is "+kind(ov)+", want an object")
		}
		for _, id := range sortedKeys(om) {
			o, err := c.override(at+".modelOverrides"+member(id), id, om[id])
			if err != nil {
				return p, err
			}
			p.overrides = append(p.overrides, o)
		}
	}

	// pi's validateConfig.
	_, hasBaseURL := obj["baseUrl"]
	_, hasAPIKey := obj["apiKey"]
	_, hasAPI := obj["api"]
	_, hasCompat := obj["compat"]
	if len(models) == 0 {
		if !hasBaseURL && !hasCompat && len(p.overrides) == 0 {
			return p, c.fail(at, `defines no models and none of "baseUrl", "compat", "modelOverrides"`)
		}
		return p, nil
	}
	if !hasBaseURL {
		return p, c.fail(at, `defines models but no "baseUrl"`)
	}
	if !hasAPIKey {
		return p, c.fail(at, `defines models but no "apiKey"`)
	}
	for i, mv := range models {
		if _, ok := mv.(map[string]any)["api"]; !ok && !hasAPI {
			return p, c.fail(at+".models["+strconv.Itoa(i)+"]", `no "api", at the model or the provider`)
		}
	}
	return p, nil
}

// model checks one entry of a provider's models array and returns its id
// and window (pi's default when it states none).
func (c *checker) model(at string, v any) (customModel, error) {
	var m customModel
	obj, ok := v.(map[string]any)
	if !ok {
		return m, c.fail(at, "is "+kind(v)+", want an object")
	}
	idv, ok := obj["id"]
	if !ok {
		return m, c.fail(at, `no "id"`)
	}
	if m.id, ok = idv.(string); !ok || m.id == "" {
		return m, c.fail(at+".id", "is "+kind(idv)+", want a non-empty string")
	}
	for _, f := range []string{"name", "api", "baseUrl"} {
		if err := c.optString(at, obj, f); err != nil {
			return m, err
		}
	}
	if err := c.common(at, obj, "reasoning", "input", "maxTokens", "headers", "compat"); err != nil {
		return m, err
	}
	if cv, ok := obj["cost"]; ok {
		cost, ok := cv.(map[string]any)
		if !ok {
			return m, c.fail(at+".cost", "is "+kind(cv)+", want an object")
		}
		for _, f := range []string{"input", "output", "cacheRead", "cacheWrite"} {
			if _, ok := cost[f]; !ok {
				return m, c.fail(at+".cost", "no "+strconv.Quote(f))
			}
			if err := c.optNumber(at+".cost", cost, f); err != nil {
				return m, err
			}
		}
	}
	m.window = defaultWindow
	if w, ok, err := c.window(at, obj); err != nil {
		return m, err
	} else if ok {
		if w <= 0 {
			return m, c.fail(at+".contextWindow", "is not positive")
		}
		m.window = w
	}
	if n, ok := obj["maxTokens"].(json.Number); ok && number(n) <= 0 {
		return m, c.fail(at+".maxTokens", "is not positive")
	}
	return m, nil
}

// override checks one entry of a provider's modelOverrides and returns
// its window, if it states one.
func (c *checker) override(at, id string, v any) (override, error) {
	o := override{id: id}
	obj, ok := v.(map[string]any)
	if !ok {
		return o, c.fail(at, "is "+kind(v)+", want an object")
	}
	if err := c.optString(at, obj, "name"); err != nil {
		return o, err
	}
	if err := c.common(at, obj, "reasoning", "input", "maxTokens", "headers", "compat"); err != nil {
		return o, err
	}
	if cv, ok := obj["cost"]; ok {
		cost, ok := cv.(map[string]any)
		if !ok {
			return o, c.fail(at+".cost", "is "+kind(cv)+", want an object")
		}
		for _, f := range []string{"input", "output", "cacheRead", "cacheWrite"} {
			if err := c.optNumber(at+".cost", cost, f); err != nil {
				return o, err
			}
		}
	}
	var err error
	o.window, o.hasWindow, err = c.window(at, obj)
	return o, err
}

// common checks the optional members a model, an override and a provider
// share, by name.
func (c *checker) common(at string, obj map[string]any, names ...string) error {
	for _, f := range names {
		v, ok := obj[f]
		if !ok {
			continue
		}
		switch f {
		case "reasoning":
			if err := c.optBool(at, obj, f); err != nil {
				return err
			}
		case "maxTokens":
			if err := c.optNumber(at, obj, f); err != nil {
				return err
			}
		case "compat":
			// pi's compat schema is a union whose second branch is an
			// object with no required member: any object passes.
			if _, ok := v.(map[string]any); !ok {
				return c.fail(at+"."+f, "is "+kind(v)+", want an object")
			}
		case "headers":
			h, ok := v.(map[string]any)
			if !ok {
				return c.fail(at+"."+f, "is "+kind(v)+", want an object")
			}
			for _, k := range sortedKeys(h) {
				if _, ok := h[k].(string); !ok {
					return c.fail(at+"."+f+member(k), "is "+kind(h[k])+", want a string")
				}
			}
		case "input":
			a, ok := v.([]any)
			if !ok {
				return c.fail(at+"."+f, "is "+kind(v)+", want an array")
			}
			for i, x := range a {
				if s, _ := x.(string); s != "text" && s != "image" {
					return c.fail(at+"."+f+"["+strconv.Itoa(i)+"]", `is not "text" or "image"`)
				}
			}
		}
	}
	return nil
}

// window reads an optional contextWindow: a number, which must be whole.
func (c *checker) window(at string, obj map[string]any) (int64, bool, error) {
	v, ok := obj["contextWindow"]
	if !ok {
		return 0, false, nil
	}
	if err := c.optNumber(at, obj, "contextWindow"); err != nil {
		return 0, false, err
	}
	// Beyond 2^53 a float64 no longer holds every integer, and past 2^63
	// the conversion to int64 below has no defined result: a window that
	// large is a typo, not a model.
	f := number(v.(json.Number))
	if math.Abs(f) > 1<<53 {
		return 0, false, c.fail(at+".contextWindow", "is out of range")
	}
	if f != math.Trunc(f) {
		return 0, false, c.fail(at+".contextWindow", "is not a whole number")
	}
	return int64(f), true, nil
}

// optString, optBool and optNumber check an optional member's type; an
// absent member passes.
func (c *checker) optString(at string, obj map[string]any, f string) error {
	v, ok := obj[f]
	if !ok {
		return nil
	}
	if s, ok := v.(string); !ok || s == "" {
		return c.fail(at+"."+f, "is "+kind(v)+", want a non-empty string")
	}
	return nil
}

func (c *checker) optBool(at string, obj map[string]any, f string) error {
	if v, ok := obj[f]; ok {
		if _, ok := v.(bool); !ok {
			return c.fail(at+"."+f, "is "+kind(v)+", want true or false")
		}
	}
	return nil
}

func (c *checker) optNumber(at string, obj map[string]any, f string) error {
	if v, ok := obj[f]; ok {
		if _, ok := v.(json.Number); !ok {
			return c.fail(at+"."+f, "is "+kind(v)+", want a number")
		}
	}
	return nil
}

// number is n as JSON.parse reads it: a value beyond float64's range is
// ±Infinity, one too small to represent is 0.
func number(n json.Number) float64 {
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}

// kind names a JSON value's type, never its contents.
func kind(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		if x == "" {
			return "an empty string"
		}
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// maxName bounds a name quoted from the file in an error.
const maxName = 40

// member is the path step for a member whose name comes from the file:
// quoted, escaped, and shortened past maxName characters.
func member(name string) string {
	if utf8.RuneCountInString(name) > maxName {
		r := []rune(name)
		return "[" + strconv.Quote(string(r[:maxName])) + "...]"
	}
	return "[" + strconv.Quote(name) + "]"
}

// sortedKeys returns m's keys in order: Go's map order changes from run to
// run, and so would the problem an error names first.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
