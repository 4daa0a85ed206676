package fleet

import (
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
)

// A migration's conflict remedy is command lines to paste, the sessions
// root the last argument of sessdb check's. A root that begins with "-"
// (a relative one, given as `migrate -- -old` or in PI_SESSIONS_DIR) was
// put there as it is, and check took it for a flag: "flag provided but
// not defined", exit 2, nothing quarantined. It comes after "--", as the
// etcdctl lines' keys do, one shell word as every root is.
func TestAConflictRemedyGivesARootThatLooksLikeAFlagAfterDashDash(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	for _, c := range []struct{ root, want string }{
		{"-old", "sessdb check --repair --quarantine KEY -- -old)"},
		{"-old sessions", "sessdb check --repair --quarantine KEY -- '-old sessions')"},
		{"/var/lib/pi/sessions", "sessdb check --repair --quarantine KEY /var/lib/pi/sessions)"},
		{"/srv/it's here", `sessdb check --repair --quarantine KEY '/srv/it'\''s here')`},
	} {
		if got := f.b.ConflictRemedy(c.root); !strings.Contains(got, c.want) {
			t.Errorf("the remedy for a root %q:\n%s\nwant it to hold %q", c.root, got, c.want)
		}
	}
}
