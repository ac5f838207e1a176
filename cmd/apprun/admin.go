package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// adminCmd is `apprun admin`: each subcommand is one call of the admin
// API, whose JSON answer it prints.
func (x *cli) adminCmd() *command {
	c := newCommand("admin", "", "call the admin API: accounts, credits, statements, keys, prices, run records")
	c.about = `Admin calls the admin API of the server at --url and prints its JSON answer.
An answer of HTTP 300 or more exits 1. The token is --token, else
APPRUN_ADMIN_TOKEN, else the dev credentials in $APPRUN_DATA (./data) that
'apprun serve --dev' writes.`
	base := c.flags.String("url", serverURL(), "apprun base URL (APPRUN_URL, else http://$APPRUN_ADDR)")
	token := c.flags.String("token", "", "admin token (APPRUN_ADMIN_TOKEN; else the dev credentials in $APPRUN_DATA)")
	c.env.bind("token", "APPRUN_ADMIN_TOKEN")
	call := func(method, path string, body any) error {
		return callAdmin(x.stdout, strings.TrimRight(*base, "/"), adminToken(*token), method, path, body)
	}

	var moveCredits func(kind string, args []string, reason string) error
	accounts := newCommand("accounts", "", "open, list and show accounts")
	create := newCommand("create", "", "open an account, with an API key and opening Credits")
	email := create.flags.String("email", "", "the account's email address (required)")
	credits := create.flags.Int64("credits", 0, "opening Credits")
	openReason := create.flags.String("reason", "", "why (on the opening grant's statement line)")
	create.exec = func([]string) error {
		if *email == "" {
			return usagef("--email is required")
		}
		body := map[string]any{"email": *email, "credits": *credits}
		if *openReason != "" {
			body["reason"] = *openReason
		}
		return call(http.MethodPost, "/admin/v1/accounts", body)
	}
	list := newCommand("list", "", "list accounts with their balances")
	listCursor := list.flags.String("cursor", "", "the next_cursor of the page before")
	list.exec = func([]string) error {
		path := "/admin/v1/accounts"
		if *listCursor != "" {
			path += "?cursor=" + url.QueryEscape(*listCursor)
		}
		return call(http.MethodGet, path, nil)
	}
	show := newCommand("show", "ACCOUNT_ID", "show an account and its balance")
	show.minArgs, show.maxArgs = 1, 1
	show.exec = func(args []string) error {
		return call(http.MethodGet, "/admin/v1/accounts/"+url.PathEscape(args[0]), nil)
	}
	accounts.add(create, list, show)

	creditsCmd := newCommand("credits", "", "grant Credits, or correct a balance")
	grant := newCommand("grant", "ACCOUNT_ID AMOUNT", "add AMOUNT Credits to an account")
	grantReason := grant.flags.String("reason", "", "why (required; on the statement line)")
	grant.minArgs, grant.maxArgs = 2, 2
	grant.exec = func(args []string) error {
		return moveCredits("credits", args, *grantReason)
	}
	adjust := newCommand("adjust", "ACCOUNT_ID AMOUNT", "correct an account's balance by AMOUNT, either way, never below zero")
	adjust.about = "Adjust corrects an account's balance by AMOUNT Credits (negative takes back),\nnever below zero. A negative AMOUNT follows --: adjust --reason why ACCOUNT_ID -- -5"
	adjustReason := adjust.flags.String("reason", "", "why (required; on the statement line)")
	adjust.minArgs, adjust.maxArgs = 2, 2
	adjust.exec = func(args []string) error {
		return moveCredits("adjustments", args, *adjustReason)
	}
	creditsCmd.add(grant, adjust)

	ledgerCmd := newCommand("ledger", "ACCOUNT_ID", "print an account's statement: opening and closing balance, totals, lines")
	ledgerCmd.about = "Ledger prints the statement of ACCOUNT_ID over --from and --to (RFC 3339, or a\ndate: a --to date includes its day), as JSON or, with --format csv, as CSV\nwith an opening and a closing row."
	ledgerCmd.minArgs, ledgerCmd.maxArgs = 1, 1
	from := ledgerCmd.flags.String("from", "", "the period's start (included)")
	to := ledgerCmd.flags.String("to", "", "the period's end (excluded; a date: its day included)")
	format := ledgerCmd.flags.String("format", "json", "json or csv")
	ledgerCmd.exec = func(args []string) error {
		q := url.Values{}
		for k, v := range map[string]string{"from": *from, "to": *to, "format": *format} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if *format == "json" {
			q.Set("limit", "100")
		}
		return call(http.MethodGet, "/admin/v1/accounts/"+url.PathEscape(args[0])+"/ledger?"+q.Encode(), nil)
	}

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

	prices := newCommand("prices", "", "set an App's price, or list its history")
	set := newCommand("set", "SLUG [CREDITS]", "set an App's price in Credits, or mark it recalibrating")
	set.about = "Set gives the App SLUG the price CREDITS, or with --recalibrating takes it\nout of sale until a price is set (creates answer pricing_not_ready)."
	set.minArgs, set.maxArgs = 1, 2
	recalibrating := set.flags.Bool("recalibrating", false, "mark the price recalibrating instead of setting one")
	priceReason := set.flags.String("reason", "", "why (required; in the price history)")
	set.exec = func(args []string) error {
		path := "/admin/v1/apps/" + args[0] + "/price"
		switch {
		case *recalibrating && len(args) > 1:
			return usagef("give CREDITS or --recalibrating, not both")
		case !*recalibrating && len(args) == 1:
			return usagef("missing argument: want CREDITS or --recalibrating")
		case *priceReason == "":
			return usagef("--reason is required")
		case *recalibrating:
			return call(http.MethodPut, path, map[string]any{"recalibrating": true, "reason": *priceReason})
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return usagef("credits %q is not an integer", args[1])
		}
		return call(http.MethodPut, path, map[string]any{"credit_cost": n, "reason": *priceReason})
	}
	history := newCommand("history", "SLUG", "list every price an App had, with its time, actor and reason")
	history.minArgs, history.maxArgs = 1, 1
	history.exec = func(args []string) error {
		return call(http.MethodGet, "/admin/v1/apps/"+url.PathEscape(args[0])+"/prices", nil)
	}
	prices.add(set, history)

	moveCredits = func(kind string, args []string, reason string) error {
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return usagef("amount %q is not an integer", args[1])
		}
		if reason == "" {
			return usagef("--reason is required")
		}
		return call(http.MethodPost, "/admin/v1/accounts/"+url.PathEscape(args[0])+"/"+kind, map[string]any{"amount": n, "reason": reason})
	}
	stream := func(method, path string) error {
		return streamAdmin(x.stdout, strings.TrimRight(*base, "/"), adminToken(*token), method, path)
	}
	return c.add(accounts, creditsCmd, ledgerCmd, keys, prices, adminRunsCmd(stream))
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
