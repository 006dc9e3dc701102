package discover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// FetchPage GETs one page through the Reader's client (the egress guard's) for a suite's
// discovery by crawl (CrawlLinks): it does not follow redirects (the caller decides
// which to follow, each a new request so each destination is checked again) and reads at
// most maxBytes of the body (a longer page is cut there). The caller bounds the time.
func (r *Reader) FetchPage(ctx context.Context, rawURL string, maxBytes int64) (status int, location, contentType string, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, "", "", nil, &Error{Problem: ProblemUnreachable, URL: rawURL, Reason: "not a URL: " + err.Error(), Err: err}
	}
	req.Header.Set("User-Agent", "snapq-discover/1")
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	resp, err := r.Client.Do(req)
	if err != nil {
		reason := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			reason = ue.Err.Error()
		}
		return 0, "", "", nil, &Error{Problem: ProblemUnreachable, URL: rawURL, Reason: reason, Err: err}
	}
	defer resp.Body.Close()
	contentType = resp.Header.Get("Content-Type")
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, resp.Header.Get("Location"), contentType, nil, nil
	}
	if resp.StatusCode != http.StatusOK || (contentType != "" && !strings.Contains(strings.ToLower(contentType), "html")) {
		return resp.StatusCode, "", contentType, nil, nil // not read: no page to take links from
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBytes))
	if err != nil {
		return 0, "", "", nil, &Error{Problem: ProblemUnreachable, URL: rawURL, Reason: fmt.Sprintf("reading it failed: %v", err), Err: err}
	}
	return resp.StatusCode, "", contentType, body, nil
}
