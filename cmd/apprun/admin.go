package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const adminUsage = `usage: apprun admin [--url URL] [--token TOKEN] <command>
  accounts create --email EMAIL [--credits N]
  credits grant ACCOUNT_ID AMOUNT
  keys create ACCOUNT_ID
  keys revoke KEY_ID
  prices set SLUG CREDITS | prices set SLUG --recalibrating
URL defaults to $APPRUN_URL or http://$APPRUN_ADDR; TOKEN to $APPRUN_ADMIN_TOKEN,
then to the dev credentials in $APPRUN_DATA.`

// adminCommand calls the admin API and prints its JSON answer.
func adminCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	url := fs.String("url", serverURL(), "apprun base URL (APPRUN_URL, else http://$APPRUN_ADDR)")
	token := fs.String("token", env("APPRUN_ADMIN_TOKEN", ""), "admin token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" {
		if d, err := loadDevCredentials(env("APPRUN_DATA", "./data")); err == nil {
			*token = d.AdminToken
		}
	}
	method, path, body, err := adminRequest(fs.Args())
	if err != nil {
		return err
	}
	return callAdmin(out, strings.TrimRight(*url, "/"), *token, method, path, body)
}

func adminRequest(a []string) (method, path string, body any, err error) {
	if len(a) < 2 {
		return "", "", nil, fmt.Errorf("%s", adminUsage)
	}
	switch a[0] + " " + a[1] {
	case "accounts create":
		fs := flag.NewFlagSet("accounts create", flag.ContinueOnError)
		email := fs.String("email", "", "email")
		credits := fs.Int64("credits", 0, "opening credits")
		if err := fs.Parse(a[2:]); err != nil {
			return "", "", nil, err
		}
		return http.MethodPost, "/admin/v1/accounts", map[string]any{"email": *email, "credits": *credits}, nil
	case "credits grant":
		if len(a) != 4 {
			return "", "", nil, fmt.Errorf("usage: apprun admin credits grant ACCOUNT_ID AMOUNT")
		}
		n, err := strconv.ParseInt(a[3], 10, 64)
		if err != nil {
			return "", "", nil, fmt.Errorf("amount %q is not an integer", a[3])
		}
		return http.MethodPost, "/admin/v1/accounts/" + a[2] + "/credits", map[string]any{"amount": n}, nil
	case "keys create":
		if len(a) != 3 {
			return "", "", nil, fmt.Errorf("usage: apprun admin keys create ACCOUNT_ID")
		}
		return http.MethodPost, "/admin/v1/accounts/" + a[2] + "/keys", nil, nil
	case "keys revoke":
		if len(a) != 3 {
			return "", "", nil, fmt.Errorf("usage: apprun admin keys revoke KEY_ID")
		}
		return http.MethodDelete, "/admin/v1/keys/" + a[2], nil, nil
	case "prices set":
		if len(a) != 4 {
			return "", "", nil, fmt.Errorf("usage: apprun admin prices set SLUG CREDITS|--recalibrating")
		}
		if a[3] == "--recalibrating" {
			return http.MethodPut, "/admin/v1/apps/" + a[2] + "/price", map[string]any{"recalibrating": true}, nil
		}
		n, err := strconv.ParseInt(a[3], 10, 64)
		if err != nil {
			return "", "", nil, fmt.Errorf("credits %q is not an integer", a[3])
		}
		return http.MethodPut, "/admin/v1/apps/" + a[2] + "/price", map[string]any{"credit_cost": n}, nil
	}
	return "", "", nil, fmt.Errorf("%s", adminUsage)
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
