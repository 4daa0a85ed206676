package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Members of an external binary serve, survive their leader's kill and
// a restart, answer nothing while suspended, and end with their test: no
// process of theirs outlives it (each is killed and waited for, so its
// pid is gone, not a zombie).
func TestExternalMembers(t *testing.T) {
	bin := ExternalBinary(t)
	var pids []int
	t.Run("cluster", func(t *testing.T) {
		c := Start(t, Options{Members: 3, Binary: bin})
		for _, m := range c.members {
			pids = append(pids, m.proc.cmd.Process.Pid)
		}
		cli := c.Client(t)
		put(t, cli, "/sessdb/a", "1")
		killed := c.KillLeader()
		if c.Running(killed) {
			t.Fatalf("member %d still running after KillLeader", killed)
		}
		if l := c.Leader(); l == killed {
			t.Fatalf("leader is the killed member %d", l)
		}
		put(t, cli, "/sessdb/b", "2")
		c.Restart(killed)
		pids = append(pids, c.members[killed].proc.cmd.Process.Pid)
		one := clientOf(t, c.Endpoint(killed))
		if got := get(t, one, "/sessdb/b"); got != "2" {
			t.Fatalf("restarted member reads %q, want 2", got)
		}

		// Two of three suspended: the third has no quorum, and a
		// linearizable read through it ends with its deadline.
		other := (killed + 1) % 3
		for i := range 3 {
			if i != other {
				c.Suspend(i)
				if seesStops && !c.Stopped(i) {
					t.Fatalf("member %d's threads are not all stopped once Suspend returned", i)
				}
			}
		}
		alone := clientOf(t, c.Endpoint(other))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := alone.Get(ctx, "/sessdb/a")
		cancel()
		if err == nil {
			t.Fatal("a linearizable read through a member whose two peers are suspended was answered")
		}
		for i := range 3 {
			if i != other {
				c.Continue(i)
			}
		}
		if got := get(t, alone, "/sessdb/a"); got != "1" {
			t.Fatalf("continued, the member reads %q, want 1", got)
		}

		c.RestartAll()
		for _, m := range c.members {
			pids = append(pids, m.proc.cmd.Process.Pid)
		}
		if got := get(t, cli, "/sessdb/a"); got != "1" {
			t.Fatalf("after RestartAll get = %q, want 1", got)
		}
		c.Suspend(0) // the cleanup kills a suspended member too
	})
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("member process %d outlived its test: kill(pid, 0) = %v", pid, err)
		}
	}
}

// A binary that is not etcd fails Start, naming the binary and what it
// printed, and leaves no process behind.
func TestExternalBinaryThatIsNotEtcd(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skipf("no false(1) to stand in for a binary that is not etcd: %v", err)
	}
	var msg string
	t.Run("start", func(t *testing.T) {
		ft := &fatalT{T: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Start(ft, Options{Binary: bin})
		}()
		<-done
		msg = ft.msg
	})
	if !strings.Contains(msg, bin+" exited (exit status 1)") {
		t.Fatalf("Start on %s failed with %q; want it to name the binary and its exit", bin, msg)
	}
}

// fatalT records the first Fatalf and ends the goroutine that called it,
// as testing.T does, without failing the test.
type fatalT struct {
	*testing.T
	msg string
}

func (t *fatalT) Fatalf(format string, args ...any) {
	t.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// FailNext, LoseNext and ExpireTokens are the embedded members'
// interceptor's: on process members each fails the test, saying so, and
// returns, even on a goroutine of the code under test (a hook's), which
// it must not end: a walk waited for its worker for ever.
func TestInterceptorFaultsNeedEmbeddedMembers(t *testing.T) {
	et := &errorT{T: t}
	c := Start(et, Options{Binary: ExternalBinary(t)})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.FailNext("/etcdserverpb.KV/Txn", 0, 1)
		c.LoseNext("/etcdserverpb.KV/Txn", 0, 1)
		c.ExpireTokens()
	}()
	<-done
	if len(et.errs) != 3 {
		t.Fatalf("errors: %q; want one for each of FailNext, LoseNext and ExpireTokens", et.errs)
	}
	for _, e := range et.errs {
		if !strings.Contains(e, "needs members in this process") {
			t.Errorf("error %q does not say the fault needs embedded members", e)
		}
	}
}

// errorT records Errorf without failing the test.
type errorT struct {
	*testing.T
	errs []string
}

func (t *errorT) Errorf(format string, args ...any) {
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

// An ETCD_* variable in the test's environment does not reach a member:
// etcd takes each for a flag (and refuses one that a flag shadows).
func TestExternalMembersIgnoreTheTestsEtcdVariables(t *testing.T) {
	bin := ExternalBinary(t)
	t.Setenv("ETCD_NAME", "not-a-member")
	t.Setenv("ETCD_QUOTA_BACKEND_BYTES", "1")
	c := Start(t, Options{Binary: bin})
	put(t, c.Client(t), "/sessdb/a", "1")
}

// With EverywhereEnv set, a cluster that asks for nothing runs on
// BinaryEnv's binary (so .ci/long runs a package's whole suite on it),
// and one whose faults need the interceptor (InProcess) stays in process;
// without a binary named, Everywhere is a mistake the test is told of.
func TestEverywhereRunsEveryClusterButInProcessOnesOnTheBinary(t *testing.T) {
	bin := ExternalBinary(t)
	t.Setenv(EverywhereEnv, "1")
	c := Start(t, Options{})
	if c.members[0].proc == nil || c.opts.Binary != bin {
		t.Errorf("with %s set, a plain cluster's member is not a process of %s", EverywhereEnv, bin)
	}
	put(t, c.Client(t), "/sessdb/a", "1")
	in := Start(t, Options{InProcess: true})
	if in.members[0].proc != nil || in.opts.Binary != "" {
		t.Errorf("an InProcess cluster's member is a process of %s", in.opts.Binary)
	}
	put(t, in.Client(t), "/sessdb/a", "1")

	t.Setenv(BinaryEnv, "")
	ft := &fatalT{T: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(ft, Options{})
	}()
	<-done
	if !strings.Contains(ft.msg, BinaryEnv) {
		t.Errorf("%s set with no binary: %q; want a failure naming %s", EverywhereEnv, ft.msg, BinaryEnv)
	}
}
