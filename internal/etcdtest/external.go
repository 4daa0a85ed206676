package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The suite's members are the etcd server this module links (embed), but
// operators run a released etcd (docs/fleet.md walks Debian's 3.4), whose
// answers differ: a 3.4 member cut off from its quorum answered a read it
// timed out itself with no gRPC code, which the suite could not see
// (RELIABILITY §5o). Options.Binary runs each member as a process of such
// a binary instead, for the tests that ask for one.

// BinaryEnv is the environment variable that names the etcd binary
// ExternalBinary returns.
const BinaryEnv = "SESSDB_ETCD_BINARY"

// EverywhereEnv is the environment variable that, set (to anything),
// makes Start run every cluster on BinaryEnv's binary but those whose
// Options.InProcess says their faults need the interceptor: .ci/long runs
// the fleet's packages whole so on Debian's etcd 3.4.
const EverywhereEnv = "SESSDB_ETCD_EVERYWHERE"

// ExternalBinary returns the etcd binary BinaryEnv names, for a test that
// runs on members of it (Options.Binary), or skips the test, saying so,
// when it names none: a machine has no etcd binary unless one was
// installed (.ci/long sets it to Debian's /usr/bin/etcd).
func ExternalBinary(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv(BinaryEnv)
	if p == "" {
		tb.Skipf("etcdtest: %s names no etcd binary; this test runs only on members of one (e.g. %s=/usr/bin/etcd, Debian's etcd 3.4)", BinaryEnv, BinaryEnv)
	}
	return p
}

// process is a member running as a process of Options.Binary.
type process struct {
	cmd  *exec.Cmd
	out  *logBuffer    // its output alone, for the error when it does not start
	done chan struct{} // closed once cmd.Wait returned
	err  error         // cmd.Wait's, once done
}

// stopWait bounds a graceful stop (SIGTERM) before SIGKILL: a leader
// hands its leadership over first, which takes an election timeout.
const stopWait = 10 * time.Second

// startProcess starts m as a process of c.opts.Binary with the settings
// config gives an embedded member. Its environment has no ETCD_*
// variable: etcd takes each for a flag, and one left in the test's
// environment would configure the member behind the test's back.
func (c *Cluster) startProcess(m *member) (*process, error) {
	var initial []string
	for _, o := range c.members {
		initial = append(initial, o.name+"="+o.advertised.String())
	}
	args := []string{
		"--name", m.name, "--data-dir", m.dir,
		"--listen-client-urls", m.clientURL.String(), "--advertise-client-urls", m.clientURL.String(),
		"--listen-peer-urls", m.peerURL.String(), "--initial-advertise-peer-urls", m.advertised.String(),
		"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", c.token,
		"--heartbeat-interval", strconv.FormatUint(uint64(c.opts.TickMs), 10),
		"--election-timeout", strconv.FormatUint(uint64(c.opts.ElectionMs), 10),
		"--bcrypt-cost", "4", // bcrypt.MinCost, as config says why
		"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
	}
	if c.opts.TLS {
		certFile, keyFile := c.CA.Issue(c.tb, filepath.Dir(m.dir), m.name, true)
		for _, side := range []string{"--", "--peer-"} {
			args = append(args, side+"cert-file", certFile, side+"key-file", keyFile,
				side+"trusted-ca-file", c.CAFile, side+"client-cert-auth")
		}
	}
	cmd := exec.Command(c.opts.Binary, args...)
	cmd.Env = []string{} // not nil, which is the test's whole environment
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := &process{cmd: cmd, out: &logBuffer{}, done: make(chan struct{})}
	w := memberLog{name: m.name, to: []*logBuffer{p.out, c.logs}}
	cmd.Stdout, cmd.Stderr = w, w
	// Its output is copied until every holder of the pipe closed it; a
	// process it started and left running must not hold Wait up.
	cmd.WaitDelay = time.Second
	if err := startChild(cmd, p.exited); err != nil {
		return nil, fmt.Errorf("member %s: %w", m.name, err)
	}
	return p, nil
}

// exited records the process's end (cmd.Wait's error).
func (p *process) exited(err error) {
	p.err = err
	close(p.done)
}

// memberLog writes a member's output to the buffers, each line named by
// the member. The process writes whole lines, one or more a write.
type memberLog struct {
	name string
	to   []*logBuffer
}

func (w memberLog) Write(p []byte) (int, error) {
	named := w.name + ": " + strings.ReplaceAll(strings.TrimSuffix(string(p), "\n"), "\n", "\n"+w.name+": ") + "\n"
	for _, b := range w.to {
		b.Write([]byte(named))
	}
	return len(p), nil
}

