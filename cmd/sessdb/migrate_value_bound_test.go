package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/migrate"
)

// A migration's human line quotes a key's stamps as an error quotes a
// value: whole up to 64 bytes, else their head and their length. Before,
// migrate --from etcd's line for a key whose record holds a 1.2 MB
// pi-version (or venue, or context model: etcd takes them) repeated it
// whole, a line of 1.2 MB. The JSON keeps each whole.
func TestAMigrationsLineBoundsTheValuesItQuotes(t *testing.T) {
	huge := strings.Repeat("9", 1200*1000)
	venue := "v" + huge
	r := migrate.Report{Key: strings.Repeat("a", 32), Action: migrate.Migrated, Values: &migrate.Values{
		PiVersion: "p" + huge, Venue: &venue, Context: &db.Context{Tokens: 1, Window: 2, Model: "m" + huge},
	}}
	var out bytes.Buffer
	if err := migrateText(&out, r); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	if len(line) > 600 {
		t.Errorf("the line is %d bytes; want the values bounded", len(line))
	}
	for _, want := range []string{
		`venue "v` + huge[:63] + `"…(1200001 bytes)`,
		`pi-version "p` + huge[:63] + `"…(1200001 bytes)`,
		"m" + huge[:63] + "…(1200001 bytes)",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the line does not say %.90q…", want)
		}
	}
	short := "0.58.3"
	r.Values = &migrate.Values{PiVersion: short, Venue: &short}
	out.Reset()
	if err := migrateText(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `venue "0.58.3", pi-version "0.58.3"`) {
		t.Errorf("short values: %q; want them whole", out.String())
	}
	b, err := json.Marshal(migrate.Values{PiVersion: "p" + huge})
	if err != nil || !bytes.Contains(b, []byte("p"+huge)) {
		t.Error("the JSON does not keep the pi-version whole")
	}
}
