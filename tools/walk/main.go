// Command walk measures the walk of one create: which of apprun's
// functions, in which files and in which order, run from the HTTP handler
// of POST /api/v1/runs to the log (make walk). It is built with the copy
// of apprun that tools/walk/overlay writes, whose every function records
// its entry (tools/walk/trace).
//
// It wires the real parts below the handler (the service, the JetStream
// log on an embedded server, the catalog); only the read model that
// authenticates is a stub, and no executor runs, so that nothing but the
// create is recorded. Two creates warm the caches. The third is recorded
// on the handler's goroutine from the handler's entry until its admission
// reaches the log port (the JetStream adapter below it is the log, not
// the walk, and the answer comes after). What runs in front of the
// handler (the router, the edge) is not the walk.
package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/node"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/subjects"
	"github.com/apprun/apprun/tools/walk/trace"
)

var check = flag.String("check", "", "a Markdown file whose list of the walk's files must match")

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "walk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ns, err := embednats.New(embednats.Config{StoreDir: filepath.Join(dir, "nats"), Logger: quiet})
	if err != nil {
		return err
	}
	if err := ns.Start(); err != nil {
		return err
	}
	defer ns.Stop()
	nc, err := ns.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	events, err := eventlog.Open(ctx, nc, eventlog.Config{Logger: quiet})
	if err != nil {
		return err
	}
	list, err := node.Config{}.LoadApps()
	if err != nil {
		return err
	}
	catalog, err := engine.NewCatalog(inputschema.Compile, list...)
	if err != nil {
		return err
	}
	ports := events.Ports()
	tap := &tapLog{Log: ports.Log}
	ports.Log = tap
	// The ledger signed, as a node signs it.
	signer, err := ledger.NewSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	if err != nil {
		return err
	}
	svc, err := service.New(ports, service.Config{Catalog: catalog, Reads: noReads{}, Logger: quiet, Standalone: true, Signer: signer,
		Limits: engine.Limits{CreatePerMinute: 100, OwnerActiveRuns: 100, PlatformActiveRuns: 12}})
	if err != nil {
		return err
	}
	if err := svc.Prepare(ctx); err != nil {
		return err
	}
	acct, err := svc.OpenAccount(ctx, "walk@example.com", 1000, ledger.By{Actor: "system:walk"})
	if err != nil {
		return err
	}
	reads := &keyReads{key: engine.Key{KeyID: acct.KeyID, AccountID: acct.AccountID}}
	api, err := httpapi.New(httpapi.Config{Engine: svc, Reads: reads, AdminToken: "walk-admin-token-0123", Logger: quiet})
	if err != nil {
		return err
	}
	input := map[string]any{"product_description": "Acme Ledger", "target_role": "Agency founders"}
	body, err := json.Marshal(map[string]any{"app_slug": "cold-email-writer", "input": input})
	if err != nil {
		return err
	}
	create := func() error {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/runs", bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+acct.APIKey)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		if w.Code != http.StatusCreated {
			return fmt.Errorf("create answered %d: %s", w.Code, w.Body)
		}
		return nil
	}
	for range 2 {
		if err := create(); err != nil {
			return err
		}
	}
	// The create, from its handler's entry to the log port.
	whole, err := tap.record("httpapi/run.go", "createRun", create)
	if err != nil {
		return err
	}
	// What every keyed JSON route runs: a brand context refused at its
	// body's second member, before anything of its own, from the entry of
	// the handler that authenticates it.
	keyed := trace.Start("httpapi/auth.go", "keyed")
	br := httptest.NewRequest(http.MethodPost, "/api/v1/brand-contexts", strings.NewReader(`{"name":"n","voice":5}`))
	br.Header.Set("Authorization", "Bearer "+acct.APIKey)
	br.Header.Set("Content-Type", "application/json")
	bw := httptest.NewRecorder()
	api.ServeHTTP(bw, br)
	keyedJSON := funcs(keyed.End())
	if bw.Code != http.StatusBadRequest {
		return fmt.Errorf("the keyed JSON request answered %d, want 400: %s", bw.Code, bw.Body)
	}
	// The use case alone: CreateRun called as the handler calls it.
	usecase, err := tap.record("service/admission.go", "CreateRun", func() error {
		_, err := svc.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID,
			AppSlug: "cold-email-writer", Input: input})
		return err
	})
	if err != nil {
		return err
	}
	if err := reportStops(walkOnly(whole), keyedJSON); err != nil {
		return err
	}
	return report(funcs(whole), funcs(usecase), keyedJSON, firstMet(walkOnly(whole)), whole)
}

