package db

import (
	"math"
	"testing"
	"time"
)

// A meta.db made by a host whose clock reads past 2262 (the last time an
// int64 of nanoseconds holds) records its creation as that last time, in
// the future as the clock was, as the store records a promotion then
// (before: UnixNano wrapped it, and dump showed the file created in 1715).
func TestCreatedPast2262IsTheLastTimeHeld(t *testing.T) {
	for _, c := range []struct {
		now  time.Time
		want int64
	}{
		{time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64},
		{time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64},
	} {
		kd := newKeyDir(t)
		d, err := OpenWriter(kd.dir, kd.db, Options{Now: func() time.Time { return c.now }})
		if err != nil {
			t.Fatal(err)
		}
		var m Meta
		err = d.View(func(tx *Tx) (err error) { m, err = tx.Meta(); return err })
		d.Close()
		if err != nil || m.Created != c.want {
			t.Errorf("made at %v: created %d, %v; want %d", c.now, m.Created, err, c.want)
		}
	}
}
