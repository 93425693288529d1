package report

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/lockbench/lockbench/check"
)

// The browser tests render report.html in headless Chromium and read the
// DOM after the page's script ran. They skip when no Chromium is installed
// (apt-get install -y chromium) unless LOCKBENCH_REQUIRE_CHROMIUM is set,
// in which case they fail. LOCKBENCH_CHROMIUM overrides the binary;
// LOCKBENCH_ARTIFACTS keeps the pages and screenshots in that folder
// (default: the test's temporary folder).

func chromium(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("LOCKBENCH_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "headless Chromium not found (/usr/bin/chromium; install it with apt-get install -y chromium, or set LOCKBENCH_CHROMIUM)"
	if os.Getenv("LOCKBENCH_REQUIRE_CHROMIUM") != "" {
		t.Fatal(msg + ", and LOCKBENCH_REQUIRE_CHROMIUM is set")
	}
	t.Skip(msg + "; set LOCKBENCH_REQUIRE_CHROMIUM=1 to make this a failure")
	return ""
}

func artifacts(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("LOCKBENCH_ARTIFACTS"); d != "" {
		d, err := filepath.Abs(filepath.Join(d, t.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// headless runs Chromium on a local page with no network, a fresh profile,
// and a virtual-time budget so that the page's script has run.
func headless(t *testing.T, bin, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000", "--window-size=1400,900"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, tail(stderr.Bytes(), 2000))
	}
	return stdout.Bytes()
}

// loadPage writes content to page, loads it in Chromium and returns the
// DOM after its scripts ran (also saved as dom.html beside the page).
func loadPage(t *testing.T, bin, page string, content []byte) *html.Node {
	t.Helper()
	if err := os.WriteFile(page, content, 0o644); err != nil {
		t.Fatal(err)
	}
	dom := headless(t, bin, page, "--dump-dom")
	if err := os.WriteFile(filepath.Join(filepath.Dir(page), "dom.html"), dom, 0o644); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// renderInBrowser writes the report of f, loads it in Chromium, checks the
// DOM after the script ran, and saves a screenshot.
func renderInBrowser(t *testing.T, f fixture) (page string) {
	bin := chromium(t)
	dir := artifacts(t)
	ev, sum := f.summary()
	p, q := violationPair(t, sum)
	page = filepath.Join(dir, runHTMLFile)
	var b bytes.Buffer
	if err := WriteRunHTML(&b, map[string]any{"lock": sum.Lock, "scenario": map[string]any{"name": sum.Scenario}}, check.Check(ev, check.Options{}), RunContext{Cell: Cell{Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	doc := loadPage(t, bin, page, b.Bytes())
	checkRunDOM(t, doc, f.Clients, p, q)
	checkPageInBrowser(t, doc, dir)
	// The script ran: it marks the body and counts what it drew per lane.
	var drawn string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "body" {
			drawn, _ = attr(n, "data-timeline")
		}
	})
	if drawn != "drawn" {
		t.Fatalf("the page's script did not draw the timeline (body data-timeline=%q); DOM in %s", drawn, dir)
	}
	for _, l := range byClass(doc, "lane") {
		v, _ := attr(l, "data-drawn")
		if n, err := strconv.Atoi(v); err != nil || n == 0 {
			pr, _ := attr(l, "data-process")
			t.Errorf("lane %s: drew %q shapes", pr, v)
		}
	}
	for _, v := range byClass(doc, "violation") {
		if st, _ := attr(v, "style"); strings.Contains(st, "display: none") {
			t.Errorf("a violation mark is hidden at full zoom: %q", st)
		}
	}

	shot := filepath.Join(dir, "report.png")
	headless(t, bin, page, "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10_000 {
		t.Errorf("screenshot %s is not a plausible PNG (%d bytes)", shot, len(png))
	}
	t.Logf("page %s, screenshot %s", page, shot)
	return page
}

func TestBrowserRunReport(t *testing.T) {
	page := renderInBrowser(t, defaultFixture())

	// A link to a violation (#v=0) zooms the timeline to it: the fault,
	// earlier in the run, leaves the view; both holders stay marked.
	dom := headless(t, chromium(t), page+"#v=0", "--dump-dom")
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range byClass(doc, "fault") {
		if st, _ := attr(f, "style"); !strings.Contains(st, "display: none") {
			t.Errorf("zoomed to the violation, the fault band is still shown: %q", st)
		}
	}
	focused := 0
	for _, v := range byClass(doc, "violation") {
		if st, _ := attr(v, "style"); strings.Contains(st, "display: none") {
			t.Errorf("zoomed to the violation, its mark is hidden: %q", st)
		}
		if hasClass(v, "focus") {
			focused++
		}
	}
	if focused != 2 {
		t.Errorf("%d violation marks highlighted, want both holders", focused)
	}
	var rng string
	walk(doc, func(n *html.Node) {
		if id, _ := attr(n, "id"); id == "tl-range" && n.FirstChild != nil {
			rng = n.FirstChild.Data
		}
	})
	if strings.HasPrefix(rng, "0 –") {
		t.Errorf("the view still starts at 0: %q", rng)
	}
	checkZoomedToOverlap(t, doc)
}

// checkZoomedToOverlap: at #v=0 the view spans < 10% of the run, and each
// focused mark is drawn over exactly the holders' overlap (its data-from –
// data-to, which TestTimelineConflictView ties to the overlap): its left
// and width in % of the view match.
func checkZoomedToOverlap(t *testing.T, doc *html.Node) {
	t.Helper()
	a, b, end := drawnView(t, doc)
	if span := (b - a) / end; span >= 0.1 {
		t.Errorf("zoomed to violation 0, the view spans %.1f%% of the run, want < 10%%", span*100)
	}
	for _, m := range byClass(doc, "violation") {
		if !hasClass(m, "focus") {
			continue
		}
		from, _ := attr(m, "data-from")
		to, _ := attr(m, "data-to")
		f, _ := strconv.ParseFloat(from, 64)
		e, _ := strconv.ParseFloat(to, 64)
		st, _ := attr(m, "style")
		left, width := stylePct(st, "left"), stylePct(st, "width")
		wantL, wantW := (f-a)/(b-a)*100, (e-f)/(b-a)*100
		if math.Abs(left-wantL) > 0.5 || math.Abs(width-wantW) > 0.5 {
			t.Errorf("mark drawn at left %.2f%% width %.2f%%, the overlap %s–%s is at %.2f%% width %.2f%% (style %q)", left, width, from, to, wantL, wantW, st)
		}
		if wantW < 20 {
			t.Errorf("the overlap is %.1f%% of the zoomed view, want it plainly visible (≥ 20%%)", wantW)
		}
	}
}

// drawnView reads the view the script drew (data-view "a,b,end").
func drawnView(t *testing.T, doc *html.Node) (a, b, end float64) {
	t.Helper()
	var v string
	walk(doc, func(n *html.Node) {
		if id, _ := attr(n, "id"); id == "timeline" {
			v, _ = attr(n, "data-view")
		}
	})
	parts := strings.Split(v, ",")
	if len(parts) != 3 {
		t.Fatalf("timeline data-view = %q", v)
	}
	xs := make([]float64, 3)
	for i, p := range parts {
		xs[i], _ = strconv.ParseFloat(p, 64)
	}
	return xs[0], xs[1], xs[2]
}

// stylePct reads "prop: N%" from an inline style.
func stylePct(style, prop string) float64 {
	for _, decl := range strings.Split(style, ";") {
		k, v, ok := strings.Cut(decl, ":")
		if ok && strings.TrimSpace(k) == prop {
			f, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "%"), 64)
			return f
		}
	}
	return math.NaN()
}

// checkPageInBrowser checks what every page must do once its script ran
// at 1400 px: no script error, the page no wider than the window, every
// chart legend inside its SVG, and the two "over time" sections with
// points drawn.
func checkPageInBrowser(t *testing.T, doc *html.Node, dir string) {
	t.Helper()
	var body *html.Node
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "body" {
			body = n
		}
	})
	if e, ok := attr(body, "data-errors"); ok {
		t.Errorf("%s script errors in the page (DOM in %s)", e, dir)
	}
	pw, _ := attr(body, "data-page-width")
	ww, _ := attr(body, "data-window-width")
	p, err1 := strconv.Atoi(pw)
	w, err2 := strconv.Atoi(ww)
	if err1 != nil || err2 != nil || p > w || w > 1400 {
		t.Errorf("page width %q, window width %q: want the page no wider than the 1400 px window", pw, ww)
	}
	svgs := byClass(doc, "cdf")
	if len(svgs) == 0 {
		t.Error("no charts")
	}
	for _, s := range svgs {
		if fits, _ := attr(s, "data-legend-fits"); fits != "yes" {
			label, _ := attr(s, "aria-label")
			t.Errorf("chart %q: legend fits = %q, want every legend box inside the SVG", label, fits)
		}
	}
	for _, id := range []string{"throughput-time", "latency-time"} {
		var sec *html.Node
		walk(doc, func(n *html.Node) {
			if v, _ := attr(n, "id"); v == id {
				sec = n
			}
		})
		if sec == nil {
			t.Errorf("no section #%s", id)
			continue
		}
		if n := len(byClass(sec, "ts-point")); n == 0 {
			t.Errorf("section #%s: no points drawn", id)
		}
	}
}

// TestBrowserSuiteReport renders a suite of 4 strategies × 15 scenarios
// at 1400 px: the matrix scrolls in its own box, so the page is no wider
// than the window; legends fit; the time series are drawn.
func TestBrowserSuiteReport(t *testing.T) {
	bin := chromium(t)
	dir := artifacts(t)
	base := suiteCells()
	var cells []Cell
	for i := range 15 {
		for _, c := range base[:3] {
			c.Summary.Scenario = fmt.Sprintf("scenario-with-a-long-name-%02d", i)
			cells = append(cells, c)
		}
	}
	page := filepath.Join(dir, "suite.html")
	var b bytes.Buffer
	header := Suite{Lockbench: "(devel) 0123456789ab", Started: "2026-12-04T17:29:48Z", WallS: 305,
		Host: &Host{CPUModel: "Test CPU", CPUs: 2, OS: "linux", Arch: "amd64", Kernel: "6.1"}}
	if err := WriteSuiteHTML(&b, header, cells); err != nil {
		t.Fatal(err)
	}
	doc := loadPage(t, bin, page, b.Bytes())
	checkPageInBrowser(t, doc, dir)
	if n := len(byClass(doc, "scroll-x")); n == 0 {
		t.Error("the matrix is not in a scrolling box")
	}
	// The suite's result and identity are on the first screen.
	var wh string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "body" {
			wh, _ = attr(n, "data-window-height")
		}
	})
	out, ids := byClass(doc, "outcome"), byClass(doc, "identity")
	if len(out) != 1 || len(ids) != 1 {
		t.Fatalf("%d result lines and %d identity lines, want one each", len(out), len(ids))
	}
	bottom, _ := attr(out[0], "data-bottom")
	px, err1 := strconv.Atoi(bottom)
	h, err2 := strconv.Atoi(wh)
	if err1 != nil || err2 != nil || px <= 0 || px > h {
		t.Errorf("the result line ends at %q px of a %q px window: want it on the first screen", bottom, wh)
	}
	if got := textOf(ids[0]); !strings.Contains(got, "lockbench (devel) 0123456789ab") || !strings.Contains(got, "took 5m5s") {
		t.Errorf("identity %q", got)
	}
}

func TestBrowserRunReportLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	renderInBrowser(t, bigFixture())
}
