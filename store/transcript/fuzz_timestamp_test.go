package transcript

import (
	"regexp"
	"testing"
	"time"
)

// rfc3339 is the shape both ParseTimestamp and Go's time.Parse read the
// same way: a date, a time with seconds, a fraction with a point, a zone.
var rfc3339 = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`)

// FuzzParseTimestamp checks the header timestamp's parser (a transcript's
// header is the container's to write) against Go's own reading of
// RFC 3339 and of a bare date, where both apply: whatever time.Parse
// accepts in those shapes, ParseTimestamp accepts as the same instant cut
// to milliseconds (a JavaScript Date's precision). Whatever it accepts is
// UTC, to the millisecond, and reads back as itself from toISOString's
// form, the one pi writes.
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2026-01-01T00:00:00.000Z", "2026-03-10", "2026-03-10T09:14Z", "2026-03-10T09:14:55.1234567+05:30",
		"2026-02-30T00:00:00Z", "0000-01-01T00:00:00-23:59", "9999-12-31T23:59:59.999+00:00", "2026-03-10T09:14:55.Z", "2026-13-01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseTimestamp(s)
		if again, ok2 := ParseTimestamp(s); ok2 != ok || !again.Equal(got) {
			t.Fatalf("ParseTimestamp(%q) = %v %v, then %v %v", s, got, ok, again, ok2)
		}
		if !ok {
			if !got.IsZero() {
				t.Fatalf("ParseTimestamp(%q) refused it with a time, %v", s, got)
			}
		} else {
			if got.Location() != time.UTC || got.Nanosecond()%int(time.Millisecond) != 0 {
				t.Fatalf("ParseTimestamp(%q) = %v: not UTC to the millisecond", s, got)
			}
			if y := got.Year(); y >= 0 && y <= 9999 {
				iso := got.Format("2006-01-02T15:04:05.000Z")
				if back, ok := ParseTimestamp(iso); !ok || !back.Equal(got) {
					t.Fatalf("ParseTimestamp(%q) = %v, whose ISO form %q reads %v %v", s, got, iso, back, ok)
				}
			}
		}
		var want time.Time
		var err error
		switch {
		case rfc3339.MatchString(s):
			if z := s[len(s)-6:]; (z[0] == '+' || z[0] == '-') && (z[1:3] > "23" || z[4:] > "59") {
				return // an offset of 24 h or more, or of 60 min: Go takes it, ParseTimestamp refuses it (header_test: +24:00)
			}
			want, err = time.Parse(time.RFC3339Nano, s)
		case len(s) == 10:
			want, err = time.Parse(time.DateOnly, s)
		default:
			return
		}
		if err != nil {
			return // Go refuses more (a day past its month's end, rolled over as V8 does)
		}
		want = want.Add(-time.Duration(want.Nanosecond() % int(time.Millisecond))).UTC()
		if !ok || !got.Equal(want) {
			t.Fatalf("ParseTimestamp(%q) = %v %v; time.Parse reads %v", s, got, ok, want)
		}
	})
}
