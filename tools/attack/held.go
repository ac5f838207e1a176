package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Scenario held: many connections, none with a key, each sends a body
// route's request head announcing a large body and the first part of it,
// then holds the connection open without sending more.

type heldOptions struct {
	conns         int
	sameNode      bool
	sent          int // body bytes sent on the JSON routes
	hold, settle  time.Duration
	routes        string
	capRuns       string
	parsedRoutes  []heldRoute // from routes, by validate
	parsedCapRuns []string    // from capRuns, by validate
}

// heldRoute is one body route and what is sent on it.
type heldRoute struct {
	name      string
	path      string
	header    func() []string // header lines, "Name: value"
	announced int             // Content-Length
	sent      int             // body bytes sent before holding (-sent, but for the form)
	prefix    string          // the body's start; 'x's follow
}

var heldRouteList = []heldRoute{
	{name: "mcp", path: "/mcp", announced: 1 << 20, prefix: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"pad":"`,
		header: func() []string {
			return []string{"Content-Type: application/json", "Accept: application/json, text/event-stream"}
		}},
	{name: "runs", path: "/api/v1/runs", announced: 1 << 20, prefix: `{"app_slug":"cold-email-writer","input":{"pad":"`,
		header: func() []string { return []string{"Content-Type: application/json"} }},
	{name: "stripe", path: "/billing/stripe/webhook", announced: 1 << 20, prefix: `{"id":"evt_attack","type":"checkout.session.completed","pad":"`,
		header: func() []string {
			return []string{"Content-Type: application/json", "Stripe-Signature: t=" + strconv.FormatInt(time.Now().Unix(), 10) + ",v1=00"}
		}},
	// The webhook takes at most 256 KiB (a larger body is refused unread):
	// its largest, the first -sent bytes sent.
	{name: "stripe-max", path: "/billing/stripe/webhook", announced: 256 << 10, prefix: `{"id":"evt_attack","type":"checkout.session.completed","pad":"`,
		header: func() []string {
			return []string{"Content-Type: application/json", "Stripe-Signature: t=" + strconv.FormatInt(time.Now().Unix(), 10) + ",v1=00"}
		}},
	// The website's form limit is 64 KiB: 60,000 bytes announced, all but
	// the last sent.
	{name: "signin", path: "/signin", announced: 60000, sent: 59999, prefix: "email=attacker%40example.com&password=",
		header: func() []string { return []string{"Content-Type: application/x-www-form-urlencoded"} }},
}

func (o *heldOptions) validate() error {
	errs := []error{positive("conns", o.conns), positive("hold", o.hold)}
	if o.sent < 100 || o.sent >= 1<<20 {
		errs = append(errs, fmt.Errorf("-sent must be at least 100 and below 1 MiB (1048576), the body announced"))
	}
	if o.settle < 0 {
		errs = append(errs, fmt.Errorf("-settle must not be negative"))
	}
	var names []string
	for _, r := range heldRouteList {
		names = append(names, r.name)
	}
	o.parsedRoutes = nil
	for _, name := range strings.Split(o.routes, ",") {
		found := false
		for _, r := range heldRouteList {
			if r.name == strings.TrimSpace(name) {
				o.parsedRoutes, found = append(o.parsedRoutes, r), true
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("-routes: unknown route %q: want some of %s", name, strings.Join(names, ",")))
		}
	}
	o.parsedCapRuns = nil
	for _, v := range strings.Split(o.capRuns, ",") {
		v = strings.TrimSpace(v)
		if n, err := strconv.Atoi(v); v != "default" && (err != nil || n < 0) {
			errs = append(errs, fmt.Errorf("-conns-per-addr: %q is neither `default` nor a number 0 or above", v))
		}
		o.parsedCapRuns = append(o.parsedCapRuns, v)
	}
	return errors.Join(errs...)
}

