package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// side is one of the two servers an interleaved measurement compares: the
// server, its name (for its profile) and the operation that loads it.
type side struct {
	srv  *Server
	name string
	op   func(context.Context, int) error
}

// interleaved is what interleave measured for one side: its load over all
// its slices, and (when cpuKnown: not for a server given by --url) the
// server process's CPU in its own slices and in the other side's, while
// it was idle.
type interleaved struct {
	res           loadResult
	busyCPU, idle time.Duration
	cpuKnown      bool
}

// interleave loads a and b in turn, `rounds` times each for d/rounds, in
// the order a b, b a, a b, … (so that a drift of the shared host's speed
// falls on both alike), after a second's warm-up of each. Comparing two
// servers measured one after the other, each for d, measured the host as
// much as the servers: on this machine the same minimal handler ran at
// 19,817–27,017 reads a second in four runs of the read scenario.
//
// With --server-profiles, each server is profiled through the whole
// measurement (its own slices and the other's).
func interleave(ctx context.Context, cfg Config, workers, rounds int, a, b side) (ra, rb interleaved) {
	load(ctx, workers, time.Second, a.op)
	load(ctx, workers, time.Second, b.op)
	span := 2*cfg.Duration - time.Second
	waitA := profileServer(ctx, cfg, a.srv, a.name, span)
	waitB := profileServer(ctx, cfg, b.srv, b.name, span)
	defer waitA()
	defer waitB()
	slice := cfg.Duration / time.Duration(rounds)
	ra = interleaved{res: loadResult{lat: &latencies{}}, cpuKnown: true}
	rb = interleaved{res: loadResult{lat: &latencies{}}, cpuKnown: true}
	run := func(me, other side, mine, others *interleaved) {
		m0, o0 := me.srv.processCPU(), other.srv.processCPU()
		mine.res.merge(load(ctx, workers, slice, me.op))
		m1, o1 := me.srv.processCPU(), other.srv.processCPU()
		mine.busyCPU += m1 - m0
		others.idle += o1 - o0
		mine.cpuKnown = mine.cpuKnown && m0 >= 0 && m1 >= 0
		others.cpuKnown = others.cpuKnown && o0 >= 0 && o1 >= 0
	}
	alternate(rounds, func() { run(a, b, &ra, &rb) }, func() { run(b, a, &rb, &ra) })
	return ra, rb
}

// alternate runs a and b in turn, rounds times each, in the order a b,
// b a, a b, …: a drift of the shared host's speed falls on both alike.
func alternate(rounds int, a, b func()) {
	for i := range rounds {
		if i%2 == 0 {
			a()
			b()
		} else {
			b()
			a()
		}
	}
}

// merge adds another slice's load to r.
func (r *loadResult) merge(o loadResult) {
	r.ops += o.ops
	r.errs += o.errs
	r.elapsed += o.elapsed
	if r.firstErr == nil {
		r.firstErr = o.firstErr
	}
	o.lat.mu.Lock()
	d := o.lat.d
	o.lat.mu.Unlock()
	r.lat.mu.Lock()
	r.lat.d = append(r.lat.d, d...)
	r.lat.mu.Unlock()
}

// processCPU is the CPU time (user and system) the server's process has
// used so far, from /proc; -1 for a server the bench did not start.
func (s *Server) processCPU() time.Duration {
	if s.cmd == nil || s.cmd.Process == nil {
		return -1
	}
	cpu, err := procCPU(s.cmd.Process.Pid)
	if err != nil {
		return -1
	}
	return cpu
}

// procCPU reads utime and stime of process pid from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after the last ')' start at field 3 (state).
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times: 100
// on every Linux architecture Go runs on.
const clockTicks = 100
