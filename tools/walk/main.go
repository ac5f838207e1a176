// Command walk measures the walk of one create: which of apprun's
// functions, and in which files, run from the HTTP handler of POST
// /api/v1/runs to the log, in a binary built with coverage (make walk).
//
// It wires the real parts below the handler (the service, the JetStream
// log on an embedded server, the catalog); only the read model that
// authenticates is a stub, and no executor runs, so that nothing but the
// create is counted. Two creates warm the caches. Then the counters are
// cleared and a request no route takes is made: what it runs is the
// pipeline in front of every handler, not the walk. Then they are cleared
// again and a third create is made, the counters read as its admission
// reaches the log port (the JetStream adapter below it is the log, not the
// walk, and the answer comes after). The walk is what the create ran less
// what the pipeline ran.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/coverage"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
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
	tap := &tapLog{Log: ports.Log, dir: filepath.Join(dir, "cov", "create")}
	ports.Log = tap
	svc, err := service.New(ports, service.Config{Catalog: catalog, Reads: noReads{}, Logger: quiet, Standalone: true,
		Limits: engine.Limits{CreatePerMinute: 100, OwnerActiveRuns: 100, PlatformActiveRuns: 12}})
	if err != nil {
		return err
	}
	if err := svc.Prepare(ctx); err != nil {
		return err
	}
	acct, err := svc.OpenAccount(ctx, "walk@example.com", 1000)
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
	dir2 := filepath.Join(dir, "cov")
	// The pipeline: a request that no route takes, and one that a route
	// takes with no walk of its own.
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("%w (build with make walk)", err)
	}
	for _, path := range []string{"/api/v1/nowhere", "/healthz"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		api.ServeHTTP(httptest.NewRecorder(), r)
	}
	pipeline, err := snapshot(filepath.Join(dir2, "pipeline"))
	if err != nil {
		return err
	}
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	tap.armed.Store(true)
	if err := create(); err != nil {
		return err
	}
	if tap.err != nil {
		return tap.err
	}
	if tap.profile == nil {
		return errors.New("the create wrote nothing to the log")
	}
	whole := tap.profile
	// What every keyed JSON route runs: a brand context refused at its
	// body's second member, before anything of its own.
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	br := httptest.NewRequest(http.MethodPost, "/api/v1/brand-contexts", strings.NewReader(`{"name":"n","voice":5}`))
	br.Header.Set("Authorization", "Bearer "+acct.APIKey)
	br.Header.Set("Content-Type", "application/json")
	bw := httptest.NewRecorder()
	api.ServeHTTP(bw, br)
	if bw.Code != http.StatusBadRequest {
		return fmt.Errorf("the keyed JSON request answered %d, want 400: %s", bw.Code, bw.Body)
	}
	keyedJSON, err := snapshot(filepath.Join(dir2, "keyed"))
	if err != nil {
		return err
	}
	// The use case alone: CreateRun called as the handler calls it.
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	tap.dir, tap.profile = filepath.Join(dir2, "usecase"), nil
	tap.armed.Store(true)
	if _, err := svc.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID,
		AppSlug: "cold-email-writer", Input: input}); err != nil {
		return err
	}
	if tap.err != nil || tap.profile == nil {
		return fmt.Errorf("the use case's walk: %v", tap.err)
	}
	return report(whole, tap.profile, pipeline, keyedJSON)
}

// snapshot writes the counters to dir and returns the functions that ran.
func snapshot(dir string) (map[string]bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := coverage.WriteMetaDir(dir); err != nil {
		return nil, err
	}
	if err := coverage.WriteCountersDir(dir); err != nil {
		return nil, err
	}
	text := dir + ".txt"
	if out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i", dir, "-o", text).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("covdata: %v: %s", err, out)
	}
	out, err := exec.Command("go", "tool", "cover", "-func", text).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("cover -func: %v: %s", err, out)
	}
	ran := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] == "0.0%" || f[0] == "total:" {
			continue
		}
		file, _, _ := strings.Cut(f[0], ":")
		ran[strings.TrimPrefix(file, module)+" "+f[1]] = true
	}
	return ran, nil
}

const module = "github.com/apprun/apprun/"

// runSubjects prefixes every run's subject (a create's first event is on
// its run's subject).
var runSubjects = subjects.Run("")

// tapLog is the log port, which takes a snapshot when the admission (the
// batch that writes a run's first event) reaches it, once armed.
type tapLog struct {
	port.Log
	armed   atomic.Bool
	dir     string
	profile map[string]bool
	err     error
}

func (l *tapLog) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	for _, e := range entries {
		if strings.HasPrefix(e.Subject, runSubjects) && l.armed.CompareAndSwap(true, false) {
			l.profile, l.err = snapshot(l.dir)
		}
	}
	return l.Log.Append(ctx, entries...)
}

// report prints the functions the create ran that the pipeline did not,
// by file, each file marked with the part of the walk it is in: the use
// case, from the handler's call of CreateRun to the log port ("use
// case"); the request's reading shared by every keyed JSON route, each of
// whose functions the create ran ran for another route's request too
// ("shared"); or the handler's own ("http"). It counts them.
func report(create, usecase, pipeline, keyedJSON map[string]bool) error {
	byFile := map[string][]string{}
	inUseCase := map[string]bool{}
	own := map[string]bool{} // files with a function no other keyed JSON route runs
	for fn := range create {
		if pipeline[fn] || strings.HasPrefix(fn, "tools/") || strings.HasPrefix(fn, "eventlog/") {
			continue // in front of every handler; this tool; the log itself
		}
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
		mark, ok := listed[f]
		if !ok {
			missing = append(missing, f)
			continue
		}
		if isShared := !own[f] && !inUseCase[f]; mark != isShared {
			marks = append(marks, fmt.Sprintf("%s (shared: %v)", f, isShared))
		}
	}
	for f := range listed {
		if !slices.Contains(files, f) {
			extra = append(extra, f)
		}
	}
	if len(missing)+len(extra)+len(marks) > 0 {
		return fmt.Errorf("%s's list of the walk is not the walk: add %v, remove %v, mark %v", *check, missing, extra, marks)
	}
	fmt.Printf("%s lists the same %d files\n", *check, len(files))
	return nil
}

// documented is the files listed in the block after "<!-- make walk -->",
// each with whether the list marks it "(shared)".
func documented(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, after, ok := strings.Cut(string(data), "<!-- make walk -->")
	if !ok {
		return nil, fmt.Errorf("%s: no line <!-- make walk -->", path)
	}
	files := map[string]bool{}
	fences := 0
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "```") {
			if fences++; fences == 2 {
				break
			}
			continue
		}
		if f := strings.Fields(line); fences == 1 && len(f) > 0 {
			files[f[0]] = len(f) > 1 && f[1] == "(shared)"
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no fenced list after <!-- make walk -->", path)
	}
	return files, nil
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