// adapters are the packages behind a port: the walk stops at the port's
// call as a reader does, at log.Append or schema.Check, and lists what ran
// behind it apart. eventlog is the log (port.Log, over JetStream);
// inputschema checks an input against its App's JSON Schema
// (engine.InputSchema, over kaptinlin/jsonschema).
var adapters = []string{"eventlog/", "inputschema/"}

// behindPort reports whether file is in an adapter.
func behindPort(file string) bool {
	for _, a := range adapters {
		if strings.HasPrefix(file, a) {
			return true
		}
	}
	return false
}

// walkOnly is stops less what ran behind a port, and this tool.
func walkOnly(stops []trace.Stop) []trace.Stop {
	var walk []trace.Stop
	for _, s := range stops {
		if !behindPort(s.File) && !strings.HasPrefix(s.File, "tools/") {
			walk = append(walk, s)
		}
	}
	return walk
}

// portsReached prints the adapters' functions the create ran behind the
// ports, by file; the log's own are left out (below the log port is
// the log, where the walk ends).
func portsReached(stops []trace.Stop) {
	byFile := map[string][]string{}
	var files []string
	for _, s := range stops {
		if !behindPort(s.File) || strings.HasPrefix(s.File, "eventlog/") {
			continue
		}
		if _, seen := byFile[s.File]; !seen {
			files = append(files, s.File)
		}
		if !slices.Contains(byFile[s.File], s.Func) {
			byFile[s.File] = append(byFile[s.File], s.Func)
		}
	}
	for _, f := range files {
		fmt.Printf("%-30s %-9s %s\n", f, "port", strings.Join(byFile[f], " "))
	}
}

// funcs is the set of functions ("file name") stops entered.
func funcs(stops []trace.Stop) map[string]bool {
	set := map[string]bool{}
	for _, s := range walkOnly(stops) {
		set[s.File+" "+s.Func] = true
	}
	return set
}

const module = "github.com/apprun/apprun/"

// runSubjects prefixes every run's subject (a create's first event is on
// its run's subject).
var runSubjects = subjects.Run("")

// tapLog is the log port. While a record is open, the first batch that
// writes a run's first event (the admission) ends it as it reaches the
// port.
type tapLog struct {
	port.Log
	mu     sync.Mutex
	open   *trace.Record
	stops  []trace.Stop
	closed bool
}

// record runs do with a record that begins at fn's entry in file and
// ends when the admission reaches the log port, and returns its stops.
func (l *tapLog) record(file, fn string, do func() error) ([]trace.Stop, error) {
	l.mu.Lock()
	l.open, l.stops, l.closed = trace.Start(file, fn), nil, false
	l.mu.Unlock()
	err := do()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.open.End()
		if err == nil {
			err = errors.New("the create wrote no run to the log")
		}
	}
	if err == nil && len(l.stops) == 0 {
		err = fmt.Errorf("nothing entered from %s %s: build with make walk (tools/walk/overlay)", file, fn)
	}
	return l.stops, err
}

func (l *tapLog) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	for _, e := range entries {
		if !strings.HasPrefix(e.Subject, runSubjects) {
			continue
		}
		l.mu.Lock()
		if l.open != nil && !l.closed {
			l.stops, l.closed = l.open.End(), true
		}
		l.mu.Unlock()
	}
	return l.Log.Append(ctx, entries...)
}

