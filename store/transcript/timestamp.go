package transcript

import "time"

// ParseTimestamp parses a header timestamp the way the legacy store's
// Date.parse accepted pi's ISO form, and reports ok=false for anything else.
//
// Accepted, as ECMAScript's date-time string format and V8 read them:
//
//	YYYY-MM-DD                                  midnight UTC
//	YYYY-MM-DDTHH:mm[:ss[.fraction]][Z|±HH:mm]  fraction of any length (V8 keeps milliseconds)
//
// Two choices where JavaScript is not a single answer: a date-time without
// a zone is local time to Date.parse, and is read here as UTC (what the
// legacy store saw on a host running in UTC, so the verdict does not depend
// on the host's zone); and a day past the end of its month (2026-02-30) is
// rolled over into the next month, as V8 does, rather than refused. V8's
// fallback parser for other shapes ("Mar 7 2026", RFC 1123) is not
// reproduced: pi only writes toISOString's form.
func ParseTimestamp(s string) (t time.Time, ok bool) {
	p := tsParser{s: s}
	year, ok1 := p.digits(4)
	ok2 := p.lit('-')
	month, ok3 := p.digits(2)
	ok4 := p.lit('-')
	day, ok5 := p.digits(2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, false
	}
	if p.done() {
		return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC), true
	}
	if !p.lit('T') {
		return time.Time{}, false
	}
	hour, ok1 := p.digits(2)
	ok2 = p.lit(':')
	minute, ok3 := p.digits(2)
	if !(ok1 && ok2 && ok3) || hour > 23 || minute > 59 {
		return time.Time{}, false
	}
	sec, nsec := 0, 0
	if p.lit(':') {
		if sec, ok1 = p.digits(2); !ok1 || sec > 59 {
			return time.Time{}, false
		}
		if p.lit('.') {
			if nsec, ok1 = p.fraction(); !ok1 {
				return time.Time{}, false
			}
		}
	}
	loc := time.UTC
	switch {
	case p.done():
	case p.lit('Z'):
	case p.peek() == '+' || p.peek() == '-':
		sign := 1
		if p.peek() == '-' {
			sign = -1
		}
		p.i++
		oh, ok1 := p.digits(2)
		ok2 := p.lit(':')
		om, ok3 := p.digits(2)
		if !(ok1 && ok2 && ok3) || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		loc = time.FixedZone("", sign*(oh*3600+om*60))
	default:
		return time.Time{}, false
	}
	if !p.done() {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, loc).UTC(), true
}

type tsParser struct {
	s string
	i int
}

func (p *tsParser) done() bool { return p.i == len(p.s) }

func (p *tsParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *tsParser) lit(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *tsParser) digits(n int) (int, bool) {
	if p.i+n > len(p.s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(p.s[p.i : p.i+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

// fraction reads one or more digits and returns them as nanoseconds,
// truncated to milliseconds as a JavaScript Date holds them.
func (p *tsParser) fraction() (int, bool) {
	start, v := p.i, 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		if p.i-start < 3 {
			v = v*10 + int(p.s[p.i]-'0')
		}
		p.i++
	}
	n := p.i - start
	if n == 0 {
		return 0, false
	}
	for ; n < 3; n++ {
		v *= 10
	}
	return v * int(time.Millisecond), true
}
