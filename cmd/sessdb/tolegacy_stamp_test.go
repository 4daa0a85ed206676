package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// --to-legacy as the owner of the root and of the key dir, whose
// transcript another user owns though the runner may write it (root's,
// mode 0666; an ACL grants the same): the run stamps the transcript's
// mtime with the promotion's time, which only the file's owner or root
// may do (futimens with a time), write permission not being enough. The
// dry run fails the key as the run does, and the run fails it before it
// writes anything: the key dir holds what it held.
func TestToLegacyFailsATranscriptItMayNotStampInItsPlan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the transcript away, and nobody to run the migration as")
	}
	w := newNobodysWorker(t)
	w.job("one")
	kd := filepath.Join(w.root, workerKey)
	tr := filepath.Join(kd, "current.jsonl")
	if err := os.Lchown(tr, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tr, 0o666); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		es, err := os.ReadDir(kd)
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, e := range es {
			ns = append(ns, e.Name())
		}
		return ns
	}
	before := names()
	sameFailure(t, w.runAs, workerKey, "--to-legacy over a transcript another user owns", "", "migrate", "--to-legacy", w.root)
	if after := names(); !slices.Equal(before, after) {
		t.Errorf("the key dir held %v, after the run %v; want nothing written", before, after)
	}
}
