package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// The environment of a migration child.
const (
	envRoot   = "SESSDB_FLEET_ROOT"
	envKillAt = "SESSDB_FLEET_KILL_AT"  // a fault point
	envKillN  = "SESSDB_FLEET_KILL_NTH" // which occurrence of it (default 1)
	envWait   = "SESSDB_FLEET_WAIT"     // read a line from stdin before starting
)

// runMigrateChild migrates SESSDB_FLEET_ROOT in the direction mode names,
// then prints "done <summary>". With SESSDB_FLEET_KILL_AT it prints
// "killed <point> <n>" and SIGKILLs itself at that point's nth occurrence.
func runMigrateChild(b *Backend, mode string, out *lines) int {
	at := faults.Point(os.Getenv(envKillAt))
	nth, _ := strconv.Atoi(os.Getenv(envKillN))
	var seen atomic.Int64
	faults.Set(func(p faults.Point) error {
		if p == at && seen.Add(1) >= int64(max(nth, 1)) {
			out.emit("killed %s %d", p, seen.Load())
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
	if os.Getenv(envWait) != "" {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	opts := migOpts()
	var sum MigrateSummary
	var err error
	if mode == "to-etcd" {
		sum, err = ToEtcd(context.Background(), os.Getenv(envRoot), b, opts, func(MigrateReport) error { return nil })
	} else {
		sum, err = FromEtcd(context.Background(), b, os.Getenv(envRoot), opts, func(MigrateReport) error { return nil })
	}
	if err != nil {
		out.emit("error %v", err)
		return 1
	}
	j, _ := json.Marshal(sum)
	out.emit("done %s", j)
	return 0
}

// migChild runs a migration child to its end or its death and returns its
// last line, and whether it was killed.
func migChild(t *testing.T, f *fixture, mode, root string, kill func(*child), env ...string) (string, bool) {
	t.Helper()
	env = append(env, envEndpoints+"="+strings.Join(f.c.Endpoints(), ","), envPrefix+"="+f.prefix, envDir+"="+f.dir,
		envRoot+"="+root, "GORACE=atexit_sleep_ms=0")
	ch := startChild(t, mode, env...)
	if kill != nil {
		kill(ch)
	}
	last := ""
	for l := range ch.lines {
		last = l
	}
	err := ch.cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	killed := ok && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	if err != nil && !killed {
		t.Fatalf("%s child: %v (%s)", mode, err, last)
	}
	if !killed && !strings.HasPrefix(last, "done ") {
		t.Fatalf("%s child ended with %q", mode, last)
	}
	return last, killed
}

// killRounds is how many rounds of kills at random instants each of
// TestToEtcdKilled and TestFromEtcdKilled runs where
// SESSDB_FLEET_KILL_ROUNDS does not say: one of each kind (a kill, two in
// a row, and FromEtcd's into its own root), beside the rounds at every
// fault point. Each round is a child's migration and a re-run checked
// whole: six each were 24 s of the two tests' 66 s in a run of the
// package under load (the test binary beside a load average of 12 to
// 20 on two cores); .ci/long runs 30.
const killRounds = 3

// killAfter lets the child start, then kills it after a random moment
// within d.
func killAfter(rng *rand.Rand, d time.Duration) func(*child) {
	return func(ch *child) {
		fmt.Fprintln(ch.stdin)
		time.Sleep(time.Duration(rng.Int63n(int64(d))))
		ch.cmd.Process.Kill()
	}
}

// killedAt names where a child died by its last line: the fault point it
// said it was killed at, or a random instant.
func killedAt(last string) string {
	if f := strings.Fields(last); len(f) == 3 && f[0] == "killed" {
		return f[1]
	}
	return "random instant"
}

func killProfiles() []migProfile {
	all := gates.Bounds{MaxBytes: 8192, TTL: 14 * 24 * time.Hour, MaxAge: 30 * 24 * time.Hour, MaxResumeChain: 3, MaxContextPct: 80}
	return []migProfile{
		{"unbounded", gates.Bounds{}, migJob},
		{"all bounds", all, migJob},
		{"podman", all, store.Job{PiVersion: migPi, Venue: "podman", Model: migModel}},
		{"pi 0.79.0", gates.Bounds{}, store.Job{PiVersion: "0.79.0", Venue: "local", Model: migModel}},
	}
}

// converged checks a run after kills: a complete run in process moves
// every movable key (or finds it moved), the verdicts are want's, and a
// second run reports every key already and changes nothing. It returns
// the files in the transcripts dir that no record names (the orphans a
// killed ToEtcd leaves for reap).
//
// Between the kill and the re-run, every job gets want's verdict, or the
// one it got before the migration (was; nil when the destination held
// nothing), or a cold start: never another resume.
func converged(t *testing.T, f *fixture, to bool, root string, cases []hostCase, was, want map[string]string, written []string) int {
	t.Helper()
	keys, label := keysOf(cases)
	open := onFleet(f.b)
	if !to {
		open = onRoot(t, root)
	}
	for cell, v := range verdicts(t, open, keys, killProfiles()) {
		if v != want[cell] && v != was[cell] && !strings.HasPrefix(v, "false ") {
			t.Errorf("between the kill and the re-run: %s (%s): %s, want %s or %q or a cold start", cell, label[cell[:32]], v, want[cell], was[cell])
		}
	}
	reports, sum := runMigration(t, to, root, f.b, migOpts())
	for _, hc := range cases {
		r, ok := reports[hc.key]
		switch {
		case !to && hc.to != migrate.Migrated:
			if ok {
				t.Errorf("%s: from etcd %s, but it never moved", hc.name, r.Action)
			}
		case hc.to == migrate.Migrated:
			if r.Action != migrate.Migrated && r.Action != migrate.Already {
				t.Errorf("%s: after the kill %s (%s)", hc.name, r.Action, r.Cause)
			}
		case r.Action != hc.to:
			t.Errorf("%s: after the kill %s (%s), want %s", hc.name, r.Action, r.Cause, hc.to)
		}
	}
	// Back in the root they came from, the keys that never moved are as
	// they were there, not absent as on the fleet.
	explained := map[string]string{}
	for _, hc := range cases {
		if hc.why != "" && !to {
			explained[hc.key] = hc.why
		}
	}
	compare(t, "after the kill", want, verdicts(t, open, keys, killProfiles()), explained, label)
	if !to {
		sameRecords(t, f.b, root, written)
	}
	before := etcdOf(t, f.c, f.prefix)
	for p, v := range treeOf(t, root) {
		before[root+"/"+p] = v
	}
	again, sum2 := runMigration(t, to, root, f.b, migOpts())
	for k, r := range again {
		if reports[k].Action == migrate.Migrated && r.Action != migrate.Already {
			t.Errorf("%s: a second run %s (%s)", k, r.Action, r.Cause)
		}
	}
	if sum2.Migrated != 0 || sum2.Already != sum.Migrated+sum.Already {
		t.Errorf("a second run: %+v after %+v", sum2, sum)
	}
	now := etcdOf(t, f.c, f.prefix)
	for p, v := range treeOf(t, root) {
		now[root+"/"+p] = v
	}
	if d := diffMaps(before, now); d != "" {
		t.Errorf("a second run changed:\n%s", d)
	}
	named := map[string]bool{}
	for _, k := range keys {
		if file := f.recordFile(k); file != "" {
			named[file] = true
		}
	}
	orphans := 0
	for _, k := range keys {
		for _, file := range f.files(k) {
			if !named[file] {
				orphans++
			}
		}
	}
	return orphans
}

// TestToEtcdKilled kills a ToEtcd child at every one of its fault points
// (at its first occurrence, and at a later one, with keys done before
// it), and at random instants, once or twice in a row; each time a re-run
// converges: every movable key in etcd, the same verdicts on the fleet as
// on the root before, and a second run that finds everything already.
//
// The random rounds are SESSDB_FLEET_KILL_ROUNDS (killRounds by default:
// a kill, two kills in a row, and a kill again; .ci/long runs more).
func TestToEtcdKilled(t *testing.T) {
	c := etcdtest.Start1(t)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	type round struct {
		name string
		kill []func(*child)
		env  [][]string
	}
	var rounds []round
	for _, p := range []faults.Point{faults.ToEtcdRolledForward, faults.ToEtcdWritten, faults.ToEtcdCommitted} {
		for _, n := range []int{1, 5} {
			if n > 1 && p == faults.ToEtcdRolledForward {
				continue // one key of the root has a promotion in flight
			}
			rounds = append(rounds, round{name: fmt.Sprintf("%s #%d", p, n), kill: []func(*child){nil}, env: [][]string{{envKillAt + "=" + string(p), fmt.Sprintf("%s=%d", envKillN, n)}}})
		}
	}
	// A kill within a whole run's time lands anywhere in it; a child
	// starts its run on a line from the test, so only the run is timed.
	var window time.Duration
	{
		f := newFixture(t, c)
		root := t.TempDir()
		buildHostRoot(t, root)
		_, sum := runMigration(t, true, root, f.b, migOpts())
		window = time.Duration(sum.Seconds * float64(time.Second) * 1.2)
	}
	for i := range envInt("SESSDB_FLEET_KILL_ROUNDS", killRounds) {
		r := round{name: fmt.Sprintf("random %d", i)}
		for range 1 + i%2 {
			r.kill = append(r.kill, killAfter(rng, window))
			r.env = append(r.env, []string{envWait + "=1"})
		}
		rounds = append(rounds, r)
	}
	killed, orphans, points := 0, 0, map[string]int{}
	for _, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			f := newFixture(t, c)
			root := t.TempDir()
			cases := buildHostRoot(t, root)
			keys, _ := keysOf(cases)
			want := verdicts(t, onRoot(t, root), keys, killProfiles())
			for _, hc := range cases {
				if hc.why != "" {
					for _, p := range killProfiles() {
						want[hc.key+" | "+p.name] = "false absent"
					}
				}
			}
			for i, kill := range r.kill {
				last, dead := migChild(t, f, "to-etcd", root, kill, r.env[i]...)
				if dead {
					killed++
					points[killedAt(last)]++
				} else if r.kill[i] == nil {
					t.Fatalf("the child was not killed at %s: %s", r.name, last)
				}
			}
			orphans += converged(t, f, true, root, cases, nil, want, nil)
		})
	}
	t.Logf("%d rounds, %d kills (where: %v; random instants within %v); %d orphan files left for reap", len(rounds), killed, points, window, orphans)
}

// TestFromEtcdKilled kills a FromEtcd child at every one of its fault
// points (first and a later occurrence) and at random instants, into a
// fresh root and back into the root the keys came from (where the keys the
// fleet promoted are brought forward); each time a re-run converges on
// the fleet's verdicts, records and histories, and a second run finds
// everything already. Its random rounds are TestToEtcdKilled's (the third
// into the root the keys came from).
func TestFromEtcdKilled(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	origin := t.TempDir()
	cases := buildHostRoot(t, origin)
	keys, _ := keysOf(cases)
	runMigration(t, true, origin, f.b, migOpts())
	originVerdicts := verdicts(t, onRoot(t, origin), keys, killProfiles())
	f.now = migNow
	f.run(cases[0].key, "fleet 2")
	f.run(cases[1].key, "fleet 6")
	want := verdicts(t, onFleet(f.b), keys, killProfiles())
	fleetWas := etcdOf(t, c, f.prefix)

	type round struct {
		name string
		own  bool // into a copy of origin, not a fresh root
		kill []func(*child)
		env  [][]string
	}
	var rounds []round
	for _, p := range []faults.Point{faults.FromEtcdLocked, faults.FromEtcdTemp, faults.FromEtcdCommitted, faults.FromEtcdRenamed, faults.FromEtcdSynced} {
		for _, n := range []int{1, 5} {
			rounds = append(rounds, round{name: fmt.Sprintf("%s #%d", p, n), kill: []func(*child){nil}, env: [][]string{{envKillAt + "=" + string(p), fmt.Sprintf("%s=%d", envKillN, n)}}})
		}
		rounds = append(rounds, round{name: fmt.Sprintf("own root %s", p), own: true, kill: []func(*child){nil}, env: [][]string{{envKillAt + "=" + string(p)}}})
	}
	_, sum := runMigration(t, false, t.TempDir(), f.b, migOpts())
	window := time.Duration(sum.Seconds * float64(time.Second) * 1.2)
	for i := range envInt("SESSDB_FLEET_KILL_ROUNDS", killRounds) {
		r := round{name: fmt.Sprintf("random %d", i), own: i%3 == 2}
		for range 1 + i%2 {
			r.kill = append(r.kill, killAfter(rng, window))
			r.env = append(r.env, []string{envWait + "=1"})
		}
		rounds = append(rounds, r)
	}
	killed, points := 0, map[string]int{}
	for _, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if r.own {
				if out, err := exec.Command("cp", "-a", origin, root).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v %s", err, out)
				}
			}
			for i, kill := range r.kill {
				last, dead := migChild(t, f, "from-etcd", root, kill, r.env[i]...)
				if dead {
					killed++
					points[killedAt(last)]++
				} else if r.kill[i] == nil {
					t.Fatalf("the child was not killed at %s: %s", r.name, last)
				}
			}
			// FromEtcd writes every key into a fresh root; into its own,
			// only the keys the fleet promoted since (the others are
			// already there, as the store serves them, which for the key
			// whose promotion's temp was lost is not its meta.db record).
			written, was := keys, map[string]string(nil)
			if r.own {
				written, was = keys[:2], originVerdicts
			}
			converged(t, f, false, root, cases, was, want, written)
		})
	}
	if d := diffMaps(fleetWas, etcdOf(t, c, f.prefix)); d != "" {
		t.Errorf("FromEtcd changed etcd:\n%s", d)
	}
	t.Logf("%d rounds, %d kills (where: %v; random instants within %v)", len(rounds), killed, points, window)
}
