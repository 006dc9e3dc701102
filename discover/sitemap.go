package discover

import (
	"bufio"
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

// Reader reads the page list of a site from its sitemaps: a urlset, a sitemap
// index (followed to a bounded depth), either of them gzip-compressed, or a robots.txt whose
// "Sitemap:" lines name them. Every fetch goes through the http.Client the caller gives —
// in snapq the egress guard's (egress.Proxy.HTTPClient), so a sitemap is read under the same
// destination policy as a page; this package never dials anything itself.
//
// Reading is bounded: the number of files, bytes per file (counted after gzip: the
// inflation cap) and in all, index depth, URLs looked at, and time (Limits). Each file is
// parsed as a stream while it arrives, so reading stops as soon as the caller has its
// pages or a bound is reached: a gzip bomb costs its first 10 MiB, not its whole size. A malformed file is an *Error of ProblemMalformed naming
// the file and what is wrong with it.

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
	MaxFileBytes int64         // bytes of one file after gzip: the inflation cap (default 10 MiB)
	MaxBytes     int64         // bytes of all files after gzip (default 100 MiB)
	MaxDepth     int           // index levels below the first file (default 2)
	MaxEntries   int           // <loc> entries looked at in all (default 200,000)
	Timeout      time.Duration // the whole read (default 30 s)
}

// Default limits.
const (
	DefaultMaxFiles     = 50
	DefaultMaxFileBytes = 10 << 20
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
	body, target, err := w.open(ctx, u)
	if err != nil {
		return err
	}
	defer body.Close()
	src, err := w.inflate(body, target)
	if err != nil {
		return err
	}
	if isRobots(u) {
		return w.robots(ctx, src, u, depth)
	}
	return w.stream(ctx, src, u, depth)
}

// robots reads a robots.txt (at most maxRobotsBytes) and walks its Sitemap: lines.
func (w *walk) robots(ctx context.Context, src *capped, u string, depth int) error {
	src.limit = min(src.limit, maxRobotsBytes)
	data, err := io.ReadAll(src)
	if err != nil {
		return src.problem(err)
	}
	locs := robotsSitemaps(data)
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

// open GETs u through the client, following redirects itself, and returns the body of
// the 200 answer and the URL that gave it.
func (w *walk) open(ctx context.Context, u string) (io.ReadCloser, string, error) {
	target := u
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, "", &Error{Problem: ProblemMalformed, URL: u, Reason: "not a URL: " + err.Error(), Err: err}
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
			return nil, "", &Error{Problem: ProblemUnreachable, URL: target, Reason: reason, Err: err}
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			resp.Body.Close()
			if hop >= maxRedirects {
				return nil, "", &Error{Problem: ProblemUnreachable, URL: u, Reason: fmt.Sprintf("more than %d redirects", maxRedirects)}
			}
			target = resolve(target, resp.Header.Get("Location"))
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, "", &Error{Problem: ProblemUnreachable, URL: target, Reason: fmt.Sprintf("answered HTTP %d", resp.StatusCode)}
		}
		return resp.Body, target, nil
	}
}

// inflate returns body as a stream, gunzipped when it starts with gzip's magic bytes (a
// .xml.gz file, whatever its type), that fails with sitemap_too_large past the file's
// byte limit (counted after gzip: the inflation cap) or what is left of the read's.
func (w *walk) inflate(body io.Reader, u string) (*capped, error) {
	br := bufio.NewReader(body)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &Error{Problem: ProblemMalformed, URL: u, Reason: "bad gzip: " + err.Error(), Err: err}
		}
		src = zr
	}
	return &capped{r: src, w: w, url: u, limit: min(w.lim.MaxFileBytes, w.lim.MaxBytes-w.bytes)}, nil
}

// maxRobotsBytes bounds a robots.txt (Google reads the first 500 KiB).
const maxRobotsBytes = 512 << 10

// errTooLarge is a capped stream past its limit.
var errTooLarge = errors.New("past the byte limit")

