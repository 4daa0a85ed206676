package main

import (
	"bufio"
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// round is one round's results: benchmark name (without the -GOMAXPROCS
// suffix) -> unit -> value. A benchmark that ran more than once in a round
// keeps its last value.
type round map[string]map[string]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseRounds reads go test -bench output, split into rounds by "# round N"
// lines. Output with no round lines is one round. A round's line may come
// back later in the output (the groups that run after every round, see
// group.after): what follows it joins that round. Rounds are returned in
// the order they first appear, empty ones left out.
func parseRounds(b []byte) []round {
	var rs []round
	seen := map[string]int{} // "# round N" line -> index in rs
	cur := -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# round ") {
			label := strings.TrimSpace(line)
			i, ok := seen[label]
			if !ok {
				i = len(rs)
				seen[label] = i
				rs = append(rs, round{})
			}
			cur = i
			continue
		}
		name, vals, ok := parseLine(line)
		if !ok {
			continue
		}
		if cur < 0 { // results before any round line
			cur = len(rs)
			rs = append(rs, round{})
		}
		rs[cur][name] = vals
	}
	return slices.DeleteFunc(rs, func(r round) bool { return len(r) == 0 })
}

// parseLine parses one result line of the Go benchmark format: the name,
// the iteration count, then value-unit pairs.
func parseLine(line string) (string, map[string]float64, bool) {
	if !strings.HasPrefix(line, "Benchmark") {
		return "", nil, false
	}
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return "", nil, false
	}
	if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
		return "", nil, false
	}
	vals := map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		vals[f[i+1]] = v
	}
	return procSuffix.ReplaceAllString(f[0], ""), vals, true
}

// get returns one benchmark's value in one unit.
func (r round) get(bench, unit string) (float64, bool) {
	v, ok := r[bench][unit]
	return v, ok
}

// summary is min, median and max of one quantity over the rounds.
type summary struct {
	N                int
	Min, Median, Max float64
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{N: len(s), Min: s[0], Median: med, Max: s[len(s)-1]}
}

// over evaluates f in every round where it is defined.
func over(rs []round, f func(round) (float64, bool)) summary {
	var xs []float64
	for _, r := range rs {
		if v, ok := f(r); ok {
			xs = append(xs, v)
		}
	}
	return summarize(xs)
}
