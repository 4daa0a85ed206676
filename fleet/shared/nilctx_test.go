package shared

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Write and ListOrphans take a nil ctx as context.Background(), as the
// fleet's walks and etcdmeta's requests do: each runs whole, and nothing
// panics. Before, each panicked in the caller (a nil pointer in ctx.Err(),
// Write's at its first chunk).
func TestANilContextIsBackground(t *testing.T) {
	dir := t.TempDir()
	var none context.Context
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"write", func() error {
			_, _, _, err := Write(none, dir, key, 1, strings.NewReader("{}\n"))
			return err
		}},
		{"list orphans", func() error {
			names, _, _, err := listOrphans(none, dir, func(string, string, time.Time) bool { return false }, time.Now().Add(time.Hour))
			if err == nil && len(names) != 1 {
				t.Errorf("list orphans: %v; want the one file written", names)
			}
			return err
		}},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panicked: %v", step.name, p)
				}
			}()
			if err := step.run(); err != nil {
				t.Errorf("%s: %v", step.name, err)
			}
		}()
	}
}
