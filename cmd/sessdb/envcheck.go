package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sessdb/gates"
)

// envPrefix starts every variable sessdb reads (PI_SESSION_..., and the
// legacy PI_SESSIONS_DIR and PI_SESSIONS_TTL_DAYS).
const envPrefix = "PI_SESSION"

// knownEnv is every variable sessdb reads, sorted: the variables of the
// knobs every command of the command table binds. The knobs are the one
// list: a knob added to any command is known here, and no variable is read
// but through a knob.
func knownEnv() []string {
	seen := map[string]bool{}
	for _, c := range commands {
		fs := c.newFlags()
		c.bind(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if k, ok := f.Value.(*knobValue); ok {
				seen[k.env] = true
			}
		})
	}
	var out []string
	for env := range seen {
		out = append(out, env)
	}
	sort.Strings(out)
	return out
}

// readsConfig reports whether the command whose flags are fs reads the
// configuration: it binds a knob.
func readsConfig(fs *flag.FlagSet) bool {
	reads := false
	fs.VisitAll(func(f *flag.Flag) {
		_, ok := f.Value.(*knobValue)
		reads = reads || ok
	})
	return reads
}

// unknownEnv returns a warning for every variable of environ that looks
// like one of sessdb's but is not one it reads, naming the closest it
// does, in the order of environ: a misspelt bound would otherwise be off
// without a word (a TTL of 30 days misspelt is the default 14, and reap
// removes the keys in between). A name looks like one of sessdb's when it
// begins with envPrefix, or is a typo of one it reads (misspelt): the
// prefix itself misspelt (PI_SESSONS_TTL_DAYS) or in other case.
func unknownEnv(environ []string) []string {
	known := knownEnv()
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(known, name) || workersEnv[name] {
			continue
		}
		var suggest string
		if strings.HasPrefix(name, envPrefix) {
			suggest = closest(name, known)
		} else {
			suggest = misspelt(name, known)
		}
		if suggest != "" {
			out = append(out, fmt.Sprintf("%s is not a variable sessdb reads, and is ignored; did you mean %s?", bounded(name), suggest))
		}
	}
	return out
}

// workersEnv are the variables under envPrefix that are the worker's,
// not sessdb's, and were never the store's: the legacy worker's gate on
// resuming under GITHUB_AUTH_SOURCE=gh (its processor refuses an armed
// job before the token mint), and the variable it sets in the container
// for the runner. A deployment keeps them for the worker, so a warning at
// every command, with a "did you mean PI_SESSIONS_DIR?" besides, was one
// nobody could act on.
var workersEnv = map[string]bool{
	"PI_SESSIONS_ALLOW_GH_SOURCE": true,
	"PI_SESSION_FILE":             true,
}

