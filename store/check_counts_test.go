package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// A check's summary counts every finding it delivers, by its severity:
// problems and notices are the lines an operator reads (grep -c), and the
// findings a worker reads from --json. A repair's second look (a meta.db
// moved aside) and an operator action's outcome (accepted, quarantined)
// are findings like the others. They counted in no problem or notice
// ("0 notices" under an "accepted" notice line), and a problem only the
// second look found made remaining larger than problems.
func TestCheckSummaryCountsEveryFindingItDelivers(t *testing.T) {
	for _, c := range []struct {
		name string
		opts func(key string) CheckOptions
		harm func(t *testing.T, root, key string)
	}{
		{"a meta.db moved aside", func(string) CheckOptions { return CheckOptions{Repair: true} }, func(t *testing.T, root, key string) {
			os.Truncate(chkDB(root, key), 0)
		}},
		{"accept", func(key string) CheckOptions { return CheckOptions{Repair: true, Accept: key} }, func(t *testing.T, root, key string) {
			f, err := os.OpenFile(filepath.Join(root, key, TranscriptName), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(string(entryLine("an edit out of band")))
			f.Close()
		}},
		{"accept after a move aside", func(key string) CheckOptions { return CheckOptions{Repair: true, Accept: key} }, func(t *testing.T, root, key string) {
			os.Truncate(chkDB(root, key), 0)
		}},
		{"quarantine", func(key string) CheckOptions { return CheckOptions{Repair: true, Quarantine: key} }, func(t *testing.T, root, key string) {
			os.Truncate(chkDB(root, key), 0)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, c.name)
			c.harm(t, root, key)
			var problems, notices int
			var found []Finding
			sum, err := s.Check(context.Background(), c.opts(key), func(f Finding) error {
				found = append(found, f)
				if f.Severity == SeverityProblem {
					problems++
				} else {
					notices++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Problems != problems || sum.Notices != notices || sum.Remaining > sum.Problems {
				t.Fatalf("summary %+v for %d problems and %d notices delivered: %+v", sum, problems, notices, found)
			}
		})
	}
}
