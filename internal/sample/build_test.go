package sample

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sessdb/store"
)

const piVersion = "0.58.3"

// Build writes the sample under root, which must not exist yet.
func Build(root string) error {
	if _, err := os.Lstat(root); err == nil {
		return fmt.Errorf("build sample %s: already exists", root)
	}
	clock := Time
	s, err := store.New(root, store.Options{Now: func() time.Time { return clock }})
	if err != nil {
		return err
	}
	job := store.Job{PiVersion: piVersion, Venue: "local", Model: "anthropic/claude-sonnet-4-5"}
	steps := []struct {
		key  string
		at   time.Time
		job  store.Job
		torn bool
		// tokens is the context the run's last answer reports (its
		// usage), which promote reads back as the reading; 0 is a small
		// one.
		tokens int64
	}{
		// A conversation that resumes: a cold first run whose last line was
		// torn (promoted with its newline restored), then a resumed run.
		{Resumable, Time.Add(-26 * time.Hour), job, true, 48210},
		{Resumable, Time, job, false, 61234},
		// Last promoted a month ago: past the default 14-day TTL.
		{Expired, Time.Add(-30 * 24 * time.Hour), job, false, 0},
		// Five runs in a row: a chain of 4, refused under a bound of 3.
		{LongChain, Time.Add(-5 * time.Hour), job, false, 0},
		{LongChain, Time.Add(-4 * time.Hour), job, false, 0},
		{LongChain, Time.Add(-3 * time.Hour), job, false, 0},
		{LongChain, Time.Add(-2 * time.Hour), job, false, 0},
		{LongChain, Time.Add(-1 * time.Hour), job, false, 171000},
		// Promoted by sessdb on podman, with the old worker's files left.
		{Mixed, Time.Add(-3 * 24 * time.Hour), store.Job{PiVersion: piVersion, Venue: "podman", Model: "anthropic/claude-opus-4-5"}, false, 0},
	}
	for i, st := range steps {
		clock = st.at
		if err := run(s, st.key, st.job, st.torn, st.tokens, i); err != nil {
			return err
		}
	}
	if err := writeLegacyKey(filepath.Join(root, Legacy), Time.Add(-6*time.Hour)); err != nil {
		return err
	}
	mixed := filepath.Join(root, Mixed)
	for name, v := range map[string]string{"venue": "local", "pi-version": "0.57.1", "resume-chain": "7"} {
		if err := os.WriteFile(filepath.Join(mixed, name), []byte(v), 0o600); err != nil {
			return err
		}
	}
	// Something an operator left that is not a key.
	return os.WriteFile(filepath.Join(root, "README.txt"), []byte("not a key dir\n"), 0o600)
}

// run is one job: resolve, the agent appends a turn, promote.
func run(s *store.Store, key string, job store.Job, torn bool, tokens int64, n int) error {
	jobDir, err := os.MkdirTemp("", "sessdb-sample-job-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(jobDir)
	job.ID = fmt.Sprintf("job-%03d", n+1)
	sess, err := s.Resolve(key, job, jobDir)
	if err != nil {
		return err
	}
	p := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		data = []byte(header(key))
	}
	data = append(data, turn(n, lastEntry(data), tokens)...)
	if torn {
		data = append(data, `{"type":"message","id":"ffffff`...)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return err
	}
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: piVersion})
	if err != nil {
		return err
	}
	if !res.Promoted {
		return fmt.Errorf("sample: promotion of %s refused: %s", key, res.Reason)
	}
	return nil
}

func header(key string) string {
	return fmt.Sprintf(`{"type":"session","version":3,"id":"%s-%s-%s-%s-%s","timestamp":"%s","cwd":"/workspace"}`+"\n",
		key[:8], key[8:12], key[12:16], key[16:20], key[20:], Time.Add(-40*24*time.Hour).Format("2006-01-02T15:04:05.000Z"))
}

// turn is one user prompt and one assistant answer whose usage reports a
// context of tokens (or a small one, for 0), chained onto the entry
// parent ("" for the first).
func turn(n int, parent string, tokens int64) string {
	id := func(k int) string { return fmt.Sprintf("%08x", 0x5e550000+2*n+k) }
	if tokens == 0 {
		tokens = int64(1000*(n+1) + 52)
	}
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	user := fmt.Sprintf(`{"type":"message","id":"%s","parentId":%s,"timestamp":"%s","message":{"role":"user","content":[{"type":"text","text":"Review feedback %d: please address it."}],"timestamp":%d}}`,
		id(0), p, Time.Format(time.RFC3339), n+1, Time.UnixMilli())
	asst := fmt.Sprintf(`{"type":"message","id":"%s","parentId":"%s","timestamp":"%s","message":{"role":"assistant","content":[{"type":"text","text":"Done: addressed feedback %d."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":12,"output":40,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop","timestamp":%d}}`,
		id(1), id(0), Time.Format(time.RFC3339), n+1, tokens-52, tokens, Time.UnixMilli())
	return user + "\n" + asst + "\n"
}

// lastEntry is the id of the last whole entry line of a transcript, "" for
// a header alone.
func lastEntry(data []byte) string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		var e struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal([]byte(lines[i]), &e) == nil && e.Type != "session" && e.ID != "" {
			return e.ID
		}
	}
	return ""
}

// writeLegacyKey writes a key dir as the legacy file-per-sidecar worker
// left it.
func writeLegacyKey(dir string, mtime time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := map[string]string{
		store.TranscriptName: header(filepath.Base(dir)) + turn(90, "", 0) + turn(91, fmt.Sprintf("%08x", 0x5e550000+2*90+1), 0),
		"pi-version":         piVersion,
		"venue":              "local",
		"resume-chain":       "2",
		"context":            "48000 200000 anthropic/claude-sonnet-4-5",
	}
	for name, v := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			return err
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			return err
		}
	}
	return nil
}

// Layouts is what each sample key must read as.
func Layouts() map[string]store.Layout {
	return map[string]store.Layout{
		Resumable: store.LayoutDB, Expired: store.LayoutDB, LongChain: store.LayoutDB,
		Legacy: store.LayoutLegacy, Mixed: store.LayoutMixed,
	}
}
