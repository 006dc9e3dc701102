// Package sitemap reads the page list of a site from its sitemaps: a urlset, a sitemap
// index (followed to a bounded depth), either of them gzip-compressed, or a robots.txt whose
// "Sitemap:" lines name them. Every fetch goes through the http.Client the caller gives —
// in snapq the egress guard's (egress.Proxy.HTTPClient), so a sitemap is read under the same
// destination policy as a page; this package never dials anything itself.
//
// Reading is bounded: the number of files, bytes per file and in all, index depth, URLs
// looked at, and time (Limits). A malformed file is an *Error of ProblemMalformed naming
// the file and what is wrong with it.
package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Problems an *Error reports; stable strings, used as API error codes.
const (
	ProblemMalformed   = "invalid_sitemap"     // not a sitemap, urlset, index or robots.txt with Sitemap lines
	ProblemUnreachable = "sitemap_unreachable" // refused by the guard, not resolved, not 200, timed out
	ProblemTooLarge    = "sitemap_too_large"   // past a byte, file, depth or entry bound
)

// Error is a sitemap that could not be read.
type Error struct {
	Problem string // Problem* constant
	URL     string // the file at fault
	Reason  string
	Err     error
}

func (e *Error) Error() string { return e.URL + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// Limits bound one read. Zero fields take the defaults.
type Limits struct {
	MaxFiles     int           // sitemap files fetched (default 50)
	MaxFileBytes int64         // bytes of one file after gzip (default 50 MiB, the protocol's own cap)
	MaxBytes     int64         // bytes of all files after gzip (default 100 MiB)
	MaxDepth     int           // index levels below the first file (default 2)
	MaxEntries   int           // <loc> entries looked at in all (default 200,000)
	Timeout      time.Duration // the whole read (default 30 s)
}

// Default limits.
const (
	DefaultMaxFiles     = 50
	DefaultMaxFileBytes = 50 << 20
	DefaultMaxBytes     = 100 << 20
	DefaultMaxDepth     = 2
	DefaultMaxEntries   = 200_000
	DefaultTimeout      = 30 * time.Second
	maxRedirects        = 5
)

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// Reader reads sitemaps through Client.
type Reader struct {
	// Client does every fetch; it must not follow redirects by itself (Reader follows at
	// most 5, each a new request through Client, so each destination is checked again).
	Client *http.Client
	Limits Limits
}

// Read walks the sitemap at rawURL and calls keep with each page URL in document order,
// depth first through indexes, until keep returns stop or everything is read. keep decides
// what counts (filters, de-duplication); Read only bounds the work.
func (r *Reader) Read(ctx context.Context, rawURL string, keep func(pageURL string) (stop bool)) error {
	lim := r.Limits.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	w := &walk{r: r, lim: lim, keep: keep, seen: map[string]bool{}}
	err := w.file(ctx, rawURL, 0)
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

var errStop = errors.New("enough URLs")

type walk struct {
	r       *Reader
	lim     Limits
	keep    func(string) bool
	seen    map[string]bool // sitemap files already read (an index may repeat one)
	files   int
	bytes   int64
	entries int
}

func (w *walk) file(ctx context.Context, u string, depth int) error {
	if w.seen[u] {
		return nil
	}
	w.seen[u] = true
	if w.files++; w.files > w.lim.MaxFiles {
		return &Error{Problem: ProblemTooLarge, URL: u, Reason: fmt.Sprintf("more than %d sitemap files", w.lim.MaxFiles)}
	}
	body, err := w.fetch(ctx, u)
	if err != nil {
		return err
	}
	if isRobots(u) {
		locs := robotsSitemaps(body)
		if len(locs) == 0 {
			return &Error{Problem: ProblemMalformed, URL: u, Reason: "robots.txt has no Sitemap: lines"}
		}
		for _, loc := range locs {
			if err := w.file(ctx, resolve(u, loc), depth); err != nil {
				return err
			}
		}
		return nil
	}
	kind, locs, err := parse(body)
	if err != nil {
		return &Error{Problem: ProblemMalformed, URL: u, Reason: err.Error(), Err: err}
	}
	if kind == "sitemapindex" && depth >= w.lim.MaxDepth {
		return &Error{Problem: ProblemTooLarge, URL: u, Reason: fmt.Sprintf("sitemap indexes nest deeper than %d levels", w.lim.MaxDepth)}
	}
	for _, loc := range locs {
		if w.entries++; w.entries > w.lim.MaxEntries {
			return &Error{Problem: ProblemTooLarge, URL: u, Reason: fmt.Sprintf("more than %d entries in all", w.lim.MaxEntries)}
		}
		if kind == "sitemapindex" {
			if err := w.file(ctx, resolve(u, loc), depth+1); err != nil {
				return err
			}
			continue
		}
		if w.keep(resolve(u, loc)) {
			return errStop
		}
	}
	return nil
}

// fetch GETs u through the client, following redirects itself, and returns the body,
// gunzipped when it starts with gzip's magic bytes (a .xml.gz file, whatever its type).
func (w *walk) fetch(ctx context.Context, u string) ([]byte, error) {
	target := u
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, &Error{Problem: ProblemMalformed, URL: u, Reason: "not a URL: " + err.Error(), Err: err}
		}
		req.Header.Set("User-Agent", "snapq-sitemap/1")
		resp, err := w.r.Client.Do(req)
		if err != nil {
			reason := err.Error()
			var ue *url.Error
			if errors.As(err, &ue) {
				reason = ue.Err.Error()
			}
			if ctx.Err() != nil {
				reason = "reading the sitemaps took longer than " + w.lim.Timeout.String()
			}
			return nil, &Error{Problem: ProblemUnreachable, URL: target, Reason: reason, Err: err}
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			resp.Body.Close()
			if hop >= maxRedirects {
				return nil, &Error{Problem: ProblemUnreachable, URL: u, Reason: fmt.Sprintf("more than %d redirects", maxRedirects)}
			}
			target = resolve(target, resp.Header.Get("Location"))
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, &Error{Problem: ProblemUnreachable, URL: target, Reason: fmt.Sprintf("answered HTTP %d", resp.StatusCode)}
		}
		return w.read(resp.Body, target)
	}
}

