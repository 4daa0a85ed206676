package models_test

import (
	"errors"
	"fmt"
	"log"

	"sessdb/store/models"
)

// The window of a model as a transcript names it, from pi's built-in table.
// An id may itself hold a '/', and case matters, as it does to pi.
func ExampleWindow() {
	for _, m := range []string{"anthropic/claude-sonnet-4-5", "vercel-ai-gateway/zai/glm-5-turbo", "Anthropic/claude-sonnet-4-5"} {
		w, ok := models.Window(m)
		fmt.Println(m, w, ok)
	}
	// Output:
	// anthropic/claude-sonnet-4-5 200000 true
	// vercel-ai-gateway/zai/glm-5-turbo 202800 true
	// Anthropic/claude-sonnet-4-5 0 false
}

// A models.json merged over the built-in models as pi merges it: an
// override changes a built-in window, a custom model without a window gets
// pi's default of 128000, and the built-in models stay known.
func ExampleParse() {
	const file = `{
  "providers": {
    "anthropic": {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 1000000}}},
    "local": {
      "baseUrl": "http://127.0.0.1:8080/v1", "apiKey": "none", "api": "openai-completions",
      "models": [{"id": "qwen3-coder", "contextWindow": 65536}, {"id": "tiny"}]
    }
  }
}`
	r, err := models.Parse("models.json", []byte(file))
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range []string{"anthropic/claude-sonnet-4-5", "local/qwen3-coder", "local/tiny", "openai/gpt-5"} {
		w, ok := r.Window(m)
		fmt.Println(m, w, ok)
	}

	// A file pi would reject says where; pi then runs on Builtin alone.
	_, err = models.Parse("models.json", []byte(`{"providers": {"local": {"models": [{"id": "x", "contextWindow": 0}]}}}`))
	fmt.Println(errors.Is(err, models.ErrMalformed))
	fmt.Println(err)
	// Output:
	// anthropic/claude-sonnet-4-5 1000000 true
	// local/qwen3-coder 65536 true
	// local/tiny 128000 true
	// openai/gpt-5 400000 true
	// true
	// models models.json: providers["local"].models[0].contextWindow: is not positive (malformed models file)
}
