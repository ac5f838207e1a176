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
//
// Ports: the docs name no fixed address; they read it from a variable,
// so doccheck runs beside whatever holds 8080 (or 4222). For each file it
// picks free loopback ports (below the kernel's ephemeral range, which no
// one else's port-0 listener draws from) and exports:
//
//	APPRUN_ADDR=127.0.0.1:P  APPRUN_URL=http://127.0.0.1:P
//
// for the node `make run` starts (apprun serve reads APPRUN_ADDR, the
// client commands and the examples APPRUN_URL), and, for every variable
// a sh block gives a loopback default, `${NAME:-127.0.0.1:8081}` (or
// `${NAME:-http://127.0.0.1:8081}`, or `${NAME_PORT:-4222}`), NAME with
// a free port in place of the default's: the same free port for the same
// default port, P for 8080. A reader who sets nothing gets the defaults.
// A runnable block that names a loopback port outside such a default or
// a comment (port 0, any free one, excepted) fails its file.
//
// docs/configuration.md must also name every flag of `bin/apprun serve
// --help`, by the flag or by the variable its help gives.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prelude is the README's first run, for the files that build on it.
const prelude = `make run > .doccheck/make-run.log 2>&1 &
until test -s data/dev-credentials.json && curl -sf "$APPRUN_URL/readyz" >/dev/null; do sleep 0.5; done
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
		ok := check(file, *long)
		if filepath.Base(file) == "configuration.md" {
			ok = flagsDocumented(file) && ok
		}
		if !ok {
			failed++
		}
	}
	if failed > 0 {
		fmt.Printf("doccheck: %d of %d files failed\n", failed, flag.NArg())
		os.Exit(1)
	}
	fmt.Printf("doccheck: %d files, every command ran as written\n", flag.NArg())
}

var (
	// helpFlag starts a flag's entry in `apprun serve --help`: "  -addr
	// string" (package flag) or "      --addr string" (cobra and pflag).
	helpFlag = regexp.MustCompile(`^\s+--?([a-z0-9][a-z0-9-]*)`)
	// envName is a variable a flag's help names as its mirror.
	envName = regexp.MustCompile(`\b(?:APPRUN|OPENAI)_[A-Z0-9_]+`)
)

// flagsDocumented checks that every flag of `bin/apprun serve --help`
// is in file (docs/configuration.md), by its name (`--addr`) or by the
// variable its help names (APPRUN_ADDR), so a flag cannot be added
// without its row.
func flagsDocumented(file string) bool {
	doc, err := os.ReadFile(file)
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", file, err)
		return false
	}
	help, _ := exec.Command("bin/apprun", "serve", "--help").CombinedOutput() // its exit status is not ours to judge
	type entry struct{ name, text string }
	var flags []*entry
	for _, line := range strings.Split(string(help), "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil && m[1] != "h" && m[1] != "help" {
			flags = append(flags, &entry{name: m[1], text: line})
		} else if len(flags) > 0 {
			flags[len(flags)-1].text += "\n" + line
		}
	}
	if len(flags) == 0 {
		fmt.Printf("FAIL %s: no flags found in `bin/apprun serve --help`:\n%s\n", file, help)
		return false
	}
	var missing []string
	for _, f := range flags {
		found := strings.Contains(string(doc), "`--"+f.name)
		for _, v := range envName.FindAllString(f.text, -1) {
			found = found || strings.Contains(string(doc), "`"+v)
		}
		if !found {
			missing = append(missing, "--"+f.name)
		}
	}
	if len(missing) > 0 {
		fmt.Printf("FAIL %s: flags of apprun serve it does not document: %s\n", file, strings.Join(missing, ", "))
		return false
	}
	fmt.Printf("ok   %s: documents all %d flags of apprun serve\n", file, len(flags))
	return true
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

var (
	// addrDefault is a variable given a loopback address as its default:
	// ${NAME:-127.0.0.1:8081}, ${NAME:-http://127.0.0.1:8080}.
	addrDefault = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*):-((?:[a-z]+://)?(?:127\.0\.0\.1|localhost):)([0-9]+)\}`)
	// portDefault is a variable named …PORT given a port as its default.
	portDefault = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*PORT):-()([0-9]+)\}`)
	// fixedAddr is a loopback address with a port.
	fixedAddr = regexp.MustCompile(`(?:127\.0\.0\.1|localhost):([0-9]+)`)
	// shellComment is a comment to the end of a line (what it says is
	// not an address the command uses).
	shellComment = regexp.MustCompile(`(?m)(^|\s)#.*$`)
)

