package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/store"
)

// The deep check child names the key dir it checked (opened by the key's
// name), so that check judges by its answer only the dir it holds itself
// (store.DeepResult): without the name, a swap of the key dir while the
// child ran made another dir's damage count as proof about the key's.
func TestCheckChildNamesTheKeyDirItChecked(t *testing.T) {
	root := t.TempDir()
	key := store.Key("github", "child", "dir")
	dir := filepath.Join(root, key)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	kd.Close()
	var out bytes.Buffer
	if code := runCheckChild([]string{root}, strings.NewReader(key+"\n"), &out); code != exitOK {
		t.Fatalf("child exited %d: %s", code, out.String())
	}
	lines := bufio.NewScanner(&out)
	var answer childAnswer
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "{") {
			if err := json.Unmarshal(lines.Bytes(), &answer); err != nil {
				t.Fatal(err)
			}
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	var fst unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, db.FileName), &fst); err != nil {
		t.Fatal(err)
	}
	if answer.Key != key || len(answer.Problems) != 0 || answer.Incomplete != "" || answer.DirDev != uint64(st.Dev) || answer.DirIno != uint64(st.Ino) {
		t.Fatalf("child answered %+v; want no problems in dir dev %d ino %d", answer, st.Dev, st.Ino)
	}
	// And the meta.db it checked (renamed over and back while it ran, it
	// would be another file's result).
	if answer.FileDev != uint64(fst.Dev) || answer.FileIno != uint64(fst.Ino) {
		t.Fatalf("child answered %+v; want meta.db dev %d ino %d named", answer, fst.Dev, fst.Ino)
	}
}
