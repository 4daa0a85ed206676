package etcdtest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// fatalEnv makes a child run of this test binary log a member's fatal
// error (see TestAMembersFatalErrorIsOnStderr).
const fatalEnv = "ETCDTEST_MEMBER_FATAL"

// etcd ends the process on a fatal error of a member (zap's Fatal: a
// failed write of its WAL, its backend, its snapshot). Its log goes to
// the cluster's buffer, printed only by a test that fails, and the exit
// comes first: the package's run failed with "exit status 1" and not a
// word. The fatal line and the warnings before it are on stderr now.
func TestAMembersFatalErrorIsOnStderr(t *testing.T) {
	if os.Getenv(fatalEnv) != "" {
		b := &logBuffer{}
		lg := b.logger("m0")
		lg.Warn("a warning before it")
		lg.Fatal("failed to save hard state")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAMembersFatalErrorIsOnStderr$", "-test.count=1")
	cmd.Env = append(os.Environ(), fatalEnv+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"m0", "failed to save hard state", "a warning before it"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output lacks %q:\n%s", want, out)
		}
	}
}
