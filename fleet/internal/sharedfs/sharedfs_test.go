package sharedfs

import (
	"strings"
	"testing"

	"sessdb/internal/durable"
	"sessdb/internal/faults"
)

// While a test runs beside others (faults.Beside), setting the seam
// panics and leaves it as it was: every test's writes go through it.
// Once none does, Use sets it until restore.
func TestUsePanicsWhileATestRunsBeside(t *testing.T) {
	other := otherFS{durable.Disk{}}
	done := faults.Beside()
	msg := func() (msg string) {
		defer func() {
			if r := recover(); r != nil {
				msg, _ = r.(string)
			}
		}()
		Use(other)
		return ""
	}()
	done()
	if !strings.Contains(msg, "beside") {
		t.Errorf("Use with a test beside = panic %q; want it to panic, naming why", msg)
	}
	if _, ok := FS().(durable.Disk); !ok {
		t.Fatalf("FS() after the refused Use = %T; want durable.Disk", FS())
	}
	restore := Use(other)
	if _, ok := FS().(otherFS); !ok {
		t.Errorf("FS() after Use = %T; want the FS given", FS())
	}
	restore()
	if _, ok := FS().(durable.Disk); !ok {
		t.Errorf("FS() after restore = %T; want durable.Disk", FS())
	}
}

// otherFS is an FS told apart from durable.Disk by its type.
type otherFS struct{ durable.Disk }