func (w *walk) read(body io.Reader, u string) ([]byte, error) {
	br := bufio.NewReader(body)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &Error{Problem: ProblemMalformed, URL: u, Reason: "bad gzip: " + err.Error(), Err: err}
		}
		defer zr.Close()
		src = zr
	}
	limit := min(w.lim.MaxFileBytes, w.lim.MaxBytes-w.bytes)
	data, err := io.ReadAll(io.LimitReader(src, limit+1))
	w.bytes += int64(len(data))
	if err != nil {
		problem := ProblemUnreachable
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
			problem = ProblemMalformed
		}
		return nil, &Error{Problem: problem, URL: u, Reason: "reading it failed: " + err.Error(), Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &Error{Problem: ProblemTooLarge, URL: u,
			Reason: fmt.Sprintf("past the byte limit (%d bytes per file, %d in all)", w.lim.MaxFileBytes, w.lim.MaxBytes)}
	}
	return data, nil
}

// parse reads a <urlset> or a <sitemapindex> and returns its <loc> values.
func parse(data []byte) (kind string, locs []string, err error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	depth := 0
	inLoc := false
	var loc strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", nil, fmt.Errorf("not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1:
				if t.Name.Local != "urlset" && t.Name.Local != "sitemapindex" {
					return "", nil, fmt.Errorf("the root element is <%s>, not <urlset> or <sitemapindex>", t.Name.Local)
				}
				kind = t.Name.Local
			case depth == 3 && t.Name.Local == "loc":
				inLoc = true
				loc.Reset()
			}
		case xml.CharData:
			if inLoc {
				loc.Write(t)
			}
		case xml.EndElement:
			if inLoc && t.Name.Local == "loc" {
				inLoc = false
				if s := strings.TrimSpace(loc.String()); s != "" {
					locs = append(locs, s)
				}
			}
			depth--
		}
	}
	if kind == "" {
		return "", nil, errors.New("empty document: no <urlset> or <sitemapindex>")
	}
	return kind, locs, nil
}

func isRobots(u string) bool {
	p, err := url.Parse(u)
	return err == nil && strings.EqualFold(p.Path, "/robots.txt")
}

// robotsSitemaps returns the values of robots.txt's "Sitemap:" lines (any case).
func robotsSitemaps(data []byte) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "sitemap") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// resolve makes ref absolute against base (sitemaps should hold absolute URLs; a relative
// one is read as a browser would).
func resolve(base, ref string) string {
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

// ProblemCode is the stable code of the problem (the API reports it as the error's code).
func (e *Error) ProblemCode() string { return e.Problem }
