package etcdtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// threadsStopped reports whether every thread of process pid is stopped
// (state T, or t under a tracer, in /proc/PID/task/TID/stat). SIGSTOP
// returns before the kernel has stopped the threads: one in an
// uninterruptible wait (an fsync on a busy disk) stops only once the wait
// ends, and until then the member may still be answering its peers.
func threadsStopped(pid int) (bool, error) {
	task := filepath.Join("/proc", fmt.Sprint(pid), "task")
	tids, err := os.ReadDir(task)
	if err != nil {
		return false, err
	}
	for _, tid := range tids {
		stat, err := os.ReadFile(filepath.Join(task, tid.Name(), "stat"))
		if os.IsNotExist(err) {
			continue // the thread ended
		}
		if err != nil {
			return false, err
		}
		// "TID (COMM) STATE ...": COMM may hold spaces and parentheses,
		// so the state follows the last ")".
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("%s: no state in %q", task, stat)
		}
		if s := stat[i+2]; s != 'T' && s != 't' {
			return false, nil
		}
	}
	return len(tids) > 0, nil
}

// seesStops is whether threadsStopped can tell.
const seesStops = true
