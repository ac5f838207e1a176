// Package mailpit starts a real SMTP catcher for tests: mailpit
// (github.com/axllent/mailpit, installed from the Go module proxy with
// `go install github.com/axllent/mailpit@v1.27.11`), on free loopback
// ports with its database in the test's temporary directory, stopped at
// the test's end. A test sends mail to SMTPURL and reads what arrived
// through mailpit's HTTP API (/api/v1/messages, /api/v1/message/{ID}).
// Without a mailpit binary the test is skipped.
package mailpit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/internal/logbuf"
)

// Catcher is a running mailpit.
type Catcher struct {
	t    testing.TB
	smtp string // host:port
	api  string // http://host:port
	cmd  *exec.Cmd
	out  *logbuf.Buffer
}

// Message is one mail mailpit received.
type Message struct {
	ID      string
	From    string
	To      []string
	Subject string
	Text    string
	HTML    string
}

// Binary finds mailpit: $APPRUN_MAILPIT, else mailpit on PATH, else
// $(go env GOPATH)/bin/mailpit ("" when none is there).
func Binary() string {
	if p := os.Getenv("APPRUN_MAILPIT"); p != "" {
		return p
	}
	if p, err := exec.LookPath("mailpit"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(strings.SplitN(string(out), string(os.PathListSeparator), 2)[0])
		}
	}
	if gopath != "" {
		if p := filepath.Join(gopath, "bin", "mailpit"); isFile(p) {
			return p
		}
	}
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Start starts a mailpit for t and stops it at t's cleanup; it skips t
// when no mailpit binary is found (and fails it under CI, which installs
// one).
func Start(t testing.TB) *Catcher {
	t.Helper()
	bin := Binary()
	if bin == "" && os.Getenv("CI") != "" {
		t.Fatal("no mailpit: .ci/run installs it with `go install github.com/axllent/mailpit@v1.27.11`")
	}
	if bin == "" {
		t.Skip("no mailpit: `go install github.com/axllent/mailpit@v1.27.11`, or set APPRUN_MAILPIT to its path")
	}
	var lastErr error
	for range 5 { // a free port may be taken between its pick and mailpit's bind
		c, err := start(t, bin)
		if err == nil {
			return c
		}
		lastErr = err
	}
	t.Fatalf("mailpit did not start: %v", lastErr)
	return nil
}

func start(t testing.TB, bin string) (*Catcher, error) {
	smtpAddr, apiAddr := freeAddr(), freeAddr()
	if smtpAddr == "" || apiAddr == "" {
		return nil, errors.New("no free loopback port")
	}
	dir := t.TempDir()
	c := &Catcher{t: t, smtp: smtpAddr, api: "http://" + apiAddr, out: &logbuf.Buffer{}}
	c.cmd = exec.Command(bin, "--smtp", smtpAddr, "--listen", apiAddr,
		"--database", filepath.Join(dir, "mailpit.db"), "--disable-version-check", "--smtp-disable-rdns", "--quiet")
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(exited) }()
	stop := func() {
		_ = c.cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = c.cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c.ready() {
			t.Cleanup(stop)
			return c, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("mailpit exited: %s", c.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("mailpit did not answer within 15s: %s", c.out.String())
		}
	}
}

// ready says whether both the API and the SMTP port answer.
func (c *Catcher) ready() bool {
	resp, err := http.Get(c.api + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	conn, err := net.DialTimeout("tcp", c.smtp, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return resp.StatusCode == http.StatusOK
}

// freeAddr is a loopback address with a port nothing listens on.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer ln.Close()
	return ln.Addr().String()
}

// SMTPURL is where to send mail: smtp://127.0.0.1:port (no TLS, no
// authentication, as mailpit takes it by default).
func (c *Catcher) SMTPURL() string { return "smtp://" + c.smtp }

// APIURL is the base of mailpit's HTTP API and web UI.
func (c *Catcher) APIURL() string { return c.api }

// Messages is every message received, newest first.
func (c *Catcher) Messages(t testing.TB) []Message {
	t.Helper()
	var list struct {
		Messages []struct {
			ID      string
			From    address
			To      []address
			Subject string
		} `json:"messages"`
	}
	c.get(t, "/api/v1/messages?limit=500", &list)
	out := make([]Message, len(list.Messages))
	for i, m := range list.Messages {
		out[i] = Message{ID: m.ID, From: m.From.Address, Subject: m.Subject}
		for _, a := range m.To {
			out[i].To = append(out[i].To, a.Address)
		}
	}
	return out
}

type address struct{ Name, Address string }

// Message reads one message whole: its text and HTML bodies.
func (c *Catcher) Message(t testing.TB, id string) Message {
	t.Helper()
	var m struct {
		ID      string
		From    address
		To      []address
		Subject string
		Text    string
		HTML    string
	}
	c.get(t, "/api/v1/message/"+url.PathEscape(id), &m)
	out := Message{ID: m.ID, From: m.From.Address, Subject: m.Subject, Text: m.Text, HTML: m.HTML}
	for _, a := range m.To {
		out.To = append(out.To, a.Address)
	}
	return out
}

// Latest waits (up to 20s) for a message to the address to, and returns
// the newest one whole.
func (c *Catcher) Latest(t testing.TB, to string) Message {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, m := range c.Messages(t) {
			for _, a := range m.To {
				if strings.EqualFold(a, to) {
					return c.Message(t, m.ID)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit: no message to %s within 20s", to)
		}
		time.Sleep(50 * time.Millisecond) // mail arrives on its own time: poll it
	}
}

func (c *Catcher) get(t testing.TB, path string, into any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.api+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("mailpit %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mailpit %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("mailpit %s: %v: %s", path, err, body)
	}
}
