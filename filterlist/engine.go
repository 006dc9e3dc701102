package filterlist

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/AdguardTeam/urlfilter"
)

// Categories an Engine blocks by.
const (
	Ads           = "ads"
	Trackers      = "trackers"
	ChatWidgets   = "chat_widgets"
	Social        = "social"
	CookieBanners = "cookie_banners"
)

// Categories lists every category, in the order a request is matched: the
// most specific list first, so a chat widget's request counts as chat and
// a consent manager's script as a cookie banner, not as a tracker.
func Categories() []string { return []string{ChatWidgets, CookieBanners, Social, Trackers, Ads} }

// maxListBytes bounds one list file, unpacked.
const maxListBytes = 32 << 20

//go:embed lists/*.gz lists/*.txt
var shipped embed.FS

// shippedFiles are the lists of each category shipped with snapq.
var shippedFiles = map[string]string{
	Ads:           "lists/easylist.txt.gz",
	Trackers:      "lists/easyprivacy.txt.gz",
	ChatWidgets:   "lists/chat.txt",
	Social:        "lists/adguard-social.txt.gz",
	CookieBanners: "lists/adguard-cookies.txt.gz",
}

// Engine matches requests and pages against the lists of each category.
// One network engine holds every category's rules (list id = the
// category's index in Categories + 1), so a request is looked up once.
type Engine struct {
	network *urlfilter.NetworkEngine
	cats    map[string]*category
}

// category is one category's element-hiding rules and its rule count.
type category struct {
	cosmetic *cosmetic
	rules    int
}

// Load builds an Engine. files maps a category to the files of its lists
// (plain or .gz); a category it does not name loads the lists shipped with
// snapq. A file that cannot be read, or is over 32 MiB, is an error.
func Load(files map[string][]string) (*Engine, error) {
	e := &Engine{cats: map[string]*category{}}
	var lists []urlfilter.RuleList
	for i, c := range Categories() {
		text, err := categoryText(files, c)
		if err != nil {
			return nil, err
		}
		list := &urlfilter.StringRuleList{ID: i + 1, RulesText: text, IgnoreCosmetic: true}
		lists = append(lists, list)
		e.cats[c] = &category{cosmetic: parseCosmetic(text, i+1), rules: countNetwork(list)}
	}
	storage, err := urlfilter.NewRuleStorage(lists)
	if err != nil {
		return nil, fmt.Errorf("filter lists: %w", err)
	}
	e.network = urlfilter.NewNetworkEngine(storage)
	return e, nil
}

// categoryText is the text of category c's lists: files[c], else the
// lists shipped with snapq.
func categoryText(files map[string][]string, c string) (string, error) {
	fs, ok := files[c]
	if !ok {
		return readList(shipped, shippedFiles[c], shippedFiles[c])
	}
	var texts []string
	for _, f := range fs {
		t, err := readList(os.DirFS("/"), strings.TrimPrefix(path.Clean(f), "/"), f)
		if err != nil {
			return "", err
		}
		texts = append(texts, t)
	}
	return strings.Join(texts, "\n"), nil
}

// countNetwork is how many network rules list holds.
func countNetwork(list urlfilter.RuleList) int {
	n := 0
	sc := list.NewScanner()
	for sc.Scan() {
		if r, _ := sc.Rule(); isNetwork(r) {
			n++
		}
	}
	return n
}

// readList reads one list file, unzipping a .gz one, at most maxListBytes.
func readList(fsys fs.FS, name, shown string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", fmt.Errorf("filter list %s: %w", shown, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", fmt.Errorf("filter list %s: %w", shown, err)
		}
		r = zr
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, maxListBytes+1))
	if err != nil {
		return "", fmt.Errorf("filter list %s: %w", shown, err)
	}
	if n > maxListBytes {
		return "", fmt.Errorf("filter list %s: over %d MiB", shown, maxListBytes>>20)
	}
	return buf.String(), nil
}

// Rules is how many network and element-hiding rules category c loaded.
func (e *Engine) Rules(c string) (network, hiding int) {
	cat, ok := e.cats[c]
	if !ok {
		return 0, 0
	}
	return cat.rules, cat.cosmetic.size()
}

// Match says which of cats (in the order of Categories) blocks a request
// for rawURL of resourceType (a CDP resource type: Document, Script, …)
// made by a page at pageURL; "" when none does. An exception rule (@@) of
// a category's lists lets the request through that category.
func (e *Engine) Match(rawURL, pageURL, resourceType string, mainFrame bool, cats []string) string {
	if len(cats) == 0 || !(strings.HasPrefix(rawURL, "http:") || strings.HasPrefix(rawURL, "https:") ||
		strings.HasPrefix(rawURL, "ws:") || strings.HasPrefix(rawURL, "wss:")) {
		return ""
	}
	req := urlfilter.NewRequest(rawURL, pageURL, requestType(resourceType, mainFrame))
	all := Categories()
	best, important, allowed := len(all), false, false
	for _, r := range e.network.MatchAll(req) {
		i := r.GetFilterListID() - 1
		if i < 0 || i >= len(all) || !contains(cats, all[i]) {
			continue
		}
		switch {
		case r.Whitelist:
			allowed = true
		case r.IsOptionEnabled(urlfilter.OptionImportant):
			important = true
			best = min(best, i)
		default:
			best = min(best, i)
		}
	}
	if best == len(all) || (allowed && !important) {
		return ""
	}
	return all[best]
}

// requestType maps a CDP resource type to urlfilter's.
func requestType(t string, mainFrame bool) urlfilter.RequestType {
	switch t {
	case "Document":
		if mainFrame {
			return urlfilter.TypeDocument
		}
		return urlfilter.TypeSubdocument
	case "Script":
		return urlfilter.TypeScript
	case "Stylesheet":
		return urlfilter.TypeStylesheet
	case "Image":
		return urlfilter.TypeImage
	case "XHR", "Fetch", "EventSource", "Ping":
		return urlfilter.TypeXmlhttprequest
	case "Media":
		return urlfilter.TypeMedia
	case "Font":
		return urlfilter.TypeFont
	case "WebSocket":
		return urlfilter.TypeWebsocket
	default:
		return urlfilter.TypeOther
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func isNetwork(r urlfilter.Rule) bool {
	_, ok := r.(*urlfilter.NetworkRule)
	return ok
}
