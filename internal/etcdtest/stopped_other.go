//go:build !linux

package etcdtest

// threadsStopped cannot tell where there is no /proc/PID/task: Suspend
// returns once the signal is sent.
func threadsStopped(int) (bool, error) { return true, nil }

// seesStops is whether threadsStopped can tell.
const seesStops = false