// stripeEnv makes the node sell Credits, with settings no one can use:
// its webhook route then reads a body that carries a Stripe-Signature.
var stripeEnv = map[string]string{
	"APPRUN_STRIPE_SECRET_KEY": "sk_test_attack_not_a_key", "APPRUN_STRIPE_WEBHOOK_SECRET": "whsec_attack_not_a_secret",
	"APPRUN_CREDIT_PACKS": "100:500:usd",
}

// heldGrowthLimit is the bound on RSS growth while held; after
// closing, "near baseline" is read as within heldNearBaseline.
const (
	heldGrowthLimit  = 150 << 20
	heldNearBaseline = 32 << 20
)

func runHeld(ctx context.Context, o options) ([]*Report, error) {
	ho := o.held
	if err := raiseFileLimit(uint64(ho.conns) + 512); err != nil {
		return nil, err
	}
	var reports []*Report
	for _, capRun := range ho.parsedCapRuns {
		rep := newReport("held", fmt.Sprintf("%d connections holding unauthenticated bodies on each body route, conns-per-addr %s: "+
			"RSS growth under 150 MiB, and back near baseline after they close", ho.conns, capRun))
		reports = append(reports, rep)
		err := holdRoutes(ctx, o, capRun, rep)
		rep.finish()
		if err != nil {
			return reports, err
		}
	}
	return reports, nil
}

// holdRoutes attacks each route in turn, on a node of its own (with
// -same-node, on one node for all).
func holdRoutes(ctx context.Context, o options, capRun string, rep *Report) error {
	ho := o.held
	env := map[string]string{}
	for k, v := range stripeEnv {
		env[k] = v
	}
	if capRun != "default" {
		env["APPRUN_CONNS_PER_ADDR"] = capRun
	}
	var n *Node
	for i, route := range ho.parsedRoutes {
		if n == nil || !ho.sameNode {
			if n != nil {
				n.Close(o.keepLog)
			}
			var err error
			if n, err = startNode(ctx, o.bin, env); err != nil {
				return err
			}
			rep.NodeEnv = n.Env
		}
		// Each route from an address of its own (127.0.0.2, .3, …): on one
		// node, the node counts refusals and connections by address, and
		// one route's count should not decide the next one's answers.
		src := net.IPv4(127, 0, 0, byte(2+i))
		if route.name != "signin" {
			route.sent = min(ho.sent, route.announced-1)
		}
		if err := holdRoute(ctx, n, ho, route, src, rep); err != nil {
			n.Close(true)
			return err
		}
	}
	n.Close(o.keepLog)
	if ho.sameNode {
		rep.note("all routes on one node, one after another")
	} else {
		rep.note("each route on a fresh node (the env above is the last one's; APPRUN_ADDR and APPRUN_DATA differ)")
	}
	rep.note("each route from its own source address, 127.0.0.2 onwards; no Authorization header anywhere")
	return nil
}

