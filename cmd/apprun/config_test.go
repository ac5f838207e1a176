package main

import (
	"strings"
	"testing"
	"time"
)

// Environment variables are parsed by their flags: a bad value stops the
// start and names the variable (APPRUN_HEARTBEAT=banana started normally),
// booleans take 1/true/yes/on (APPRUN_DEV=true was not dev mode), and a
// flag on the command line wins.
func TestEnvironmentIsParsedLikeTheFlags(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"APPRUN_HEARTBEAT", "banana", "APPRUN_HEARTBEAT"},
		{"APPRUN_CREATE_PER_MIN", "ten", "APPRUN_CREATE_PER_MIN"},
		{"APPRUN_DEV", "maybe", "APPRUN_DEV"},
		{"APPRUN_SIGNUP_CREDITS", "1e3", "APPRUN_SIGNUP_CREDITS"},
		{"APPRUN_LLM_TEMPERATURE", "cold", "APPRUN_LLM_TEMPERATURE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			if _, err := parseServe(nil); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s=%s: %v, want an error naming %s", c.name, c.value, err, c.want)
			}
		})
	}
	for _, v := range []string{"1", "true", "yes", "on", "TRUE"} {
		t.Setenv("APPRUN_DEV", v)
		if c, err := parseServe(nil); err != nil || !c.Dev {
			t.Fatalf("APPRUN_DEV=%s: dev %v, %v", v, c.Dev, err)
		}
	}
	t.Setenv("APPRUN_DEV", "no")
	t.Setenv("APPRUN_HEARTBEAT", "2s")
	t.Setenv("APPRUN_CREATE_PER_MIN", "5")
	c, err := parseServe([]string{"--create-per-min", "7"})
	if err != nil || c.Dev || c.Heartbeat != 2*time.Second || c.Limits.CreatePerMinute != 7 {
		t.Fatalf("dev %v heartbeat %s creates %d (%v), want false, 2s and the flag's 7", c.Dev, c.Heartbeat, c.Limits.CreatePerMinute, err)
	}
}

// Every client command finds the server the same way: APPRUN_URL, else the
// address `apprun serve` listens on (APPRUN_ADDR).
func TestClientCommandsFindTheServerOneWay(t *testing.T) {
	t.Setenv("APPRUN_URL", "")
	t.Setenv("APPRUN_ADDR", "127.0.0.1:9090")
	if got := serverURL(); got != "http://127.0.0.1:9090" {
		t.Fatalf("with APPRUN_ADDR: %s", got)
	}
	t.Setenv("APPRUN_URL", "https://apprun.example")
	if got := serverURL(); got != "https://apprun.example" {
		t.Fatalf("with APPRUN_URL: %s", got)
	}
}

// help, --help, -h, version and every command's --help exit 0; an unknown
// command does not.
func TestHelpAndVersionExitZero(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"version"}, {"--version"}, {"serve", "--help"},
		{"audit", "--help"}, {"admin", "--help"}, {"bench", "--help"}, {"run", "--help"}, {"runs", "--help"},
		{"balance", "--help"}, {"cancel", "--help"}} {
		if err := run(args); err != nil {
			t.Errorf("apprun %s: %v, want exit 0", strings.Join(args, " "), err)
		}
	}
	if err := run([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "apprun help") {
		t.Errorf("an unknown command: %v", err)
	}
	if v := version(); !strings.HasPrefix(v, "apprun ") || !strings.Contains(v, "commit") {
		t.Errorf("version: %q", v)
	}
}
