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
	Ads         = "ads"
	Trackers    = "trackers"
	ChatWidgets = "chat_widgets"
)

// Categories lists every category, in the order a request is matched: the
// most specific list first, so a chat widget's request counts as chat.
func Categories() []string { return []string{ChatWidgets, Trackers, Ads} }

// maxListBytes bounds one list file, unpacked.
const maxListBytes = 32 << 20

//go:embed lists/*.gz lists/*.txt
var shipped embed.FS

// shippedFiles are the lists of each category shipped with snapq.
var shippedFiles = map[string]string{
	Ads:         "lists/easylist.txt.gz",
	Trackers:    "lists/easyprivacy.txt.gz",
	ChatWidgets: "lists/chat.txt",
}

// Engine matches requests and pages against the lists of each category.
type Engine struct {
	cats map[string]*category
}

// category is one category's compiled rules.
type category struct {
	network  *urlfilter.NetworkEngine
	cosmetic *cosmetic
	rules    int
}

// Load builds an Engine. files maps a category to the files of its lists
// (plain or .gz); a category it does not name loads the lists shipped with
// snapq. A file that cannot be read, or is over 32 MiB, is an error.
func Load(files map[string][]string) (*Engine, error) {
	e := &Engine{cats: map[string]*category{}}
	for i, c := range Categories() {
		var texts []string
		if fs, ok := files[c]; ok {
			for _, f := range fs {
				t, err := readList(os.DirFS("/"), strings.TrimPrefix(path.Clean(f), "/"), f)
				if err != nil {
					return nil, err
				}
				texts = append(texts, t)
			}
		} else {
			t, err := readList(shipped, shippedFiles[c], shippedFiles[c])
			if err != nil {
				return nil, err
			}
			texts = append(texts, t)
		}
		cat, err := compile(i+1, strings.Join(texts, "\n"))
		if err != nil {
			return nil, fmt.Errorf("filter lists of %s: %w", c, err)
		}
		e.cats[c] = cat
	}
	return e, nil
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

// compile builds a category of the rules in text (list id id).
func compile(id int, text string) (*category, error) {
	storage, err := urlfilter.NewRuleStorage([]urlfilter.RuleList{
		&urlfilter.StringRuleList{ID: id, RulesText: text, IgnoreCosmetic: true},
	})
	if err != nil {
		return nil, err
	}
	net := urlfilter.NewNetworkEngine(storage)
	return &category{network: net, cosmetic: parseCosmetic(text, id), rules: net.RulesCount}, nil
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
	for _, c := range Categories() {
		if !contains(cats, c) {
			continue
		}
		cat := e.cats[c]
		if cat == nil {
			continue
		}
		if r, ok := cat.network.Match(req); ok && r != nil && !r.Whitelist {
			return c
		}
	}
	return ""
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
