package nodetest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumOrSkip is chromium's binary, or skips the test without one.
func ChromiumOrSkip(t *testing.T) string {
	t.Helper()
	bin := Chromium()
	if bin == "" {
		t.Skip("no Chromium installed: `apt-get install chromium` (.ci/run installs it) to run the browser test")
	}
	return bin
}

// Chromium finds a Chromium or Chrome binary (.ci/run installs Debian's).
func Chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// StartChromium starts a headless Chromium of its own (a fresh profile)
// with a viewport of w×h, and returns a context for its first tab that
// ends after budget; the browser is closed when the test ends.
func StartChromium(t *testing.T, bin string, w, h int64, budget time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(int(w), int(h)))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, extra...)...)
	t.Cleanup(cancelAlloc)
	browserCtx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	// The first action starts the browser; the budget belongs on later ones.
	if err := chromedp.Do(browserCtx, chromedp.EmulateViewport(w, h)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	ctx, cancelBudget := context.WithTimeout(browserCtx, budget)
	t.Cleanup(cancelBudget)
	return ctx
}
