package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/node"
	"github.com/apprun/apprun/service"
)

// The run record commands: `apprun runs export`, `apprun admin runs
// export` and `apprun replay` (docs/api.md, "Run records").

// runsExportCmd is `apprun runs export <run_no>...`.
func (x *cli) runsExportCmd() *command {
	c := newCommand("export", "<run_no>...", "write your runs' records as JSON Lines")
	c.about = "Export writes each run's record (GET /api/v1/runs/{run_no}/record) to standard\noutput, one JSON document a line. It needs APPRUN_API_KEY."
	c.minArgs, c.maxArgs = 1, -1
	c.exec = func(args []string) error {
		cl, err := apiClient()
		if err != nil {
			return err
		}
		ctx, stop := signalContext()
		defer stop()
		for _, runNo := range args {
			rec, err := cl.RunRecord(ctx, runNo)
			if err != nil {
				return fmt.Errorf("%s: %w", runNo, err)
			}
			if err := writeLine(x.stdout, rec); err != nil {
				return err
			}
		}
		return nil
	}
	return c
}

// writeLine writes one JSON document compacted on one line.
func writeLine(w io.Writer, doc json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// adminRunsCmd is `apprun admin runs export`: an account's runs over a
// period, as JSON Lines.
func adminRunsCmd(stream func(method, path string) error) *command {
	runs := newCommand("runs", "", "export an account's run records")
	export := newCommand("export", "", "write an account's run records over a period as JSON Lines")
	export.about = `Export writes the record of each run of --account made in --from..--to
(RFC 3339, or a date: a --to date includes its day), newest first, one JSON
document a line. A call stops at 5000 runs with a last line
{"more":true,"next_cursor":…}: go on with --cursor. An export that breaks
off ends with an {"error":…} line and exits 1.`
	account := export.flags.String("account", "", "the account (required)")
	from := export.flags.String("from", "", "the period's start (included)")
	to := export.flags.String("to", "", "the period's end (excluded; a date: its day included)")
	cursor := export.flags.String("cursor", "", "go on from the next_cursor of a call that stopped at 5000 runs")
	export.exec = func([]string) error {
		if *account == "" {
			return usagef("--account is required")
		}
		q := url.Values{"account_id": {*account}}
		for k, v := range map[string]string{"from": *from, "to": *to, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return stream(http.MethodGet, "/admin/v1/runs/export?"+q.Encode())
	}
	return runs.add(export)
}

// streamAdmin calls the admin API and copies its answer to out as it
// comes, with no time bound (an export, a bulk replay). An answer whose
// last line is an error (an export that broke off after its 200) is an
// error too.
func streamAdmin(out io.Writer, base, token, method, path string) error {
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	ctx, stop := signalContext()
	defer stop()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	last := &lastLine{}
	if _, err := io.Copy(io.MultiWriter(out, last), resp.Body); err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	var end struct {
		Error *struct{ Code, Message string }
	}
	if json.Unmarshal(last.line(), &end) == nil && end.Error != nil {
		return fmt.Errorf("%s: %s", end.Error.Code, end.Error.Message)
	}
	return nil
}

// lastLine keeps the last line written to it.
type lastLine struct{ buf []byte }

func (l *lastLine) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(bytes.TrimRight(l.buf, "\n"), '\n'); i >= 0 {
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

func (l *lastLine) line() []byte { return bytes.TrimSpace(l.buf) }

// replayCmd is `apprun replay`.
func (x *cli) replayCmd() *command {
	c := newCommand("replay", "[<run_no>...]", "replay runs against their records: no model, no network, no charge")
	c.about = `Replay runs each run's App, as defined now, against the run's record: the
recorded model replies and source reads are served in order, so no model,
no network and no ledger is touched. It prints one report a run (JSON):
whether every call and the outcome are byte-identical, and where they first
differ. It exits 1 if any run differs or cannot be replayed.

  apprun replay <run_no>...          the server's Apps (admin API, --url)
  apprun replay --app SLUG [--from --to]
                                     every run of an App over a period, counted
  apprun replay --file runs.jsonl    an export (- for standard input),
                                     replayed here with this binary's Apps
                                     (and APPRUN_APPS_DIR): no server at all`
	c.maxArgs = -1
	base := c.flags.String("url", serverURL(), "apprun base URL (APPRUN_URL, else http://$APPRUN_ADDR)")
	token := c.flags.String("token", "", "admin token (APPRUN_ADMIN_TOKEN; else the dev credentials in $APPRUN_DATA)")
	c.env.bind("token", "APPRUN_ADMIN_TOKEN")
	app := c.flags.String("app", "", "replay every run of this App made in --from..--to")
	from := c.flags.String("from", "", "with --app: the period's start (included)")
	to := c.flags.String("to", "", "with --app: the period's end (excluded; a date: its day included)")
	cursor := c.flags.String("cursor", "", "with --app: go on from the next_cursor of a call that stopped at 5000 runs")
	file := c.flags.String("file", "", "replay the records of this export (JSON Lines; - for standard input)")
	appsDir := c.flags.String("apps-dir", "", "with --file: App definitions that add to or replace the shipped ones (APPRUN_APPS_DIR)")
	c.env.bind("apps-dir", "APPRUN_APPS_DIR")
	c.exec = func(args []string) error {
		modes := 0
		for _, on := range []bool{len(args) > 0, *app != "", *file != ""} {
			if on {
				modes++
			}
		}
		if modes != 1 {
			return usagef("give run numbers, --app or --file (one of them)")
		}
		server := strings.TrimRight(*base, "/")
		switch {
		case *file != "":
			return x.replayFile(*file, *appsDir)
		case *app != "":
			q := url.Values{"app_slug": {*app}}
			for k, v := range map[string]string{"from": *from, "to": *to, "cursor": *cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			var out bytes.Buffer
			if err := streamAdmin(&out, server, adminToken(*token), http.MethodPost, "/admin/v1/runs/replay?"+q.Encode()); err != nil {
				x.stdout.Write(out.Bytes())
				return err
			}
			x.stdout.Write(out.Bytes())
			var sum struct {
				Differing     int    `json:"differing"`
				NotReplayable int    `json:"not_replayable"`
				NextCursor    string `json:"next_cursor"`
			}
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
				return fmt.Errorf("replay: the server's answer: %w", err)
			}
			if sum.NextCursor != "" {
				fmt.Fprintf(x.stderr, "apprun: more runs are left: go on with --cursor %s\n", sum.NextCursor)
			}
			if sum.Differing+sum.NotReplayable > 0 {
				return fmt.Errorf("%d run(s) of %s differ, %d cannot be replayed", sum.Differing, *app, sum.NotReplayable)
			}
			return nil
		}
		differ := 0
		for _, runNo := range args {
			var out bytes.Buffer
			if err := callAdmin(&out, server, adminToken(*token), http.MethodPost, "/admin/v1/runs/"+url.PathEscape(runNo)+"/replay", nil); err != nil {
				x.stdout.Write(out.Bytes())
				return err
			}
			x.stdout.Write(out.Bytes())
			var rep service.ReplayReport
			if json.Unmarshal(out.Bytes(), &rep) != nil || !rep.Identical {
				differ++
			}
		}
		if differ > 0 {
			return fmt.Errorf("%d of %d run(s) differ", differ, len(args))
		}
		return nil
	}
	return c
}

// replayFile replays every record of an export with this binary's Apps.
func (x *cli) replayFile(path, appsDir string) error {
	in := io.Reader(x.stdin)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		defer f.Close()
		in = f
	}
	list, err := node.Config{AppsDir: appsDir}.ReplayCatalog()
	if err != nil {
		return err
	}
	catalog, err := engine.NewCatalog(inputschema.Compile, list...)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	var sum struct {
		Replayed      int `json:"replayed"`
		Identical     int `json:"identical"`
		Differing     int `json:"differing"`
		NotReplayable int `json:"not_replayable"`
	}
	enc := json.NewEncoder(x.stdout)
	// JSON Lines (an export) or any JSON documents one after another (a
	// downloaded record, indented).
	dec := json.NewDecoder(bufio.NewReader(in))
	for n := 1; ; n++ {
		var doc json.RawMessage
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("replay: %s, document %d: %w", path, n, err)
		}
		var end struct{ More, Error any }
		if json.Unmarshal(doc, &end) == nil && (end.More != nil || end.Error != nil) {
			continue // an export's last line
		}
		rec, err := httpapi.DecodeRecordDocument(doc)
		if err != nil {
			return fmt.Errorf("replay: %s, document %d: %w", path, n, err)
		}
		rep, err := service.ReplayRecord(ctx, catalog, rec)
		switch {
		case err != nil:
			sum.NotReplayable++
			_ = enc.Encode(map[string]string{"run_no": rec.Run.RunNo, "not_replayable": err.Error()})
			continue
		case rep.Identical:
			sum.Identical++
		default:
			sum.Differing++
		}
		sum.Replayed++
		_ = enc.Encode(rep)
	}
	_ = enc.Encode(sum)
	if sum.Replayed+sum.NotReplayable == 0 {
		return fmt.Errorf("replay: %s holds no run record", path)
	}
	if sum.Differing+sum.NotReplayable > 0 {
		return fmt.Errorf("%d run(s) differ, %d cannot be replayed", sum.Differing, sum.NotReplayable)
	}
	return nil
}
