package filterlist

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	shippedOnce sync.Once
	shippedEng  *Engine
	shippedErr  error
)

// shippedEngine loads the shipped lists once for the package's tests.
func shippedEngine(t testing.TB) *Engine {
	t.Helper()
	shippedOnce.Do(func() { shippedEng, shippedErr = Load(nil) })
	if shippedErr != nil {
		t.Fatal(shippedErr)
	}
	return shippedEng
}

func TestShippedListsMatch(t *testing.T) {
	t.Parallel()
	e := shippedEngine(t)
	for _, c := range Categories() {
		n, h := e.Rules(c)
		t.Logf("%s: %d network rules, %d element-hiding rules", c, n, h)
		if n == 0 {
			t.Errorf("%s loaded no network rule", c)
		}
	}
	if n, _ := e.Rules(Ads); n < 10000 {
		t.Errorf("EasyList loaded %d network rules, want the full list", n)
	}
	all := Categories()
	page := "http://news.test/story"
	tests := []struct {
		name, url, typ string
		cats           []string
		want           string
	}{
		{"ad server script", "https://ib.adnxs.com/ut/v3/prebid", "Script", all, Ads},
		{"ad iframe", "https://ib.adnxs.com/tt?id=1", "Document", all, Ads},
		{"analytics", "https://www.google-analytics.com/analytics.js", "Script", all, Trackers},
		{"heatmap tracker", "https://static.hotjar.com/c/hotjar-1.js", "Script", all, Trackers},
		{"chat widget", "https://widget.intercom.io/widget/abc123", "Script", all, ChatWidgets},
		{"share buttons", "https://platform.twitter.com/widgets/tweet_button.html", "Document", all, Social},
		{"share plugin", "http://cdn.test/wp-content/plugins/add-to-any/addtoany.min.js", "Script", all, Social},
		{"consent manager", "https://cdn.cookielaw.org/scripttemplates/otSDKStub.js", "Script", all, CookieBanners},
		{"cookie notice plugin", "http://cdn.test/cookie-notice.js", "Script", all, CookieBanners},
		{"share plugin, social off", "http://cdn.test/wp-content/plugins/add-to-any/addtoany.min.js", "Script", []string{Ads, Trackers}, ""},
		{"first-party script", "http://news.test/app.js", "Script", all, ""},
		{"tracker, trackers off", "https://www.google-analytics.com/analytics.js", "Script", []string{Ads}, ""},
		{"nothing asked", "https://ib.adnxs.com/ut/v3/prebid", "Script", nil, ""},
		{"data URL", "data:image/png;base64,AAAA", "Image", all, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.Match(tt.url, page, tt.typ, false, tt.cats); got != tt.want {
				t.Errorf("Match(%s) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
	sels := e.Selectors("news.test", []string{Ads, ChatWidgets})
	if !slices.Contains(sels[Ads], ".ad-slot") || !slices.Contains(sels[ChatWidgets], "#intercom-container") {
		t.Errorf("selectors: %d ads (has .ad-slot: %v), chat %v", len(sels[Ads]), slices.Contains(sels[Ads], ".ad-slot"), sels[ChatWidgets])
	}
	// Issue 30: the social and cookie-banner lists hide share bars and
	// cookie notices by their usual containers, each in its own category.
	sels = e.Selectors("news.test", all)
	for c, sel := range map[string]string{Social: ".share-buttons", CookieBanners: "#cookie-notice"} {
		if !slices.Contains(sels[c], sel) {
			t.Errorf("%s selectors (%d) lack %s", c, len(sels[c]), sel)
		}
		if slices.Contains(sels[Ads], sel) {
			t.Errorf("%s is hidden as an ad too", sel)
		}
	}
	if _, ok := e.Selectors("news.test", []string{Trackers})[Ads]; ok {
		t.Error("ads selectors given when only trackers were asked for")
	}
}

// SNAPQ_FILTER_LISTS files replace a category's shipped lists; exceptions
// and site-specific hiding apply; a missing or oversized file is an error.
func TestLoadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ads := filepath.Join(dir, "ads.txt")
	if err := os.WriteFile(ads, []byte("||ads.example^\n@@||ads.example/ok^\n##.banner\nnews.test##.promo\nnews.test#@#.banner\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Load(map[string][]string{Ads: {ads}})
	if err != nil {
		t.Fatal(err)
	}
	all := Categories()
	if got := e.Match("https://ads.example/x.js", "http://a.test/", "Script", false, all); got != Ads {
		t.Errorf("blocked by the file: %q", got)
	}
	if got := e.Match("https://ads.example/ok/x.js", "http://a.test/", "Script", false, all); got != "" {
		t.Errorf("an exception rule's request was blocked as %q", got)
	}
	if got := e.Match("https://ib.adnxs.com/ut/v3", "http://a.test/", "Script", false, all); got != "" {
		t.Errorf("the shipped EasyList still applies: %q", got)
	}
	if got := e.Selectors("other.test", all)[Ads]; !slices.Equal(got, []string{".banner"}) {
		t.Errorf("other.test selectors %v", got)
	}
	if got := e.Selectors("www.news.test", all)[Ads]; !slices.Equal(got, []string{".promo"}) {
		t.Errorf("www.news.test selectors %v, want the site's and not the excepted one", got)
	}
	// An exception that only lifts element hiding on a site (AdGuard's
	// lists have many) does not let that site's blocked requests through.
	social := filepath.Join(dir, "social.txt")
	if err := os.WriteFile(social, []byte("||news.test/share/\n@@||news.test^$generichide\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err = Load(map[string][]string{Social: {social}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Match("http://news.test/share/b.js", "http://news.test/", "Script", false, all); got != Social {
		t.Errorf("a $generichide exception let a blocked request through: %q", got)
	}
	if _, err := Load(map[string][]string{Trackers: {filepath.Join(dir, "missing.txt")}}); err == nil {
		t.Error("a missing list file loaded")
	}
}

func TestParseSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     Spec
		wantErr  string
	}{
		{"shipped", "", Spec{}, ""},
		{"off", "off", Spec{Off: true}, ""},
		{"files", "ads=/a.txt,/b.txt.gz; trackers=/c.txt", Spec{Files: map[string][]string{Ads: {"/a.txt", "/b.txt.gz"}, Trackers: {"/c.txt"}}}, ""},
		{"unknown category", "popups=/a.txt", Spec{}, "category one of"},
		{"new categories", "social=/s.txt;cookie_banners=/c.txt", Spec{Files: map[string][]string{Social: {"/s.txt"}, CookieBanners: {"/c.txt"}}}, ""},
		{"relative path", "ads=a.txt", Spec{}, "absolute"},
		{"twice", "ads=/a;ads=/b", Spec{}, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSpec(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Off != tt.want.Off || len(got.Files) != len(tt.want.Files) {
				t.Fatalf("ParseSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			for c, fs := range tt.want.Files {
				if !slices.Equal(got.Files[c], fs) {
					t.Errorf("%s: %v, want %v", c, got.Files[c], fs)
				}
			}
		})
	}
}
