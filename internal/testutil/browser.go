package testutil

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// SVGBox is one <svg> element of a page as the browser laid it out.
type SVGBox struct {
	// ID and Class are the element's attributes.
	ID, Class string
	// Width and Height are its box on the page, in CSS pixels.
	Width, Height float64
	// ContentWidth and ContentHeight are the bounding box of what it draws (getBBox).
	ContentWidth, ContentHeight float64
	// Marks counts its data marks (elements with data-series: the report's points and bars);
	// DrawnMarks those with a non-empty box on the page.
	Marks, DrawnMarks int
}

// BrowserPage is what headless Chromium made of an HTML file.
type BrowserPage struct {
	// SVGs are the page's <svg> elements, in document order.
	SVGs []SVGBox
	// Errors are script exceptions, console errors and the browser's error log entries.
	Errors []string
	// PNG is the full page's screenshot.
	PNG []byte
}

// RenderInChromium opens the HTML file at path in headless Chromium (Debian's chromium, through the
// DevTools protocol), lays it out at a 1280-pixel-wide window, measures every <svg> and takes a
// full-page PNG, which it also writes beside the file (path + ".png") for a person to look at.
func RenderInChromium(t testing.TB, path string) BrowserPage {
	t.Helper()
	exe := RequireTool(t, "chromium")
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		chromedp.Flag("headless", "new"),
		// Root in a container: the sandbox needs user namespaces the host may not give.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	var page BrowserPage
	var mu sync.Mutex
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			page.Errors = append(page.Errors, fmt.Sprintf("exception: %s (line %d)", e.ExceptionDetails.Text, e.ExceptionDetails.LineNumber))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				page.Errors = append(page.Errors, fmt.Sprintf("console.%s with %d arguments", e.Type, len(e.Args)))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				page.Errors = append(page.Errors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	const measure = `Array.from(document.querySelectorAll('svg')).map(s => {
  const r = s.getBoundingClientRect(), b = s.getBBox();
  const pts = Array.from(s.querySelectorAll('[data-series]'));
  return {ID: s.id, Class: s.getAttribute('class') || '', Width: r.width, Height: r.height,
    ContentWidth: b.width, ContentHeight: b.height, Marks: pts.length,
    DrawnMarks: pts.filter(c => { const q = c.getBoundingClientRect(); return q.width > 0 && q.height > 0; }).length};
})`
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatalf("opening %s in %s: %v", path, exe, err)
	}
	svgs, err := chromedp.Run(bctx, chromedp.Evaluate[[]SVGBox](measure))
	if err != nil {
		t.Fatalf("measuring the SVGs of %s: %v", path, err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("a screenshot of %s: %v", path, err)
	}
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("the screenshot of %s is not a PNG: %v", path, err)
	}
	if err := os.WriteFile(path+".png", shot, 0o644); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	page.SVGs, page.PNG = svgs, shot
	return page
}

// CheckChartsDrawn fails t unless the page has charts <svg class="chart"> elements (the report's), each laid out, drawing inside its box and
// showing all of its data marks, no error, and a screenshot with content.
func CheckChartsDrawn(t testing.TB, page BrowserPage, charts int) {
	t.Helper()
	if charts == 0 {
		t.Fatal("the page has no chart to check")
	}
	seen := 0
	for _, s := range page.SVGs {
		if s.Class != "chart" {
			continue
		}
		seen++
		switch {
		case s.Width < 100 || s.Height < 50:
			t.Errorf("chart %s laid out at %.0fx%.0f px", s.ID, s.Width, s.Height)
		case s.ContentWidth <= 0 || s.ContentHeight <= 0:
			t.Errorf("chart %s draws nothing (bounding box %.0fx%.0f)", s.ID, s.ContentWidth, s.ContentHeight)
		case s.Marks == 0 || s.DrawnMarks != s.Marks:
			t.Errorf("chart %s shows %d of its %d data marks", s.ID, s.DrawnMarks, s.Marks)
		}
	}
	if seen != charts {
		t.Errorf("the browser laid out %d charts, the page has %d", seen, charts)
	}
	for _, e := range page.Errors {
		t.Errorf("the page raised %s", e)
	}
	img, err := png.Decode(bytes.NewReader(page.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
		t.Errorf("screenshot %dx%d px, want the whole page", b.Dx(), b.Dy())
	}
	if n := colours(img, 64); n < 8 {
		t.Errorf("the screenshot has %d colours: blank", n)
	}
}

// colours counts the distinct colours of img, up to limit.
func colours(img image.Image, limit int) int {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}