// capped counts the (inflated) bytes read of one file into the walk's total and fails
// with errTooLarge past limit.
type capped struct {
	r     io.Reader
	w     *walk
	url   string
	n     int64
	limit int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.limit-c.n {
		p = p[:c.limit-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.w.bytes += int64(n)
	return n, err
}

// problem turns an error met while reading the stream into the *Error to report.
func (c *capped) problem(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, errTooLarge):
		return &Error{Problem: ProblemTooLarge, URL: c.url,
			Reason: fmt.Sprintf("past the byte limit (%d bytes per file after gzip, %d in all)", c.w.lim.MaxFileBytes, c.w.lim.MaxBytes)}
	case errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Problem: ProblemMalformed, URL: c.url, Reason: "reading it failed: " + err.Error(), Err: err}
	}
	return &Error{Problem: ProblemUnreachable, URL: c.url, Reason: "reading it failed: " + err.Error(), Err: err}
}

// stream parses a <urlset> or a <sitemapindex> as it arrives, handing each <loc> on as
// soon as it is read (an index's to w.file, depth first), so reading stops at the entry
// cap or when keep says stop, whatever the file's size. ctx is checked every 256 tokens.
func (w *walk) stream(ctx context.Context, src *capped, u string, depth int) error {
	p := &locParser{dec: xml.NewDecoder(src)}
	p.dec.Strict = true
	for tokens := 0; ; tokens++ {
		if tokens%256 == 0 && ctx.Err() != nil {
			return &Error{Problem: ProblemUnreachable, URL: u, Reason: "reading the sitemaps took longer than " + w.lim.Timeout.String(), Err: ctx.Err()}
		}
		loc, done, err := p.next()
		if err != nil {
			if errors.Is(err, errTooLarge) || errors.Is(err, gzip.ErrChecksum) {
				return src.problem(err)
			}
			return &Error{Problem: ProblemMalformed, URL: u, Reason: err.Error(), Err: err}
		}
		if p.kind == "sitemapindex" && depth >= w.lim.MaxDepth {
			return &Error{Problem: ProblemTooLarge, URL: u, Reason: fmt.Sprintf("sitemap indexes nest deeper than %d levels", w.lim.MaxDepth)}
		}
		if done {
			return nil
		}
		if loc == "" {
			continue
		}
		if err := w.entry(ctx, p.kind, u, loc, depth); err != nil {
			return err
		}
	}
}

// entry is one <loc> of a file: a page for keep, or a sitemap of an index to walk.
func (w *walk) entry(ctx context.Context, kind, u, loc string, depth int) error {
	if w.entries++; w.entries > w.lim.MaxEntries {
		return &Error{Problem: ProblemTooLarge, URL: u, Reason: fmt.Sprintf("more than %d entries in all", w.lim.MaxEntries)}
	}
	if kind == "sitemapindex" {
		return w.file(ctx, resolve(u, loc), depth+1)
	}
	if w.keep(resolve(u, loc)) {
		return errStop
	}
	return nil
}

// maxLocBytes bounds one <loc>'s text; a longer one is not a URL anyone loads.
const maxLocBytes = 64 << 10

// locParser pulls the <loc> values of a <urlset> or <sitemapindex> out of a decoder.
type locParser struct {
	dec   *xml.Decoder
	kind  string // the root element, once seen
	depth int
	inLoc bool
	loc   strings.Builder
}

// next reads one token: loc is a complete <loc> value ("" otherwise); done at the end of
// the document.
func (p *locParser) next() (loc string, done bool, err error) {
	tok, err := p.dec.Token()
	if err == io.EOF {
		if p.kind == "" {
			return "", false, errors.New("empty document: no <urlset> or <sitemapindex>")
		}
		return "", true, nil
	}
	if err != nil {
		if errors.Is(err, errTooLarge) || errors.Is(err, gzip.ErrChecksum) {
			return "", false, err
		}
		return "", false, fmt.Errorf("not well-formed XML: %w", err)
	}
	switch t := tok.(type) {
	case xml.StartElement:
		p.depth++
		switch {
		case p.depth == 1:
			if t.Name.Local != "urlset" && t.Name.Local != "sitemapindex" {
				return "", false, fmt.Errorf("the root element is <%s>, not <urlset> or <sitemapindex>", t.Name.Local)
			}
			p.kind = t.Name.Local
		case p.depth == 3 && t.Name.Local == "loc":
			p.inLoc = true
			p.loc.Reset()
		}
	case xml.CharData:
		if p.inLoc && p.loc.Len()+len(t) <= maxLocBytes {
			p.loc.Write(t)
		}
	case xml.EndElement:
		if p.inLoc && t.Name.Local == "loc" {
			p.inLoc = false
			loc = strings.TrimSpace(p.loc.String())
		}
		p.depth--
	}
	return loc, false, nil
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
