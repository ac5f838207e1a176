package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apprun/apprun/node"
)

// clockTicks is CLK_TCK, the unit of utime and stime in /proc/<pid>/stat
// (100 on Linux for every architecture Go supports).
const clockTicks = 100

// Node is one `apprun serve --dev` process started for a scenario, on a
// fresh data directory and a free loopback port of its own.
type Node struct {
	Root string   // temp directory holding data/ and node.log
	Data string   // APPRUN_DATA
	Addr string   // APPRUN_ADDR
	URL  string   // http://Addr
	Env  []string // the APPRUN_*/OPENAI_* settings it was given, sorted
	Log  string   // its stdout and stderr

	APIKey     string // the demo account's key, from dev-credentials.json
	AdminToken string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

// startNode starts bin as `serve --dev` with env added to this process's
// environment (whose own APPRUN_* and OPENAI_* variables are dropped, so
// that a shell's settings do not change the measurement), and waits until
// /readyz answers 200 and the dev credentials are written.
func startNode(ctx context.Context, bin string, env map[string]string) (*Node, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return nil, fmt.Errorf("no apprun binary at %s: build it with `go build -o bin/apprun ./cmd/apprun` (or `make build`), or pass -bin", bin)
	}
	root, err := os.MkdirTemp("", "apprun-attack-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &Node{Root: root, Data: filepath.Join(root, "data"), Addr: "127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(root, "node.log"),
		exited: make(chan struct{})}
	n.URL = "http://" + n.Addr
	// The ledger's key, outside the data directory, as production keeps it.
	keyFile := filepath.Join(root, "ledger-key.pem")
	if err := node.WriteSigningKey(keyFile); err != nil {
		return nil, err
	}
	all := map[string]string{"APPRUN_DATA": n.Data, "APPRUN_ADDR": n.Addr, "APPRUN_LEDGER_SIGNING_KEY": keyFile}
	for k, v := range env {
		all[k] = v
	}
	for k, v := range all {
		n.Env = append(n.Env, k+"="+v)
	}
	sort.Strings(n.Env)
	logf, err := os.Create(n.Log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	n.cmd = exec.Command(abs, "serve", "--dev")
	n.cmd.Env = append(cleanEnviron(), n.Env...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	// Its own process group (a Ctrl-C here is handled by stopping it), and
	// SIGTERM if this tool dies without doing so.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { n.err = n.cmd.Wait(); close(n.exited) }()
	progress("node started: pid %d on %s, data %s", n.Pid(), n.Addr, n.Data)
	if err := n.awaitReady(ctx, 90*time.Second); err != nil {
		n.Close(true)
		return nil, err
	}
	// A second for the start's own work (replaying the log into the read
	// models, the first collections) to settle before anything is measured.
	time.Sleep(time.Second)
	return n, nil
}

// cleanEnviron is this process's environment without APPRUN_* and OPENAI_*.
func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "APPRUN_") && !strings.HasPrefix(kv, "OPENAI_") {
			out = append(out, kv)
		}
	}
	return out
}

func (n *Node) awaitReady(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	c := newClient(n.URL, 2*time.Second)
	for {
		select {
		case <-n.exited:
			return fmt.Errorf("the node exited before it was ready (%v); its log:\n%s", n.err, n.logTail(30))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if r, err := c.do(ctx, "GET", "/readyz", "", nil, nil); err == nil && r.Status == 200 {
			b, err := os.ReadFile(filepath.Join(n.Data, "dev-credentials.json"))
			var creds struct {
				APIKey     string `json:"api_key"`
				AdminToken string `json:"admin_token"`
			}
			if err == nil && json.Unmarshal(b, &creds) == nil && creds.APIKey != "" && creds.AdminToken != "" {
				n.APIKey, n.AdminToken = creds.APIKey, creds.AdminToken
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the node was not ready (GET /readyz 200 and %s/dev-credentials.json written) within %s; its log:\n%s",
				n.Data, within, n.logTail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pid is the node's process id.
func (n *Node) Pid() int { return n.cmd.Process.Pid }

// Close stops the node with SIGTERM (SIGKILL after 30 s) and removes its
// data directory; keepLog keeps the node's log and says where it is.
func (n *Node) Close(keepLog bool) {
	select {
	case <-n.exited:
	default:
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(30 * time.Second):
			progress("the node did not stop within 30 s of SIGTERM: killing it")
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
	}
	_ = os.RemoveAll(n.Data)
	if keepLog {
		progress("the node's log is kept at %s", n.Log)
		return
	}
	_ = os.RemoveAll(n.Root)
}

// Alive says whether the node's process is still running.
func (n *Node) Alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// logTail is the last lines of the node's log.
func (n *Node) logTail(lines int) string {
	b, err := os.ReadFile(n.Log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// RSS is the node's resident memory in bytes (VmRSS).
func (n *Node) RSS() (int64, error) { return procRSS(n.Pid()) }

// CPU is the node's CPU time so far, user and system, in seconds.
func (n *Node) CPU() (float64, error) { return procCPU(n.Pid()) }

// FDs is the number of the node's open file descriptors.
func (n *Node) FDs() (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", n.Pid()))
	return len(ents), err
}

// LogBytes is the size of every file under <data>/nats: the embedded
// NATS server's store, the event log among it.
func (n *Node) LogBytes() (int64, error) {
	var total int64
	err := filepath.WalkDir(filepath.Join(n.Data, "nats"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a file removed while walking (a compacted block)
			}
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total, err
}

func procRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after its closing one, from field 3 (state).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(utime+stime) / clockTicks, nil
}

// freePort asks the kernel for a loopback port no one listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