func holdRoute(ctx context.Context, n *Node, ho heldOptions, route heldRoute, src net.IP, rep *Report) error {
	progress("held: %s: %d connections from %s, %d of %d body bytes each, held %s", route.path, ho.conns, src, route.sent, route.announced, ho.hold)
	rssBefore, err := n.RSS()
	if err != nil {
		return err
	}
	fdsBefore, _ := n.FDs()
	samp := startSampler(n, 100*time.Millisecond)

	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nUser-Agent: apprun-attack\r\n", route.path, n.Addr, route.announced)
	for _, h := range route.header() {
		head.WriteString(h + "\r\n")
	}
	head.WriteString("\r\n")
	body := route.prefix + strings.Repeat("x", route.sent-len(route.prefix))
	request := []byte(head.String() + body)

	var (
		closing            atomic.Bool
		mu                 sync.Mutex
		conns              []net.Conn
		dialErrs, writeErr = map[string]int{}, 0
		answers            = make(chan string, ho.conns)
		readers            sync.WaitGroup
	)
	start := time.Now()
	next := make(chan struct{})
	var openers sync.WaitGroup
	for range 32 {
		openers.Add(1)
		go func() {
			defer openers.Done()
			d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: src}}
			for range next {
				c, err := d.DialContext(ctx, "tcp", n.Addr)
				if err != nil {
					mu.Lock()
					dialErrs[errClass(err)]++
					mu.Unlock()
					continue
				}
				readers.Add(1)
				go func() {
					defer readers.Done()
					answers <- readAnswer(c, &closing)
				}()
				_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				_, werr := c.Write(request)
				mu.Lock()
				conns = append(conns, c)
				if werr != nil {
					writeErr++
				}
				mu.Unlock()
			}
		}()
	}
	for range ho.conns {
		if ctx.Err() != nil {
			break
		}
		next <- struct{}{}
	}
	close(next)
	openers.Wait()
	opening := time.Since(start)
	select {
	case <-time.After(ho.hold):
	case <-ctx.Done():
	}
	rssPeak, fdsPeak := samp.Peak()
	rssAtClose, _ := n.RSS()
	closing.Store(true)
	for _, c := range conns {
		_ = c.Close()
	}
	readers.Wait()
	close(answers)
	tally := map[string]int{}
	for a := range answers {
		tally[a]++
	}
	select {
	case <-time.After(ho.settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	rssTop, fdsTop := samp.Stop()
	rssAfter, err := n.RSS()
	if err != nil {
		return fmt.Errorf("the node is gone after %s (%w); its log:\n%s", route.path, err, n.logTail(30))
	}
	fdsAfter, _ := n.FDs()

	p := route.name + ": "
	rep.add(p+"RSS before", mib(rssBefore), "MiB")
	rep.add(p+"RSS peak while held", mib(rssPeak), "MiB")
	rep.add(p+"RSS when closing", mib(rssAtClose), "MiB")
	rep.check(fmt.Sprintf("%sRSS growth, highest until %s after closing", p, ho.settle), mib(rssTop-rssBefore), "MiB", "under 150 MiB",
		rssTop-rssBefore < heldGrowthLimit)
	rep.check(fmt.Sprintf("%sRSS %s after closing", p, ho.settle), mib(rssAfter), "MiB",
		fmt.Sprintf("near baseline, within 32 MiB (%+.1f)", mib(rssAfter-rssBefore)), rssAfter-rssBefore <= heldNearBaseline)
	rep.add(p+"answers", counts(tally), "")
	rep.add(p+"node descriptors before / peak / after", fmt.Sprintf("%d / %d / %d", fdsBefore, max(fdsPeak, fdsTop), fdsAfter), "")
	rep.add(p+"connections opened (in s)", fmt.Sprintf("%d of %d (%.2f s)", len(conns), ho.conns, opening.Seconds()), "")
	if len(dialErrs) > 0 || writeErr > 0 {
		rep.add(p+"client-side failures", fmt.Sprintf("dial: %s; writes failed: %d", counts(dialErrs), writeErr), "")
	}
	return nil
}

// readAnswer reads a held connection's status line: the status code, or
// how the connection ended without one.
func readAnswer(c net.Conn, closing *atomic.Bool) string {
	line, err := bufio.NewReader(c).ReadString('\n')
	switch {
	case err == nil:
		if f := strings.Fields(line); len(f) >= 2 {
			return f[1]
		}
		return "garbled"
	case closing.Load():
		return "none (held until closed)"
	case errors.Is(err, io.EOF):
		return "none (closed by the node)"
	case errors.Is(err, syscall.ECONNRESET):
		return "none (reset by the node)"
	}
	return "none (" + errClass(err) + ")"
}

func errClass(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, context.Canceled):
		return "interrupted"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return err.Error()
}

// raiseFileLimit makes sure this process can hold want descriptors.
func raiseFileLimit(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= want {
		return nil
	}
	if lim.Max < want {
		return fmt.Errorf("this needs %d file descriptors and the hard limit is %d: raise it (ulimit -Hn) or lower -conns", want, lim.Max)
	}
	lim.Cur = want
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}
