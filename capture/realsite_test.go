package capture

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	fx "github.com/snapq/snapq/internal/fixtures"
)

var (
	realOnce sync.Once
	realSrv  *httptest.Server
)

// realSite is the fixture site of real-site cases (internal/fx.RealSite), on loopback.
func realSite(t *testing.T) string {
	t.Helper()
	realOnce.Do(func() { realSrv = httptest.NewServer(fx.RealSite()) }) // closed with the process
	return realSrv.URL
}

// fastQuality keeps the tests' bounded waits short.
var fastQuality = QualityOptions{RetryWaitMS: 1500, ChallengeWaitMS: 1200}

func TestConsentBanners(t *testing.T) {
	b := sharedBrowser(t)
	base := realSite(t)
	for _, cmp := range fx.ConsentPlatforms {
		for _, mode := range []string{ConsentOff, ConsentHide, ConsentAccept} {
			// One after another: twelve captures queued on the shared browser's two tabs would
			// spend their 30 s bound waiting on a loaded machine.
			t.Run(cmp+"/"+mode, func(t *testing.T) {
				res := mustCapture(t, b, Request{URL: base + "/consent/" + cmp, Name: "c",
					Screenshot: Screenshot{Mode: ModeViewport}, Prepare: Prepare{Consent: mode}, Quality: fastQuality})
				m := decode(t, res.Images[0])
				// Where the banner was: bottom-left, 10 px above the bottom of the screen.
				x, y := 5, res.Images[0].Height-10
				want := fx.RealBackground
				if mode == ConsentOff {
					want = fx.BannerColor
				}
				if !near(m, x, y, want, 8) {
					t.Errorf("pixel at %d,%d is %s, want %v (the banner %s)", x, y, pixel(m, x, y), want,
						map[bool]string{true: "shown", false: "gone"}[mode == ConsentOff])
				}
				if mode == ConsentOff {
					if res.Consent != nil {
						t.Errorf("consent off reported %v", res.Consent)
					}
					return
				}
				if len(res.Consent) != 1 || res.Consent[0].Platform != cmp {
					t.Fatalf("consent found %+v, want one %s banner", res.Consent, cmp)
				}
				wantAction := map[string]string{ConsentHide: "hidden", ConsentAccept: "accepted"}[mode]
				if res.Consent[0].Action != wantAction {
					t.Errorf("action %q, want %q", res.Consent[0].Action, wantAction)
				}
				// The fixture's accept button sets a cookie and the title.
				if accepted := res.Title == "accepted"; accepted != (mode == ConsentAccept) {
					t.Errorf("title %q after %s", res.Title, mode)
				}
				if !slices.ContainsFunc(res.Log, func(e LogEntry) bool {
					return e.Type == "edit.consent" && strings.Contains(e.Excerpt, cmp+": "+wantAction)
				}) {
					t.Errorf("no edit.consent log entry naming %s: %+v", cmp, res.Log)
				}
				if res.Quality == nil || res.Quality.Verdict != VerdictOK {
					t.Errorf("quality %+v, want ok", res.Quality)
				}
			})
		}
	}
}

func TestInnerScrollerSegments(t *testing.T) {
	b := sharedBrowser(t)
	res := mustCapture(t, b, Request{URL: realSite(t) + "/appshell", Name: "shell",
		Viewport: Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1}, Quality: fastQuality})
	if res.Segments.Total != 9 || len(res.Images) != 9 {
		t.Fatalf("segments %+v, %d images; want 9 (6,000 px at 720 px)", res.Segments, len(res.Images))
	}
	if res.PageHeight != fx.ShellHeight {
		t.Errorf("page height %d, want %d", res.PageHeight, fx.ShellHeight)
	}
	last := res.Images[8]
	if last.Height != fx.ShellHeight-8*720 {
		t.Errorf("last segment %d px tall, want %d", last.Height, fx.ShellHeight-8*720)
	}
	m := decode(t, last)
	if !near(m, 5, last.Height-10, fx.ShellEnd, 8) || !near(m, 5, last.Height-95, fx.ShellEnd, 8) {
		t.Errorf("the last segment's bottom is %s, want the content's last lines %v", pixel(m, 5, last.Height-10), fx.ShellEnd)
	}
	first := decode(t, res.Images[0])
	if !near(first, 5, 5, fx.ShellBandA, 8) || !near(first, 5, 700, fx.ShellBandB, 8) {
		t.Errorf("first segment: %s at y=5, %s at y=700; want the first two bands", pixel(first, 5, 5), pixel(first, 5, 700))
	}
	if !slices.ContainsFunc(res.Log, func(e LogEntry) bool { return e.Type == "fit" && strings.Contains(e.Excerpt, "div#main") }) {
		t.Errorf("no fit log entry naming the scroller: %+v", res.Log)
	}

	full := mustCapture(t, b, Request{URL: realSite(t) + "/appshell", Name: "shell",
		Screenshot: Screenshot{Mode: ModeFull}, Quality: fastQuality})
	if h := full.Images[0].Height; h != fx.ShellHeight {
		t.Fatalf("full capture %d px tall, want %d", h, fx.ShellHeight)
	}
	if m := decode(t, full.Images[0]); !near(m, 5, fx.ShellHeight-10, fx.ShellEnd, 8) {
		t.Errorf("full capture's bottom is %s, want %v", pixel(m, 5, fx.ShellHeight-10), fx.ShellEnd)
	}
}

