package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used so far;
// a phase's CPU is the difference across it. The rebuild runs its embedded
// JetStream in this process, so it counts the server's work too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
