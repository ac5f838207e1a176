package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/llm/llmtest"
	"github.com/chromedp/chromedp"
)

// TestBrowserSignUpKeyRunAndAPI drives the website in headless Chromium:
// sign up, create an API key, start a cold-email-writer run from its
// reference page, watch the live view reach completed, read the emails,
// then use the new key with the API. Screenshots of each page go to the
// test's temp dir, or to $APPRUN_BROWSER_SHOTS to keep them.
func TestBrowserSignUpKeyRunAndAPI(t *testing.T) {
	t.Parallel() // a browser waits on pages much of its time: it runs beside the other parallel tests
	bin := ChromiumOrSkip(t)
	fake := llmtest.New()
	defer fake.Close()
	// The model writes slowly enough for the live view to show progress.
	fake.Script(llmtest.Reply{Text: ModelSequence, Chunks: 12, ChunkDelay: 150 * time.Millisecond})
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(500), WithModel(fake))
	shots := filepath.Join(t.TempDir(), "screenshots")
	if keep := os.Getenv("APPRUN_BROWSER_SHOTS"); keep != "" {
		shots = keep // to look at them after the test
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", shots)

	ctx := StartChromium(t, bin, 1280, 900, 90*time.Second)

	n := 0
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg) // 100: PNG
			if err != nil {
				return err
			}
			n++
			return os.WriteFile(filepath.Join(shots, fmt.Sprintf("%02d-%s.png", n, name)), buf, 0o644)
		})
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel chromedp.CSS) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	do("sign up",
		chromedp.Navigate(h.Srv.URL+"/signup"),
		chromedp.WaitVisible(css("#email")),
		shot("signup"),
		chromedp.SendKeys(css("#email"), "browser@example.com"),
		chromedp.SendKeys(css("#password"), WebPassword),
		chromedp.SendKeys(css("#password_again"), WebPassword),
		chromedp.Submit(css("#email")),
		chromedp.WaitVisible(css(".apps")), // sign-up lands on the Apps
	)
	do("create an API key",
		chromedp.Navigate(h.Srv.URL+"/settings/keys"),
		chromedp.WaitVisible(css(`input[name="name"]`)),
		chromedp.SendKeys(css(`input[name="name"]`), "from the browser"),
		chromedp.Submit(css(`input[name="name"]`)),
		chromedp.WaitVisible(css("#new-key")),
		shot("api-key-created"),
	)
	key := text(css("#new-key"))
	if !strings.HasPrefix(key, "ak_") {
		t.Fatalf("the key shown: %q", key)
	}
	do("start a cold-email-writer run from its reference page",
		chromedp.Navigate(h.Srv.URL+"/apps/cold-email-writer"),
		chromedp.WaitVisible(css("#run-form")),
		shot("reference-page"),
		chromedp.SendKeys(css("#f-product_description"), "Acme Ledger automates bookkeeping for small agencies."),
		chromedp.SendKeys(css("#f-target_role"), "Agency founders"),
		chromedp.Submit(css("#run-form")),
		chromedp.WaitVisible(css("#live")),
	)
	runURL, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	do("watch the live view reach completed",
		chromedp.WaitVisible(css("#progress li")), // an event the stream delivered
		shot("run-live"),
		chromedp.WaitVisible(css(".cards .card")), // the page reloaded with the report
		shot("run-completed"),
	)
	cards, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".cards .card").length`))
	if err != nil {
		t.Fatal(err)
	}
	if status := text(css("#status")); status != "completed" || cards != 3 {
		t.Fatalf("run page: status %q with %d email cards, want completed and 3", status, cards)
	}
	if first := text(css("#body-1")); !strings.Contains(first, "model-written opener") {
		t.Fatalf("first email body %q", first)
	}
	do("the other pages",
		chromedp.Navigate(h.Srv.URL+"/runs"), chromedp.WaitVisible(css("table")), shot("runs"),
		chromedp.Navigate(h.Srv.URL+"/credits"), chromedp.WaitVisible(css("#balance")), shot("credits"),
		chromedp.Navigate(h.Srv.URL+"/settings/keys"), chromedp.WaitVisible(css("table")), shot("api-keys"),
		chromedp.Navigate(h.Srv.URL+"/apps"), chromedp.WaitVisible(css(".apps")), shot("apps"),
	)

	// The key from the website works on the API and sees the same run.
	runNo := runURL[strings.LastIndex(runURL, "/")+1:]
	req, _ := http.NewRequest("GET", h.Srv.URL+"/api/v1/runs/"+runNo, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"completed"`) || !strings.Contains(string(body), "model-written opener") {
		t.Fatalf("API with the website's key: %d %s", resp.StatusCode, body)
	}
	files, _ := filepath.Glob(filepath.Join(shots, "*.png"))
	if len(files) < 9 {
		t.Fatalf("%d screenshots, want one per page", len(files))
	}
}
