package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/node"
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
		{"APPRUN_LLM_STREAM", "sometimes", "APPRUN_LLM_STREAM"},
		{"APPRUN_LLM_JSON_MODE", "xml", "APPRUN_LLM_JSON_MODE"},
		{"APPRUN_LLM_PROVIDER", "gcp", "APPRUN_LLM_PROVIDER"},
		{"APPRUN_LLM_MAX_ATTEMPTS", "0", "APPRUN_LLM_MAX_ATTEMPTS"},
		{"APPRUN_LLM_PROVIDER", "azure", "OPENAI_BASE_URL"},
		{"APPRUN_SOURCE_MAX_BYTES", "12", "source-max-bytes"},
		{"APPRUN_SOURCE_TIMEOUT", "0s", "source-timeout"},
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

// Start failures say what to do, and a start that fails on its
// configuration or its port creates nothing in the data directory (a bad
// APPRUN_APPS_DIR or a busy port first created nats/ and projections.db).
func TestStartFailuresSayWhatToDoAndLeaveNothingBehind(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	// A second node on the same data directory: at once, naming the holder.
	cfg := h.Cfg
	cfg.Addr = "127.0.0.1:0"
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err = n.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "in use by another apprun (pid") || time.Since(began) > 2*time.Second {
		t.Fatalf("a second node on one data directory: %v after %s", err, time.Since(began))
	}
	// A busy port, and a bad apps directory: nothing created.
	for name, mutate := range map[string]func(*node.Config){
		"busy port":    func(c *node.Config) { c.Addr = h.Node.Addr() },
		"bad apps dir": func(c *node.Config) { c.AppsDir = filepath.Join(t.TempDir(), "missing") },
	} {
		cfg := h.Cfg
		cfg.Apps, cfg.DataDir, cfg.Addr = nil, filepath.Join(t.TempDir(), "data"), "127.0.0.1:0"
		mutate(&cfg)
		n, err := node.New(cfg)
		if err == nil {
			err = n.Start(context.Background())
		}
		if err == nil {
			t.Fatalf("%s: started", name)
		}
		t.Logf("%s: %v", name, err)
		if name == "busy port" && !strings.Contains(err.Error(), "port is in use") {
			t.Errorf("busy port: %v", err)
		}
		if _, serr := os.Stat(cfg.DataDir); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s (%v): the data directory was created", name, err)
		}
	}
}

func TestAppTimeoutsConfig(t *testing.T) {
	cfg, err := parseServe([]string{"--app-timeouts", "cold-email-writer=2s, test-app=150ms"})
	if err != nil || cfg.AppTimeouts["cold-email-writer"] != 2*time.Second || cfg.AppTimeouts["test-app"] != 150*time.Millisecond {
		t.Fatalf("parsed %v %v", cfg.AppTimeouts, err)
	}
	for _, bad := range []string{"cold-email-writer", "x=soon", "x=-1s"} {
		if _, err := parseServe([]string{"--app-timeouts", bad}); err == nil {
			t.Errorf("--app-timeouts %q accepted", bad)
		}
	}
	if _, err := (node.Config{AppTimeouts: map[string]time.Duration{"nope": time.Second}}).Catalog(); err == nil {
		t.Error("a timeout for an unknown App was accepted")
	}
}

func TestServeRefusesABadCatalogOrModelConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(bad, []byte("slug: broken\nname: Broken\nprise: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := node.Config{AppsDir: dir}
	if _, err := cfg.Catalog(); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `unknown field "prise"`) {
		t.Fatalf("a broken definition: %v, want an error naming %s and the field", err, bad)
	}
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("APPRUN_LLM_MODEL", "")
	if _, err := parseServe(nil); err == nil || !strings.Contains(err.Error(), "APPRUN_LLM_MODEL") {
		t.Fatalf("a base URL without a model: %v", err)
	}
	t.Setenv("APPRUN_LLM_MODEL", "llama3.2")
	t.Setenv("APPRUN_LLM_PROVIDER", "azure")
	if _, err := parseServe(nil); err == nil || !strings.Contains(err.Error(), "APPRUN_LLM_API_VERSION") {
		t.Fatalf("Azure without an api-version: %v", err)
	}
	t.Setenv("APPRUN_LLM_API_VERSION", "2024-10-21")
	for _, v := range []string{"off", "false", "0", "no", "OFF"} {
		t.Setenv("APPRUN_LLM_STREAM", v)
		if c, err := parseServe(nil); err != nil || !c.Model.NoStream {
			t.Fatalf("APPRUN_LLM_STREAM=%s: %v, no stream %v", v, err, c.Model.NoStream)
		}
	}
}

// Named admin tokens: name:token pairs, each name once; a node refuses a
// bad name, a short token, or the name admin beside APPRUN_ADMIN_TOKEN.
func TestAdminTokensConfig(t *testing.T) {
	cfg, err := parseServe([]string{"--admin-tokens", "finance:finance-token-0123456789, ops-bot:ops:token-0123456789"})
	if err != nil || cfg.AdminTokens["finance"] != "finance-token-0123456789" || cfg.AdminTokens["ops-bot"] != "ops:token-0123456789" {
		t.Fatalf("parsed %v %v", cfg.AdminTokens, err)
	}
	for _, bad := range []string{"finance", "finance:", ":token-0123456789abc", "a:token-0123456789abc,a:token-9876543210abc"} {
		if _, err := parseServe([]string{"--admin-tokens", bad}); err == nil {
			t.Errorf("--admin-tokens %q accepted", bad)
		}
	}
	for name, c := range map[string]node.Config{
		"a bad name":                 {AdminTokens: map[string]string{"Finance Team": "finance-token-0123456789"}},
		"a short token":              {AdminTokens: map[string]string{"finance": "short"}},
		"admin twice":                {AdminToken: "admin-token-0123456789", AdminTokens: map[string]string{"admin": "other-token-0123456789"}},
		"one token twice":            {AdminToken: "admin-token-0123456789", AdminTokens: map[string]string{"finance": "admin-token-0123456789"}},
		"no admin token":             {},
		"a short APPRUN_ADMIN_TOKEN": {AdminToken: "short"},
	} {
		c.DataDir = t.TempDir()
		if _, err := node.New(c); err == nil || !strings.Contains(err.Error(), "ADMIN_TOKEN") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