// misspelt is the variable of known that name is a typo of, or "": one
// it equals but for case (pi_sessions_dir), or one at most typoEdits
// from it, case aside, the nearest. A worker's own variables (PI_BACKENDS,
// PI_MAX_TOKENS, PI_SWEEP_INTERVAL_HOURS) are far from every one of
// sessdb's. A name whose length differs from a candidate's by more than
// typoEdits is that far from it at least, and is not measured: an
// environment's names may be long.
func misspelt(name string, known []string) string {
	upper := strings.ToUpper(name)
	best, bestDist := "", typoEdits+1
	for _, k := range known {
		if len(upper) > len(k)+typoEdits || len(k) > len(upper)+typoEdits || bagDistance(upper, k) > 2*typoEdits {
			continue
		}
		if d := editDistance(upper, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// bagDistance is how many bytes a and b hold that the other lacks, counted
// with their repeats: an edit changes it by at most 2, so a pair more
// than twice typoEdits apart by it is further apart than a typo, found
// without editDistance's table. Every command weighs each name of its
// environment against each variable: BenchmarkUnknownEnv, 60 names,
// beside a load of 14 on 2 cores, took 0.45 to 0.97 ms without it, 0.23
// to 0.34 ms with it, and 0.23 to 0.43 ms before names outside the prefix
// were weighed at all.
func bagDistance(a, b string) int {
	var n [256]int
	for i := 0; i < len(a); i++ {
		n[a[i]]++
	}
	for i := 0; i < len(b); i++ {
		n[b[i]]--
	}
	d := 0
	for _, s := range []string{a, b} {
		for i := 0; i < len(s); i++ {
			d += max(n[s[i]], -n[s[i]])
			n[s[i]] = 0 // each byte's count once
		}
	}
	return d
}

// closest is the candidate nearest to name: by edit distance, or by the
// words (between underscores, after the PI_SESSION or PI_SESSIONS prefix)
// one has and the other lacks, whichever is less, so that a name cut
// short (PI_SESSIONS_TTL) or missing a word (PI_SESSION_REQUIRE) finds its
// variable. On a tie the smaller edit distance wins, then the first in
// order: two letters swapped in a word (PI_SESSIONS_ETCD_PASSWROD) are as
// far by edit distance as any variable with one other word is by words
// (PI_SESSIONS_ETCD_CA). A candidate at most typoEdits away is a typo of
// name and wins over any by words: a misspelt word counts as one word
// lacked and one more had, so two letters swapped in
// PI_SESSIONS_TRANSCRIPTS_DIR are two words from it and one from
// PI_SESSIONS_DIR (a setting a fleet refuses).
//
// A name that begins a candidate is a name cut short: the candidates it
// begins are the only ones weighed. Else a word cut short is a word
// lacked and one more had, and a short word elsewhere is nearer by
// letters: PI_SESSIONS_ETCD_PASS was as far from PI_SESSIONS_ETCD_CA by
// words as from PI_SESSIONS_ETCD_PASSWORD, and nearer by letters.
func closest(name string, candidates []string) string {
	var begun []string
	for _, c := range candidates {
		if strings.HasPrefix(c, name) {
			begun = append(begun, c)
		}
	}
	if len(begun) > 0 {
		candidates = begun
	}
	best, bestDist, bestEdit := "", math.MaxInt, math.MaxInt
	for _, c := range candidates {
		e := editDistance(name, c)
		d := min(e, wordDistance(name, c))
		if e <= typoEdits {
			d = -1
		}
		if d < bestDist || d == bestDist && e < bestEdit {
			best, bestDist, bestEdit = c, d, e
		}
	}
	return best
}

// typoEdits is the edit distance of a typo: a letter changed, dropped or
// added, or two next to each other swapped.
const typoEdits = 2

// wordDistance is how many of the words after the prefix one of a and b
// has and the other lacks.
func wordDistance(a, b string) int {
	words := func(s string) []string {
		_, rest, _ := strings.Cut(s, "_")
		_, rest, _ = strings.Cut(rest, "_") // past PI_SESSION(S)_
		return strings.Split(rest, "_")
	}
	wa, wb := words(a), words(b)
	d := 0
	for _, w := range wa {
		if !slices.Contains(wb, w) {
			d++
		}
	}
	for _, w := range wb {
		if !slices.Contains(wa, w) {
			d++
		}
	}
	return d
}

// editDistance is the Levenshtein distance between a and b, in bytes (the
// names compared are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// legacyVenue is a warning for a resolve given no --venue where
// PI_BACKENDS (the legacy worker's list of container backends, whose
// first it stamped as a job's venue when the trigger named none) names
// another backend than local first, or "": sessdb reads --venue alone,
// and each key legacy workers stamped with that backend would cold-start
// venue-changed, then take local's stamp, without a word. PI_BACKENDS is
// read for this warning only, never for a value: it is the worker's, not
// sessdb's. Its list is split at commas and white space, or read as a
// JSON list of names; a form this does not know is warned of too, but
// without a backend to give: a piece of it (`["local"`) is no venue any
// key was stamped with.
func legacyVenue(venueGiven bool, backends string) string {
	if venueGiven {
		return ""
	}
	first, known := firstBackend(backends)
	switch {
	case !known:
		return fmt.Sprintf("PI_BACKENDS is %s, a list sessdb cannot tell the first backend of; the legacy worker stamped its first backend as a job's venue, and sessdb does not read it: the venue is --venue, local when not given. Unless that backend is local, give --venue with its name on every resolve, or each key stamped with it cold-starts venue-changed once and its next promotion stamps local", bounded(strconv.Quote(backends)))
	case first == "" || first == "local":
		return ""
	}
	return fmt.Sprintf("PI_BACKENDS names %s first, which the legacy worker stamped as a job's venue; sessdb does not read it, and the venue is --venue, local when not given: give --venue %s on every resolve, or each key stamped %s cold-starts venue-changed once and its next promotion stamps local", bounded(first), bounded(first), bounded(first))
}

// legacySweep is a warning for a resolve whose verdict is reason where
// PI_SWEEP_INTERVAL_HOURS (the legacy worker's retention sweep, which
// removed expired keys at boot and every that many hours) is set, or "".
// sessdb has no sweep: an expired key stays on disk, the most personal
// file of the store, until 'sessdb reap' runs, and a deployment that
// carried the variable over may take it for sessdb's. The worker may
// still read the variable for its own reapers (logs, sandboxes), so it
// is no mistake in itself, and a warning at every command would be one
// nobody can act on: it is said where the sweep's absence shows, a key
// found expired. Like PI_BACKENDS, the variable is read for this warning
// only, never for a value.
func legacySweep(reason gates.Reason, interval string) string {
	if reason != gates.Expired || strings.TrimSpace(interval) == "" {
		return ""
	}
	return "the key is expired and still on disk: PI_SWEEP_INTERVAL_HOURS is set, but it is the legacy worker's sweep, which sessdb does not read and has none of; an expired key is removed only when 'sessdb reap' runs: run it from a timer (docs/operations.md, \"Run it from a timer\")"
}

// firstBackend is the first name of a PI_BACKENDS list ("" for none),
// and whether the list was in a form it reads: names apart by commas or
// white space, or a JSON list of them. A first name holding what no
// backend's name does (quotes, brackets, a ;) is no form it reads.
func firstBackend(backends string) (string, bool) {
	s := strings.TrimSpace(backends)
	if strings.HasPrefix(s, "[") {
		var list []string
		if json.Unmarshal([]byte(s), &list) != nil {
			return "", false
		}
		if len(list) == 0 {
			return "", true
		}
		s = list[0]
	}
	first, _, _ := strings.Cut(strings.TrimSpace(s), ",")
	fields := strings.Fields(first)
	if len(fields) == 0 {
		return "", true
	}
	if strings.ContainsAny(fields[0], "[]{}()\"';=") || printable(fields[0]) != fields[0] {
		return "", false
	}
	return fields[0], true
}
