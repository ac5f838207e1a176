// Package stripemock starts stripe-mock, Stripe's own mock of its API, on
// a loopback port for tests. The binary is bin/stripe-mock at the
// module's root (make test installs it); when it is missing, the first
// test installs it there with go install.
package stripemock

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the stripe-mock release the tests run.
const Version = "v0.203.0"

var (
	installOnce sync.Once
	installErr  error
	binary      string
)

func install(t testing.TB) string {
	installOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			installErr = err
			return
		}
		bin := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "bin")
		binary = filepath.Join(bin, "stripe-mock")
		if _, err := os.Stat(binary); err == nil {
			return
		}
		cmd := exec.Command("go", "install", "github.com/stripe/stripe-mock@"+Version)
		cmd.Env = append(os.Environ(), "GOBIN="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = &installError{err: err, out: string(out)}
		}
	})
	if installErr != nil {
		t.Fatalf("stripe-mock is not installed and could not be (make test installs it): %v", installErr)
	}
	return binary
}

type installError struct {
	err error
	out string
}

func (e *installError) Error() string { return e.err.Error() + ": " + e.out }

var listening = regexp.MustCompile(`Listening for HTTP at address: (\S+)`)

// Start runs stripe-mock on loopback until the test ends and returns its
// API base URL.
func Start(t testing.TB) string {
	t.Helper()
	bin := install(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- "http://" + m[1]
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not say where it listens within 30s")
		return ""
	}
}
