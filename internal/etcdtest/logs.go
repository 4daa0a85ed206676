package etcdtest

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logBuffer keeps the members' warnings and errors in memory. The log is
// not written to the test's log as it comes: etcd goroutines may still log
// while a member closes, and t.Log after a test has ended panics.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// maxLog bounds what a cluster keeps; a test that fails needs the last
// warnings, not a day of them.
const maxLog = 256 << 10

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len()+len(p) > maxLog {
		rest := b.buf.Bytes()[min(b.buf.Len(), len(p)+maxLog/4):]
		kept := append([]byte("…\n"), rest...)
		b.buf.Reset()
		b.buf.Write(kept)
	}
	return b.buf.Write(p)
}

func (b *logBuffer) Sync() error { return nil }

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger(name string) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(b), zap.WarnLevel)
	return zap.New(core, zap.WithFatalHook(fatalHook{b})).Named(name)
}

// fatalHook ends the process as etcd's fatal error asks, but with the log
// on stderr first: in the buffer only, it died with the process, and the
// test binary failed with "exit status 1" and not a word.
type fatalHook struct{ b *logBuffer }

func (h fatalHook) OnWrite(*zapcore.CheckedEntry, []zapcore.Field) {
	fmt.Fprintf(os.Stderr, "etcdtest: a member's fatal error ends the process; etcd log (warnings and errors):\n%s", h.b.String())
	os.Exit(1)
}