// runs says whether a block is run (with -long or not).
func (b block) runs(long bool) bool {
	return b.tag == "" || b.tag == "server" || (b.tag == "long" && long)
}

// addresses is the environment a file's blocks run with: APPRUN_ADDR and
// APPRUN_URL on a free port, and every variable a block gives a loopback
// default on a free port in place of the default's (the same for the
// same default port; 8080 is APPRUN_ADDR's). A block that runs and names
// a loopback port outside such a default (but port 0) is an error.
func addresses(bs []block, long bool) ([]string, error) {
	type def struct{ name, prefix, port string }
	var defs []def
	ports := []string{"8080"}
	for _, b := range bs {
		text := strings.Join(b.lines, "\n")
		for _, re := range []*regexp.Regexp{addrDefault, portDefault} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				defs = append(defs, def{m[1], m[2], m[3]})
				if !slices.Contains(ports, m[3]) {
					ports = append(ports, m[3])
				}
			}
			text = re.ReplaceAllString(text, "")
		}
		if !b.runs(long) {
			continue
		}
		text = shellComment.ReplaceAllString(text, "")
		for _, m := range fixedAddr.FindAllStringSubmatch(text, -1) {
			if m[1] != "0" {
				return nil, fmt.Errorf("line %d: %s is a fixed address; read it from a variable (APPRUN_URL, or ${NAME:-%s})", b.at, m[0], m[0])
			}
		}
	}
	free, err := freePorts(len(ports))
	if err != nil {
		return nil, err
	}
	port := map[string]string{}
	for i, p := range ports {
		port[p] = strconv.Itoa(free[i])
	}
	vars := map[string]string{
		"APPRUN_ADDR": "127.0.0.1:" + port["8080"],
		"APPRUN_URL":  "http://127.0.0.1:" + port["8080"],
	}
	env := []string{"APPRUN_ADDR=" + vars["APPRUN_ADDR"], "APPRUN_URL=" + vars["APPRUN_URL"]}
	for _, d := range defs {
		v := d.prefix + port[d.port]
		if old, ok := vars[d.name]; ok {
			if old != v {
				return nil, fmt.Errorf("%s has two defaults on different ports", d.name)
			}
			continue
		}
		vars[d.name] = v
		env = append(env, d.name+"="+v)
	}
	return env, nil
}

// freePorts returns n distinct loopback ports that are free now, below
// the kernel's ephemeral range: a port there is never handed to a
// listener on port 0 or to an outgoing connection, so the tests and
// servers of others running beside doccheck do not take it in the
// seconds before the docs' server binds it.
func freePorts(n int) ([]int, error) {
	low := 32768 // Linux's default ip_local_port_range starts here
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const from = 10000
	if low-from < 1000 {
		return nil, fmt.Errorf("the ephemeral port range starts at %d: no room below it", low)
	}
	var out []int
	for tries := 0; len(out) < n && tries < 1000; tries++ {
		p := from + rand.IntN(low-from)
		if slices.Contains(out, p) {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // in use
		}
		l.Close()
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("found %d free ports of %d", len(out), n)
	}
	return out, nil
}

func check(file string, long bool) bool {
	bs, err := blocks(file)
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", file, err)
		return false
	}
	env, err := addresses(bs, long)
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
	fmt.Fprintf(&script, "echo '--- %s'\n", strings.Join(env, " "))
	if filepath.Base(file) != "README.md" {
		script.WriteString(prelude)
	}
	ran, servers := 0, 0
	var skipped []string
	for _, b := range bs {
		switch {
		case !b.runs(long):
			skipped = append(skipped, fmt.Sprintf("line %d (%s)", b.at, b.tag))
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
		default: // long
			fmt.Fprintf(&script, "echo '--- %s:%d (long)'\n%s\n", file, b.at, strings.Join(b.lines, "\n"))
			ran++
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
	cmd.Env = append(os.Environ(), env...)
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
	fmt.Printf("ok   %s: %d blocks ran in %s on %s%s\n", file, ran, took, strings.TrimPrefix(env[0], "APPRUN_ADDR="), note)
	return true
}
