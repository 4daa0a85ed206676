package main

import (
	"encoding/json"
	"testing"
)

// A name that is not UTF-8 reads the same in every JSON line whichever Go
// built the binary (docs/json.md: U+FFFD, written \ufffd, for each byte
// that is not UTF-8). encoding/json writes the stand-in as the escape up
// to Go 1.26 and as the raw character from Go 1.27; zerolog (stderr's
// JSON) may pass the byte itself. Each of the three comes out as the
// escape, and decodes to the same string.
func TestANameNotUTF8ReadsTheSameWhateverGoBuiltIt(t *testing.T) {
	const want = `{"key":"bad\ufffdname"}`
	for form, in := range map[string]string{
		"escaped (encoding/json to Go 1.26)":        `{"key":"bad\ufffdname"}`,
		"raw (encoding/json from Go 1.27)":          "{\"key\":\"bad\uFFFDname\"}",
		"the byte itself (a writer that passes it)": "{\"key\":\"bad\xffname\"}",
	} {
		if got := string(escapeJSON([]byte(in))); got != want {
			t.Errorf("%s: %s, want %s", form, got, want)
		}
	}
	line, err := jsonLine(map[string]string{"key": "bad\xffname"})
	if err != nil || string(line) != want+"\n" {
		t.Fatalf("jsonLine of a name with a byte 0xff: %q, %v; want %s", line, err, want)
	}
	var v struct{ Key string }
	if err := json.Unmarshal(line, &v); err != nil || v.Key != "bad\uFFFDname" {
		t.Errorf("%s decodes to %q, %v; want bad\uFFFDname", line, v.Key, err)
	}
}
