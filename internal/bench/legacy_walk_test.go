package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	slegacy "sessdb/store/legacy"
	"sessdb/store/transcript"
)

// KeyInfo is what the legacy dump walk learns about one key dir.
type KeyInfo struct {
	Name       string
	Exists     bool
	Size       int64
	HeaderOK   bool
	HeaderID   string
	Sidecars   [4]string // in the order of legacySidecars; "" when it has no value
	HasSidecar [4]bool
}

// legacyWalk is the legacy dump over root: list it, then for every entry lstat
// the transcript, read its first line (bounded, as the sessdb dump does),
// and read the four sidecars with the legacy reader. With workers > 1 the
// sorted names are split into that many contiguous runs, walked at the
// same time; visit must then be safe for concurrent use.
func legacyWalk(root string, workers int, visit func(KeyInfo)) error {
	d, err := os.Open(root)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	workers = max(1, min(workers, len(names)))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		part := names[w*len(names)/workers : (w+1)*len(names)/workers]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, name := range part {
				visit(inspectKey(filepath.Join(root, name), name))
			}
		}()
	}
	wg.Wait()
	return nil
}

func inspectKey(keyDir, name string) KeyInfo {
	k := KeyInfo{Name: name}
	p := filepath.Join(keyDir, transcriptName)
	var st unix.Stat_t
	if unix.Lstat(p, &st) == nil {
		k.Exists, k.Size = true, st.Size
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > 0 {
			if f, err := os.Open(p); err == nil {
				h, err := transcript.ReadHeader(f)
				f.Close()
				k.HeaderOK, k.HeaderID = err == nil && h.IsSession(), h.ID
			}
		}
	}
	for i, s := range legacySidecars {
		k.Sidecars[i], k.HasSidecar[i] = readSidecar(keyDir, s)
	}
	return k
}

// legacySeed writes a legacy key dir as the legacy promotion leaves it: the
// transcript and the four sidecars. It is a fixture writer, not a protocol.
func legacySeed(keyDir string, data []byte, piVersion, venue string, chain uint64, ctx string) error {
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return err
	}
	files := []struct{ name, v string }{
		{transcriptName, string(data)},
		{slegacy.PiVersionName, piVersion},
		{slegacy.VenueName, venue},
		{slegacy.ResumeChainName, fmt.Sprint(chain)},
		{slegacy.ContextName, ctx},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(keyDir, f.name), []byte(f.v), 0o644); err != nil {
			return err
		}
	}
	return nil
}
