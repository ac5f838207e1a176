package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// natsServer is an external nats-server with JetStream, on a loopback
// port and a store directory that outlive its restarts.
type natsServer struct {
	bin, store, addr, log string
	cmd                   *exec.Cmd
	exited                chan struct{}
}

// buildNATS builds nats-server from the version go.mod requires, into dir.
func buildNATS(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "nats-server")
	progress("natsrestart: building nats-server from go.mod (go build github.com/nats-io/nats-server/v2)")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/nats-io/nats-server/v2")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build nats-server (run from the repository's root, or pass -nats-server): %v\n%s", err, b)
	}
	return out, nil
}

// start runs nats-server and waits until it greets a client (its INFO).
func (s *natsServer) start(ctx context.Context) error {
	host, port, _ := net.SplitHostPort(s.addr)
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(s.bin, "-js", "-sd", s.store, "-a", host, "-p", port)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start nats-server %s: %w", s.bin, err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.cmd, s.exited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("nats-server exited at start; see %s", s.log)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "INFO ") {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats-server not accepting clients on %s within 30 s; see %s", s.addr, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends it with SIGKILL, as a crash would.
func (s *natsServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// stop ends it with SIGTERM (SIGKILL after 10 s).
func (s *natsServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}
