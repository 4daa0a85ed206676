package models

import (
	"sync"
)

// Registry maps pi's models, by provider and id, to their context windows.
// It does not change once built and is safe for concurrent use.
type Registry struct {
	windows map[key]int64
}

type key struct{ provider, id string }

type builtinModel struct {
	provider, id string
	window       int64
}

// Builtin returns the registry of pi 0.58.3's built-in models (builtin.go,
// generated from pi's own model list): what pi runs with when no models
// file is given, or when the one given is malformed.
func Builtin() *Registry { return builtinRegistry() }

var builtinRegistry = sync.OnceValue(func() *Registry {
	r := &Registry{windows: make(map[key]int64, len(builtin))}
	for _, m := range builtin {
		r.windows[key{m.provider, m.id}] = m.window
	}
	return r
})

// Window returns the built-in context window of model, "provider/id" as pi
// writes it in a transcript. See Registry.Window.
func Window(model string) (int64, bool) { return Builtin().Window(model) }

// Window returns the context window of model, "provider/id" exactly as pi
// writes it (case matters, as it does to pi's registry). A model id may
// itself hold a '/' ("vercel-ai-gateway/zai/glm-5-turbo"), so every split
// at a '/' is tried, the leftmost first. It reports false for a model the
// registry does not know, and for one whose window is not positive (pi then
// reports no context usage at all).
func (r *Registry) Window(model string) (int64, bool) {
	for i := 0; i < len(model); i++ {
		if model[i] != '/' {
			continue
		}
		if w, ok := r.Lookup(model[:i], model[i+1:]); ok {
			return w, true
		}
	}
	return 0, false
}

// Lookup returns the context window of the model with this provider and
// id, as pi's registry finds it: both compared exactly. It reports false for
// an unknown model and for a window that is not positive.
func (r *Registry) Lookup(provider, id string) (int64, bool) {
	w, ok := r.windows[key{provider, id}]
	if !ok || w <= 0 {
		return 0, false
	}
	return w, true
}

// Len is the number of models the registry knows.
func (r *Registry) Len() int { return len(r.windows) }
