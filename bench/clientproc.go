package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clientProc is a StreamClients child process, driven over its stdin and
// stdout.
type clientProc struct {
	job    clientJob
	cmd    *exec.Cmd
	in     io.WriteCloser
	dec    *json.Decoder
	log    *tail
	exited chan struct{}
}

// startClients starts `bin bench stream-clients` with job; what it logs
// goes to log too.
func startClients(bin string, job clientJob, log io.Writer) (*clientProc, error) {
	p := &clientProc{job: job, cmd: exec.Command(bin, "bench", "stream-clients"), log: &tail{}, exited: make(chan struct{})}
	p.cmd.Stderr = io.MultiWriter(p.log, log)
	in, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.in, p.dec = in, json.NewDecoder(out)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(p.cmd.Args, " "), err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	line, err := json.Marshal(job)
	if err != nil {
		p.stop()
		return nil, err
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		p.stop()
		return nil, fmt.Errorf("client process: %w (%s)", err, p.log)
	}
	return p, nil
}

// send writes one command line ("measure <nanos>", "report").
func (p *clientProc) send(cmd string) error {
	if _, err := io.WriteString(p.in, cmd+"\n"); err != nil {
		return fmt.Errorf("client process: %s: %w (%s)", cmd, err, p.log)
	}
	return nil
}

// read decodes the process's next answer into v, waiting at most within.
func (p *clientProc) read(ctx context.Context, within time.Duration, v any) error {
	got := make(chan error, 1)
	go func() { got <- p.dec.Decode(v) }()
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("client process for %s: %w (its log: %s)", p.job.Host, err, p.log)
		}
		return nil
	case <-time.After(within):
		return fmt.Errorf("client process for %s: no answer within %s (its log: %s)", p.job.Host, within, p.log)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop closes the process's streams (the end of its stdin) and waits for
// it to exit, killing it after 30 s.
func (p *clientProc) stop() {
	p.in.Close()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *clientProc) pid() int { return p.cmd.Process.Pid }

// tail keeps the last few KiB a child wrote to stderr, for its errors.
type tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if n := t.buf.Len(); n > 8<<10 {
		t.buf.Next(n - 8<<10)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf.Len() == 0 {
		return "empty"
	}
	return strings.TrimSpace(t.buf.String())
}

// clientSlot is one client process's share of the streams: count
// streams to node, from first on, dialled from source when set.
type clientSlot struct {
	node, first, count int
	source             string
}

// planClients spreads streams evenly over nodes, and each node's over as
// few client processes as the limits allow: each holds at most
// perProcess streams (its descriptors), and connect() finds at most
// `ports` local ports towards one address and port (the ephemeral
// range), of which it counts on nine in ten, the rest being other
// programs'. A node that needs more streams than that gets one source
// address per process (127.0.0.2, 127.0.0.3, …: all of 127/8 is
// loopback on Linux), each with the whole range.
func planClients(streams, nodes, perProcess, ports int) []clientSlot {
	var out []clientSlot
	first, procs := 0, 0
	budget := ports * 9 / 10
	for k := range nodes {
		n := streams / nodes
		if k < streams%nodes {
			n++
		}
		per := perProcess
		sourced := n > budget
		if sourced {
			per = min(per, budget)
		}
		count := (n + per - 1) / per
		for j := range count {
			c := n / count
			if j < n%count {
				c++
			}
			slot := clientSlot{node: k, first: first, count: c}
			if sourced {
				slot.source = fmt.Sprintf("127.0.0.%d", 2+procs)
			}
			out = append(out, slot)
			first += c
			procs++
		}
	}
	return out
}

// localPorts is the width of the kernel's ephemeral port range.
func localPorts() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			lo, err1 := strconv.Atoi(f[0])
			hi, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && hi >= lo {
				return hi - lo + 1
			}
		}
	}
	return 60999 - 32768 + 1 // Linux's default
}

// streamsPerProcess is how many streams one client process may hold: its
// descriptor limit (a child inherits this process's hard limit, and Go
// raises the soft one to it) less 2,000 for everything else.
func streamsPerProcess() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Max < 4000 {
		return 2000
	}
	return int(min(l.Max-2000, 1<<20))
}
