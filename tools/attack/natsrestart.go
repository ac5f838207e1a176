package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Scenario natsrestart: the node runs on an external nats-server, which
// is killed and, some seconds later, started again on the same port and
// store. /readyz and an API read are polled throughout; after the restart
// a create is tried until it is taken, and its run followed to its end.

type natsRestartOptions struct {
	natsServer   string
	down, within time.Duration
}

func (o natsRestartOptions) validate() error {
	return errors.Join(positive("down", o.down), positive("within", o.within))
}

// servesWithin is the bound: the API serves again within 10 s of
// NATS being back.
const servesWithin = 10 * time.Second

func runNATSRestart(ctx context.Context, o options) ([]*Report, error) {
	no := o.natsRestart
	rep := newReport("natsrestart", "external NATS restarted: the API serves again within 10 s of NATS being back, "+
		"and /readyz was 503 while it could not")
	dir, err := os.MkdirTemp("", "apprun-attack-nats-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := no.natsServer
	if bin == "" {
		if bin, err = buildNATS(ctx, dir); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ns := &natsServer{bin: bin, store: filepath.Join(dir, "store"), addr: "127.0.0.1:" + strconv.Itoa(port), log: filepath.Join(dir, "nats.log")}
	if err := ns.start(ctx); err != nil {
		return nil, err
	}
	defer ns.stop()
	n, err := startNode(ctx, o.bin, map[string]string{"APPRUN_NATS_URL": "nats://" + ns.addr})
	if err != nil {
		return nil, err
	}
	rep.NodeEnv = n.Env
	rep.note("nats-server: %s -js -sd %s -a 127.0.0.1 -p %d", bin, ns.store, port)
	err = restartUnder(ctx, n, ns, no, rep)
	n.Close(err != nil || o.keepLog)
	return []*Report{rep}, err
}

func restartUnder(ctx context.Context, n *Node, ns *natsServer, no natsRestartOptions, rep *Report) error {
	c := newClient(n.URL, 30*time.Second)
	// Reads and creates are limited per key (120 and 10 a minute): the
	// polls take turns over eight keys of one account.
	acct, key, err := c.openAccount(ctx, n.AdminToken, "poller@example.com", 1000)
	if err != nil {
		return err
	}
	keys := []string{key}
	for range 7 {
		k, err := c.addKey(ctx, n.AdminToken, acct)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	rot := &keyRing{keys: keys}
	if st, err := createAndFinish(ctx, c, rot, 30*time.Second, nil); err != nil || st != "completed" {
		return fmt.Errorf("the run before the restart: %q, %v", st, err)
	}

	polls, stop := context.WithCancel(ctx)
	defer stop()
	ready := startPoller(polls, c, "/readyz", nil)
	reads := startPoller(polls, c, "/api/v1/account", rot)
	time.Sleep(time.Second) // a second of answers with NATS up
	progress("natsrestart: SIGKILL nats-server (pid %d); up again in %s", ns.cmd.Process.Pid, no.down)
	killed := time.Now()
	ns.kill()
	select {
	case <-time.After(no.down):
	case <-ctx.Done():
		return ctx.Err()
	}
	restarting := time.Now()
	if err := ns.start(ctx); err != nil {
		return err
	}
	back := time.Now()
	progress("natsrestart: nats-server accepting clients again after %s; waiting for the node", back.Sub(restarting).Round(time.Millisecond))

	// A create, tried every 500 ms until taken, then its run followed.
	var created, ended time.Time
	var createTries samples
	status, err := createAndFinish(ctx, c, rot, no.within, func(s sample) {
		createTries.add(s)
		if s.status == http.StatusCreated {
			created = s.end
		}
	})
	if err == nil {
		ended = time.Now()
	}
	// Until /readyz and the read have both answered 200 since NATS came
	// back (or no.within passes), then a second more.
	deadline := back.Add(no.within)
	for time.Now().Before(deadline) && (ready.firstAfter(back, isOK).IsZero() || reads.firstAfter(back, isOK).IsZero()) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	stop()
	ready.wait()
	reads.wait()

	r, a := ready.all(), reads.all()
	rep.add("nats-server restart took (exec to accepting clients)", back.Sub(restarting).Seconds(), "s")
	first503 := r.first(killed, func(s sample) bool { return s.status == http.StatusServiceUnavailable })
	if first503.end.IsZero() {
		rep.check("/readyz first 503 after the kill", "never", "", "503 while NATS is down", false)
	} else {
		rep.add("/readyz first 503 after the kill", first503.end.Sub(killed).Seconds(), "s")
	}
	if f := a.first(killed, func(s sample) bool { return !isOK(s) }); !f.end.IsZero() {
		rep.add("API read (GET /api/v1/account) first failure after the kill", fmt.Sprintf("%s, sent at %+.2f s, answered at %+.2f s",
			f.label(), f.start.Sub(killed).Seconds(), f.end.Sub(killed).Seconds()), "")
	} else {
		rep.add("API read (GET /api/v1/account) first failure after the kill", "never", "")
	}
	green := 0
	for _, s := range r.between(first503.end, restarting) {
		if isOK(s) {
			green++
		}
	}
	rep.check("/readyz 200s while NATS was down (after its first 503)", green, "", "0", green == 0)
	rep.add("/readyz answers seen, in order", r.distinct(), "")

	ok := func(name string, t time.Time) {
		if t.IsZero() {
			rep.check(name, fmt.Sprintf("not within %s", no.within), "", "within 10 s of NATS back", false)
			return
		}
		rep.check(name, t.Sub(back).Seconds(), "s", "within 10 s of NATS back", t.Sub(back) <= servesWithin)
	}
	ok("/readyz 200 again", r.firstAfter(back, isOK))
	ok("GET /api/v1/account 200 again", a.firstAfter(back, isOK))
	ok("a create answered 201", created)
	if err != nil {
		rep.check("that run ended", err.Error(), "", "completed", false)
	} else {
		rep.check("that run ended", fmt.Sprintf("%s, %.2f s after NATS back", status, ended.Sub(back).Seconds()), "", "completed", status == "completed")
	}
	rep.add("creates tried after the restart", createTries.summary(), "")
	rep.add("/readyz answers, from the kill on", r.timeline(killed), "")
	rep.add("GET /api/v1/account answers, from the kill on", a.timeline(killed), "")

	api := append(append(samples{}, a...), createTries...)
	broken, idle := mismatches(r, api)
	rep.check("API answers 5xx while /readyz said 200 (green but broken)", len(broken), "", "0", len(broken) == 0)
	rep.check("API answers 2xx while /readyz said 503", len(idle), "", "0", len(idle) == 0)
	for _, s := range append(broken, idle...) {
		rep.note("%s %s at %+.2f s from the kill, /readyz said otherwise before and after it", s.path, s.label(), s.end.Sub(killed).Seconds())
	}
	return nil
}

// createAndFinish creates a cold-email-writer run, trying every 500 ms
// until one is taken (each answer given to seen), then polls it every
// 100 ms until it ends, all within within; it returns its end status.
func createAndFinish(ctx context.Context, c *client, keys *keyRing, within time.Duration, seen func(sample)) (string, error) {
	deadline := time.Now().Add(within)
	var out run
	for {
		s := sample{path: "POST /api/v1/runs", start: time.Now()}
		r, err := c.do(ctx, "POST", "/api/v1/runs", keys.next(), coldEmail(), nil)
		s.end, s.status, s.err = time.Now(), r.Status, err
		if seen != nil {
			seen(s)
		}
		if err == nil && r.Status == http.StatusCreated {
			if err := r.decode(&out); err != nil {
				return "", err
			}
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no create taken within %s (last: %s)", within, s.label())
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	for time.Now().Before(deadline) {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		r, err := c.do(ctx, "GET", "/api/v1/runs/"+out.RunNo, keys.next(), nil, nil)
		var cur run
		if err == nil && r.Status == http.StatusOK && r.decode(&cur) == nil && cur.terminal() {
			return cur.Status, nil
		}
	}
	return "", fmt.Errorf("run %s not ended within %s", out.RunNo, within)
}
