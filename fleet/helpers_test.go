package fleet

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"sessdb/internal/etcdtest"
)

// childEnv marks a re-exec'd copy of this test binary that runs as one
// worker process of a fault test (see runChild).
const childEnv = "SESSDB_FLEET_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	etcdtest.Main(m)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