func TestViewportHeightHero(t *testing.T) {
	b := sharedBrowser(t)
	for _, mode := range []string{ModeFull, ModeSegments} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			res := mustCapture(t, b, Request{URL: realSite(t) + "/hero", Name: "hero",
				Viewport: Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1}, Screenshot: Screenshot{Mode: mode}, Quality: fastQuality})
			if res.PageHeight != 2720 {
				t.Errorf("page height %d, want 2720 (a 720 px hero + 2000 px)", res.PageHeight)
			}
			m := decode(t, res.Images[0])
			if !near(m, 5, 715, fx.HeroColor, 8) {
				t.Errorf("y=715 is %s, want the hero", pixel(m, 5, 715))
			}
			y := 725
			if mode == ModeSegments {
				m, y = decode(t, res.Images[1]), 5
			}
			if !near(m, 5, y, fx.RealBackground, 8) {
				t.Errorf("just below 720 px is %s, want the page: the hero stretched", pixel(m, 5, y))
			}
		})
	}
}

func TestQualityVerdicts(t *testing.T) {
	b := sharedBrowser(t)
	base := realSite(t)
	for _, tc := range []struct {
		name, path string
		want       []string
		noRetry    bool
	}{
		{"ok", "/quality/ok", nil, false},
		{"blank", "/quality/blank", []string{ReasonBlank}, false},
		{"spinner", "/quality/spinner", []string{ReasonLoading}, false},
		{"broken image", "/quality/broken-image", []string{ReasonFailedImages}, true},
		{"broken font", "/quality/broken-font", []string{ReasonFailedFonts}, true},
		{"challenge that clears", "/quality/challenge-clears", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fastQuality
			q.NoRetry = tc.noRetry
			res := mustCapture(t, b, Request{URL: base + tc.path, Name: "q", Screenshot: Screenshot{Mode: ModeViewport}, Quality: q})
			if res.Quality == nil {
				t.Fatal("no quality verdict")
			}
			verdict := VerdictOK
			if len(tc.want) > 0 {
				verdict = VerdictSuspect
			}
			if res.Quality.Verdict != verdict || !slices.Equal(res.Quality.Reasons, tc.want) {
				t.Errorf("quality %+v, want %s %v", res.Quality, verdict, tc.want)
			}
			if retried := len(tc.want) > 0 && !tc.noRetry; res.Quality.Retried != retried {
				t.Errorf("retried %v, want %v", res.Quality.Retried, retried)
			}
		})
	}
}

func TestChallengeBlocked(t *testing.T) {
	b := sharedBrowser(t)
	start := time.Now()
	_, err := b.Capture(context.Background(), Request{URL: realSite(t) + "/quality/challenge", Name: "c",
		Screenshot: Screenshot{Mode: ModeViewport}, Quality: fastQuality, Timeout: 20 * time.Second})
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodeChallengeBlocked || ce.Retryable {
		t.Fatalf("err %v, want a permanent %s", err, CodeChallengeBlocked)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %s with a 1.2 s challenge wait", d)
	}
	if !strings.Contains(ce.Message, "Just a moment") {
		t.Errorf("message %q does not say why", ce.Message)
	}
}

