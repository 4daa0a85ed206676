package main

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/store"
	"sessdb/store/transcript"
)

// A promote refused not-a-regular-file unread (the store found a hard
// link there, say) answers bytes null, whatever the staged file is when
// the answer is written: its second name removed in between, the look
// after the store's found one regular file of one name and gave its
// size, for a refusal the store made of a file it never read. One read
// and then refused (the key's dir is a file: Run is set) keeps its size.
func TestARefusalOfAStagedFileUnreadReportsNoBytesWhateverALookFindsAfter(t *testing.T) {
	jobDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(jobDir, store.StagedDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := promoteJSON(store.PromoteResult{Key: "k", Reason: gates.NotARegularFile}, jobDir)
	if out.Bytes != nil {
		t.Errorf("refused not-a-regular-file unread: bytes %d, want null", *out.Bytes)
	}
	out = promoteJSON(store.PromoteResult{Key: "k", Reason: gates.NotARegularFile, Run: transcript.Unchanged}, jobDir)
	if out.Bytes == nil || *out.Bytes != 3 {
		t.Errorf("refused not-a-regular-file once read: bytes %v, want 3", out.Bytes)
	}
	out = promoteJSON(store.PromoteResult{Key: "k", Reason: gates.Superseded, Run: transcript.Unchanged}, jobDir)
	if out.Bytes == nil || *out.Bytes != 3 {
		t.Errorf("superseded: bytes %v, want 3", out.Bytes)
	}
}
