package db

import "testing"

// A writer's open of a meta.db with one name reads nothing more than
// before the copy was added: the key dir is listed for create's leftover
// temps only when meta.db has another name, which takes a copy or not.
// (The listing ran at every writer's open, every promotion's, for the
// answer "no copy" its link count already gave.)
func TestAWriterListsTheKeyDirOnlyForAHardLinkedMetaDB(t *testing.T) {
	kd := makeDB(t, 0)
	listed := 0
	testHookTempNames = func() { listed++ }
	defer func() { testHookTempNames = nil }()
	putVenue(t, kd, "elsewhere")
	if listed != 0 {
		t.Errorf("a writer's open of a meta.db with one name listed the key dir %d times, want 0", listed)
	}
	hardLink(t, kd)
	putVenue(t, kd, "again")
	if listed != 1 {
		t.Errorf("a writer's open of a hard-linked meta.db listed the key dir %d times, want 1", listed)
	}
}