// report prints the functions the create ran that the pipeline did not,
// by file, each file marked with the part of the walk it is in: the use
// case, from the handler's call of CreateRun to the log port ("use
// case"); the request's reading shared by every keyed JSON route, each of
// whose functions the create ran ran for another route's request too
// ("shared"); or the handler's own ("http"). It counts them, and then
// lists what ran behind a port ("port"), which the count leaves out.
func report(create, usecase, keyedJSON map[string]bool, order []string, whole []trace.Stop) error {
	byFile := map[string][]string{}
	inUseCase := map[string]bool{}
	own := map[string]bool{} // files with a function no other keyed JSON route runs
	for fn := range create {
		file, name, _ := strings.Cut(fn, " ")
		byFile[file] = append(byFile[file], name)
		if usecase[fn] {
			inUseCase[file] = true
		}
		if !keyedJSON[fn] {
			own[file] = true
		}
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		part := "http"
		switch {
		case inUseCase[f]:
			part = "use case"
		case !own[f]:
			part = "shared"
		}
		sort.Strings(byFile[f])
		fmt.Printf("%-30s %-9s %s\n", f, part, strings.Join(byFile[f], " "))
	}
	portsReached(whole)
	shared := 0
	for _, f := range files {
		if !own[f] && !inUseCase[f] {
			shared++
		}
	}
	fmt.Printf("one create, handler to log port: %d files; the use case, CreateRun to the log port: %d; "+
		"the request's reading that every keyed JSON route shares: %d; the create's own: %d\n",
		len(files), len(inUseCase), shared, len(files)-shared)
	if *check == "" {
		return nil
	}
	listed, err := documented(*check)
	if err != nil {
		return err
	}
	var missing, extra, marks []string
	for _, f := range files {
		mark, ok := listed.shared[f]
		if !ok {
			missing = append(missing, f)
			continue
		}
		if isShared := !own[f] && !inUseCase[f]; mark != isShared {
			marks = append(marks, fmt.Sprintf("%s (shared: %v)", f, isShared))
		}
	}
	for f := range listed.shared {
		if !slices.Contains(files, f) {
			extra = append(extra, f)
		}
	}
	if len(missing)+len(extra)+len(marks) > 0 {
		return fmt.Errorf("%s's list of the walk is not the walk: add %v, remove %v, mark %v", *check, missing, extra, marks)
	}
	if !slices.Equal(listed.order, order) {
		return fmt.Errorf("%s lists the walk's files out of the order a reader meets them: %v", *check, order)
	}
	fmt.Printf("%s lists the same %d files\n", *check, len(files))
	return nil
}

// listing is the walk as documented: its files in order, each with
// whether it is marked "(shared)".
type listing struct {
	order  []string
	shared map[string]bool
}

// documented is the files listed in the block after "<!-- make walk -->".
func documented(path string) (listing, error) {
	l := listing{shared: map[string]bool{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return l, err
	}
	_, after, ok := strings.Cut(string(data), "<!-- make walk -->")
	if !ok {
		return l, fmt.Errorf("%s: no line <!-- make walk -->", path)
	}
	fences := 0
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "```") {
			if fences++; fences == 2 {
				break
			}
			continue
		}
		if f := strings.Fields(line); fences == 1 && len(f) > 0 {
			l.order = append(l.order, f[0])
			l.shared[f[0]] = len(f) > 1 && f[1] == "(shared)"
		}
	}
	if len(l.order) == 0 {
		return l, fmt.Errorf("%s: no fenced list after <!-- make walk -->", path)
	}
	return l, nil
}

// keyReads is the read model as far as a create needs it: the caller's
// key. (The projections are not on a create's way: it reads the log.)
type keyReads struct {
	httpapi.ReadModel
	key engine.Key
}

func (r *keyReads) KeyByHash(string) (engine.Key, error) { return r.key, nil }
func (r *keyReads) Ready() bool                          { return true }
func (r *keyReads) Failed() error                        { return nil }
func (r *keyReads) Account(string) (ledger.Account, error) {
	return ledger.Account{}, port.ErrNotFound
}

// noReads is the service's read model with nothing in it: a create names
// no brand context here.
type noReads struct{}

func (noReads) BrandContext(context.Context, string) (engine.BrandContext, error) {
	return engine.BrandContext{}, port.ErrNotFound
}
func (noReads) FinishedBefore(time.Time, int) ([]engine.FinishedRun, error) { return nil, nil }
