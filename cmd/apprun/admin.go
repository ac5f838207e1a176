package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// adminCmd is `apprun admin`: each subcommand is one call of the admin
// API, whose JSON answer it prints.
func (x *cli) adminCmd() *command {
	c := newCommand("admin", "", "call the admin API: accounts, credits, keys, prices")
	c.about = `Admin calls the admin API of the server at --url and prints its JSON answer.
An answer of HTTP 300 or more exits 1. The token is --token, else
APPRUN_ADMIN_TOKEN, else the dev credentials in $APPRUN_DATA (./data) that
'apprun serve --dev' writes.`
	url := c.flags.String("url", serverURL(), "apprun base URL (APPRUN_URL, else http://$APPRUN_ADDR)")
	token := c.flags.String("token", "", "admin token (APPRUN_ADMIN_TOKEN; else the dev credentials in $APPRUN_DATA)")
	c.env.bind("token", "APPRUN_ADMIN_TOKEN")
	call := func(method, path string, body any) error {
		return callAdmin(x.stdout, strings.TrimRight(*url, "/"), adminToken(*token), method, path, body)
	}

	accounts := newCommand("accounts", "", "open accounts")
	create := newCommand("create", "", "open an account, with an API key and opening Credits")
	email := create.flags.String("email", "", "the account's email address (required)")
	credits := create.flags.Int64("credits", 0, "opening Credits")
	create.exec = func([]string) error {
		if *email == "" {
			return usagef("--email is required")
		}
		return call(http.MethodPost, "/admin/v1/accounts", map[string]any{"email": *email, "credits": *credits})
	}
	accounts.add(create)

	creditsCmd := newCommand("credits", "", "grant Credits")
	grant := newCommand("grant", "ACCOUNT_ID AMOUNT", "add AMOUNT Credits to an account")
	grant.minArgs, grant.maxArgs = 2, 2
	grant.exec = func(args []string) error {
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return usagef("amount %q is not an integer", args[1])
		}
		return call(http.MethodPost, "/admin/v1/accounts/"+args[0]+"/credits", map[string]any{"amount": n})
	}
	creditsCmd.add(grant)

	keys := newCommand("keys", "", "create and revoke API keys")
	keyCreate := newCommand("create", "ACCOUNT_ID", "create an API key for an account (shown once)")
	keyCreate.minArgs, keyCreate.maxArgs = 1, 1
	keyCreate.exec = func(args []string) error {
		return call(http.MethodPost, "/admin/v1/accounts/"+args[0]+"/keys", nil)
	}
	revoke := newCommand("revoke", "KEY_ID", "revoke an API key")
	revoke.minArgs, revoke.maxArgs = 1, 1
	revoke.exec = func(args []string) error {
		return call(http.MethodDelete, "/admin/v1/keys/"+args[0], nil)
	}
	keys.add(keyCreate, revoke)

	prices := newCommand("prices", "", "set an App's price")
	set := newCommand("set", "SLUG [CREDITS]", "set an App's price in Credits, or mark it recalibrating")
	set.about = "Set gives the App SLUG the price CREDITS, or with --recalibrating takes it\nout of sale until a price is set (creates answer pricing_not_ready)."
	set.minArgs, set.maxArgs = 1, 2
	recalibrating := set.flags.Bool("recalibrating", false, "mark the price recalibrating instead of setting one")
	set.exec = func(args []string) error {
		path := "/admin/v1/apps/" + args[0] + "/price"
		switch {
		case *recalibrating && len(args) == 1:
			return call(http.MethodPut, path, map[string]any{"recalibrating": true})
		case *recalibrating:
			return usagef("give CREDITS or --recalibrating, not both")
		case len(args) == 1:
			return usagef("missing argument: want CREDITS or --recalibrating")
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return usagef("credits %q is not an integer", args[1])
		}
		return call(http.MethodPut, path, map[string]any{"credit_cost": n})
	}
	prices.add(set)

	return c.add(accounts, creditsCmd, keys, prices)
}

// adminCommand runs `apprun admin` with args, printing to out (tests).
func adminCommand(args []string, out io.Writer) error {
	return (&cli{stdout: out, stderr: io.Discard}).run(append([]string{"admin"}, args...))
}

// adminToken is token, else the dev credentials' in $APPRUN_DATA.
func adminToken(token string) string {
	if token == "" {
		if d, err := loadDevCredentials(env("APPRUN_DATA", "./data")); err == nil {
			return d.AdminToken
		}
	}
	return token
}

func callAdmin(out io.Writer, base, token, method, path string, body any) error {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if len(data) > 0 {
		fmt.Fprintln(out, strings.TrimSpace(string(data)))
	} else {
		fmt.Fprintf(out, "{\"status\":%d}\n", resp.StatusCode)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	return nil
}