// waitProcess waits until m's process serves a client, or exits. A member
// serves no client before it is ready (it joined its cluster, which needs
// a quorum), so an answered Status is embed's ReadyNotify.
func (c *Cluster) waitProcess(m *member) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		// A try before the port listens waits out gRPC's reconnect
		// backoff (1 s) to its deadline: short tries, each a new client,
		// see a member ready within a try of it.
		if _, _, err := c.status(m, 200*time.Millisecond); err == nil {
			return nil
		}
		select {
		case <-m.proc.done:
			err := fmt.Errorf("member %s: %s exited (%v); its output:\n%s", m.name, c.opts.Binary, m.proc.err, m.proc.out.String())
			// Start takes a fresh set of ports when another process took one.
			if strings.Contains(m.proc.out.String(), "address already in use") {
				err = fmt.Errorf("%w: %w", syscall.EADDRINUSE, err)
			}
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %s: not ready after %v; its output:\n%s", m.name, readyTimeout, m.proc.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// status asks m alone for its leader's and its own member ID, within
// timeout. Status needs no login, even with Options.Auth.
func (c *Cluster) status(m *member, timeout time.Duration) (lead, id uint64, err error) {
	cfg, err := c.clientConfig([]string{m.clientURL.String()}, "", "")
	if err != nil {
		return 0, 0, err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return 0, 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, err := cli.Status(ctx, m.clientURL.String())
	if err != nil {
		return 0, 0, err
	}
	return r.Leader, r.Header.MemberId, nil
}

// end ends the process with sig (SIGTERM: gracefully, then SIGKILL after
// stopWait) and waits for it. A suspended process is continued first: it
// handles no SIGTERM while stopped.
func (p *process) end(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return
	case <-time.After(stopWait):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Suspend stops member i's process with SIGSTOP: it keeps its ports and
// connections and answers nothing, neither its clients nor its peers,
// until Continue. It still counts as running (Running, Stop, Close).
// Only a member of Options.Binary can be suspended: an embedded one is
// this process. On Linux it returns once every thread of the process has
// stopped (threadsStopped), and fails the test if that takes longer than
// stopWait; elsewhere, once the signal is sent.
func (c *Cluster) Suspend(i int) {
	c.tb.Helper()
	c.signal("Suspend", i, syscall.SIGSTOP)
	p := c.members[i].proc
	for deadline := time.Now().Add(stopWait); ; {
		stopped, err := threadsStopped(p.cmd.Process.Pid)
		select {
		case <-p.done:
			c.tb.Fatalf("etcdtest: Suspend: member %d exited (%v)", i, p.err)
		default:
		}
		switch {
		case err != nil:
			c.tb.Fatalf("etcdtest: Suspend member %d: %v", i, err)
		case stopped:
			return
		case time.Now().After(deadline):
			c.tb.Fatalf("etcdtest: Suspend: member %d's threads not all stopped %v after SIGSTOP", i, stopWait)
		}
		time.Sleep(time.Millisecond)
	}
}

// Stopped reports whether every thread of member i's process is stopped
// now, as Suspend leaves it; true where that cannot be seen (not Linux),
// or for a member that is not a process.
func (c *Cluster) Stopped(i int) bool {
	p := c.members[i].proc
	if p == nil {
		return true
	}
	stopped, err := threadsStopped(p.cmd.Process.Pid)
	return err == nil && stopped
}

// Continue resumes member i after Suspend (SIGCONT).
func (c *Cluster) Continue(i int) { c.signal("Continue", i, syscall.SIGCONT) }

func (c *Cluster) signal(what string, i int, sig syscall.Signal) {
	c.tb.Helper()
	c.needProcesses(what)
	p := c.members[i].proc
	if p == nil {
		c.tb.Fatalf("etcdtest: %s: member %d is not running", what, i)
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.tb.Fatalf("etcdtest: %s member %d: %v", what, i, err)
	}
}

// needProcesses fails the test unless the members are processes.
func (c *Cluster) needProcesses(what string) {
	c.tb.Helper()
	if c.opts.Binary == "" {
		c.tb.Fatalf("etcdtest: %s needs members that are processes (Options.Binary)", what)
	}
}

// inProcess reports whether the members are in this process, and fails
// the test when they are not: what is done by the embedded members'
// interceptor, which a released binary does not have; run on one, the
// test would pass without its fault. Errorf, not Fatalf: FailNext is
// called from hooks on goroutines of the code under test, and a Goexit
// there left a walk waiting for its worker for ever.
func (c *Cluster) inProcess(what string) bool {
	c.tb.Helper()
	if c.opts.Binary != "" {
		c.tb.Errorf("etcdtest: %s needs members in this process (their interceptor makes the fault); these are processes of %s: the test goes on without it", what, c.opts.Binary)
		return false
	}
	return true
}
