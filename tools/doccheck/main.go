// Command doccheck runs the shell commands of the README and docs/ as
// written, so the documentation cannot drift from what apprun does.
//
//	make docs-check            # on a clean clone of HEAD
//	go run ./tools/doccheck [-long] README.md docs/*.md
//
// Each file runs in one bash session (set -euo pipefail) from the
// repository's root, after `git clean` of what the previous file left.
// The fences it reads:
//
//	```sh          commands, run in order; a failing one fails the file
//	```sh server   one long-running process a line (continued with \),
//	               started in the background: a later block waits for it
//	```sh long     run only with -long (make test, make bench)
//	```sh needs-X  needs X, which this machine may not have: reported, not run
//
// Every file but the README starts from the README's first run: `make run`
// in the background and KEY and ADMIN exported. Other fences (json, text,
// go, none) are not commands.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// prelude is the README's first run, for the files that build on it.
const prelude = `make run > .doccheck/make-run.log 2>&1 &
until curl -sf localhost:8080/readyz >/dev/null; do sleep 0.5; done
export KEY=$(jq -r .api_key data/dev-credentials.json) ADMIN=$(jq -r .admin_token data/dev-credentials.json)
`

type block struct {
	tag   string // "", "server", "long", "needs-…"
	lines []string
	at    int // line number of the fence
}

func main() {
	long := flag.Bool("long", false, "also run the blocks fenced ```sh long")
	flag.Parse()
	failed := 0
	for _, file := range flag.Args() {
		if !check(file, *long) {
			failed++
		}
	}
	if failed > 0 {
		fmt.Printf("doccheck: %d of %d files failed\n", failed, flag.NArg())
		os.Exit(1)
	}
	fmt.Printf("doccheck: %d files, every command ran as written\n", flag.NArg())
}

func blocks(file string) ([]block, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []block
	var cur *block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```sh"):
			cur = &block{tag: strings.TrimSpace(strings.TrimPrefix(line, "```sh")), at: n}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return out, sc.Err()
}

// commands joins continued lines (ending in \) into one command each.
func commands(lines []string) []string {
	var out []string
	var cur string
	for _, l := range lines {
		if strings.TrimSpace(l) == "" && cur == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

func check(file string, long bool) bool {
	bs, err := blocks(file)
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", file, err)
		return false
	}
	clean := exec.Command("git", "clean", "-fdxq", "-e", "bin/", "-e", ".doccheck/")
	if out, err := clean.CombinedOutput(); err != nil {
		fmt.Printf("FAIL %s: git clean: %v %s\n", file, err, out)
		return false
	}
	_ = os.MkdirAll(".doccheck", 0o755)
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	if filepath.Base(file) != "README.md" {
		script.WriteString(prelude)
	}
	ran, servers := 0, 0
	var skipped []string
	for _, b := range bs {
		switch {
		case b.tag == "":
			fmt.Fprintf(&script, "echo '--- %s:%d'\n%s\n", file, b.at, strings.Join(b.lines, "\n"))
			ran++
		case b.tag == "server":
			for _, c := range commands(b.lines) {
				servers++
				fmt.Fprintf(&script, "echo '--- %s:%d (background) %s'\n(\n%s\n) > .doccheck/server-%d.log 2>&1 &\n",
					file, b.at, strings.ReplaceAll(c, "'", ""), c, servers)
			}
			ran++
		case b.tag == "long" && long:
			fmt.Fprintf(&script, "echo '--- %s:%d (long)'\n%s\n", file, b.at, strings.Join(b.lines, "\n"))
			ran++
		default:
			skipped = append(skipped, fmt.Sprintf("line %d (%s)", b.at, b.tag))
		}
	}
	log := filepath.Join(".doccheck", strings.ReplaceAll(file, "/", "_")+".log")
	out, err := os.Create(log)
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", file, err)
		return false
	}
	defer out.Close()
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Printf("FAIL %s: %v\n", file, err)
		return false
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		err = fmt.Errorf("still running after 5 minutes")
	}
	// Stop what the file started (servers, make run), then make sure.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	for end := time.Now().Add(5 * time.Second); syscall.Kill(-cmd.Process.Pid, 0) == nil && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond) // the group's exit has no event to await
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	took := time.Since(began).Round(time.Second)
	note := ""
	if len(skipped) > 0 {
		note = "; not run: " + strings.Join(skipped, ", ")
	}
	if err != nil {
		fmt.Printf("FAIL %s (%s): %v; log %s%s\n", file, took, err, log, note)
		return false
	}
	fmt.Printf("ok   %s: %d blocks ran in %s%s\n", file, ran, took, note)
	return true
}
