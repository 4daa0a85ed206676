package etcdtest

import "testing"

// dirWatch is a test whose first TempDir also registers a look at the
// cluster's members right after the removal testing registers with that
// call: cleanups run last in, first out, so the look runs just before the
// test's temporary dirs go.
type dirWatch struct {
	*testing.T
	c       **Cluster
	watched bool
	running *[]string // the members found running then
}

func (w *dirWatch) TempDir() string {
	d := w.T.TempDir()
	if !w.watched {
		w.watched = true
		w.T.Cleanup(func() {
			for _, m := range (*w.c).members {
				if m.etcd != nil {
					*w.running = append(*w.running, m.name)
				}
			}
		})
	}
	return d
}

// A cluster's members are stopped before the test's temporary dirs, their
// data dirs, are removed. Removed first, a member still running found its
// snap dir gone at its next purge (every 30 s) and etcd's fatal error
// ended the whole test binary ("failed to purge snap db file"), as it did
// once at the end of a fleet test that ran for minutes.
func TestMembersStopBeforeTheirDataDirsGo(t *testing.T) {
	var c *Cluster
	var running []string
	t.Run("cluster", func(t *testing.T) {
		c = Start1(&dirWatch{T: t, c: &c, running: &running})
	})
	if len(running) > 0 {
		t.Fatalf("members %v still running when the test's temporary dirs were removed", running)
	}
}
