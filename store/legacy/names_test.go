package legacy

import "testing"

// The legacy writer's names, and look-alikes that are not: what IsTemp
// takes, migrate removes and reap may remove with an expired key, so a
// look-alike taken would be someone else's file deleted.
func TestIsTempTakesOnlyTheLegacyWritersTemps(t *testing.T) {
	for n, want := range map[string]bool{
		"current.jsonl.4242.0.incoming":        true,
		"current.jsonl.1.12345678901.incoming": true,
		"current.jsonl.incoming":               true,
		"pi-version.incoming":                  true,
		"venue.incoming":                       true,
		"resume-chain.incoming":                true,
		"context.incoming":                     true,

		"x.incoming":                   false,
		"notes.incoming":               false,
		"lock.incoming":                false, // the lock is made by open(wx), never through a temp
		"meta.db.incoming":             false,
		".incoming":                    false,
		"incoming":                     false,
		"current.jsonl":                false,
		"current.jsonl.4242.incoming":  false,
		"current.jsonl.bak.incoming":   false,
		"current.jsonl.1.2.3.incoming": false,
		"current.jsonl..0.incoming":    false,
		"current.jsonl.1..incoming":    false,
		"current.jsonl.-1.0.incoming":  false,
		"current.jsonl.1.0x1.incoming": false,
		// The bytes either side of '0'..'9' are not digits.
		"current.jsonl.1:.0.incoming": false,
		"current.jsonl.1.:.incoming":  false,
		"current.jsonl.1.0/.incoming": false,
		"current.jsonl.1.0.incoming ": false,
		"venue.incoming.bak":          false,
		"Venue.incoming":              false,
		"venue.INCOMING":              false,
		"venue":                       false,
	} {
		if got := IsTemp(n); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", n, got, want)
		}
	}
}

func TestIsNameIsTheSidecarsTheLockAndTheTemps(t *testing.T) {
	for n, want := range map[string]bool{
		"pi-version": true, "venue": true, "resume-chain": true, "context": true, "lock": true,
		"venue.incoming": true, "current.jsonl.7.0.incoming": true,
		"current.jsonl": false, "meta.db": false, "x.incoming": false, "notes.txt": false, "": false,
	} {
		if got := IsName(n); got != want {
			t.Errorf("IsName(%q) = %v, want %v", n, got, want)
		}
	}
	names := SidecarNames()
	names[0] = "changed"
	if SidecarNames()[0] != PiVersionName {
		t.Error("SidecarNames shares its slice with its callers")
	}
}