// TestPlatformFonts proves CJK and emoji text is drawn with real glyphs: Chromium names the
// platform fonts that rendered each node (CSS.getPlatformFontsForNode), Noto CJK and Noto
// Color Emoji, never a last-resort font.
func TestPlatformFonts(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	mustCapture(t, b, Request{URL: realSite(t) + "/quality/ok", Name: "warm"})
	tb := idleTab(t, b)
	p := tb.page
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p = p.Context(ctx)
	if err := p.Navigate(realSite(t) + "/fonts"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitLoad(); err != nil {
		t.Fatal(err)
	}
	if err := (proto.DOMEnable{}).Call(p); err != nil {
		t.Fatal(err)
	}
	if err := (proto.CSSEnable{}).Call(p); err != nil {
		t.Fatal(err)
	}
	doc, err := proto.DOMGetDocument{}.Call(p)
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{"#cjk": "Noto Sans CJK", "#emoji": "Noto Color Emoji"} {
		n, err := proto.DOMQuerySelector{NodeID: doc.Root.NodeID, Selector: sel}.Call(p)
		if err != nil {
			t.Fatal(err)
		}
		kids, err := proto.DOMDescribeNode{NodeID: n.NodeID, Depth: gson1()}.Call(p)
		if err != nil {
			t.Fatal(err)
		}
		// The fonts of the text node, the paragraph's child.
		var textID proto.DOMBackendNodeID
		for _, c := range kids.Node.Children {
			if c.NodeType == 3 {
				textID = c.BackendNodeID
			}
		}
		pushed, err := proto.DOMPushNodesByBackendIDsToFrontend{BackendNodeIDs: []proto.DOMBackendNodeID{textID}}.Call(p)
		if err != nil || len(pushed.NodeIDs) != 1 {
			t.Fatalf("push text node of %s: %v", sel, err)
		}
		fonts, err := proto.CSSGetPlatformFontsForNode{NodeID: pushed.NodeIDs[0]}.Call(p)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		glyphs := 0.0
		for _, f := range fonts.Fonts {
			names = append(names, f.FamilyName)
			if strings.Contains(f.FamilyName, want) || strings.Contains(f.FamilyName, strings.Replace(want, "Sans", "Serif", 1)) {
				glyphs += f.GlyphCount
			}
		}
		t.Logf("%s: %v", sel, names)
		total := 0.0
		for _, f := range fonts.Fonts {
			if f.FamilyName != "" && !strings.Contains(f.FamilyName, want) && !strings.Contains(f.FamilyName, strings.Replace(want, "Sans", "Serif", 1)) {
				// Spaces may come from a Latin font; nothing else may.
				total += f.GlyphCount
			}
		}
		if glyphs == 0 || total > 3 {
			t.Errorf("%s rendered with %v (%g glyphs from %s, %g from others); want %s", sel, fonts.Fonts, glyphs, want, total, want)
		}
	}
}

func gson1() *int { one := 1; return &one }

// A captcha widget is a challenge only on a page with little else on it: alone on a page it
// blocks the capture; on a form among 2,000 characters of text the page is captured.
func TestChallengeWidgetNeedsLittleText(t *testing.T) {
	b := sharedBrowser(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/alone", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `<!doctype html><title>Sign up</title><div class="cf-turnstile" data-sitekey="x"></div>`)
	})
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `<!doctype html><title>Sign up</title><p>`+strings.Repeat("Plenty of ordinary text. ", 80)+
			`</p><form><div class="cf-turnstile" data-sitekey="x"></div></form>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, err := b.Capture(context.Background(), Request{URL: srv.URL + "/alone", Name: "c",
		Screenshot: Screenshot{Mode: ModeViewport}, Quality: fastQuality, Timeout: 20 * time.Second})
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodeChallengeBlocked || !strings.Contains(ce.Message, "cf-turnstile") {
		t.Errorf("widget alone: err %v, want %s naming the widget", err, CodeChallengeBlocked)
	}
	res := mustCapture(t, b, Request{URL: srv.URL + "/form", Name: "f", Screenshot: Screenshot{Mode: ModeViewport}, Quality: fastQuality})
	if res.Quality == nil || res.Quality.Verdict != VerdictOK {
		t.Errorf("widget on a page of text: quality %+v, want ok", res.Quality)
	}
}
