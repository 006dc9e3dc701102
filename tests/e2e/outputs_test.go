package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// One job asks for every output; each is stored as its own artifact with its content type,
// and captured HTML is served as a download.
func TestOutputsEndToEnd(t *testing.T) {
	s := startStack(t, 7)
	site := fixtureSite(t)

	var bad errResp
	code := s.do("POST", "/v1/batches", map[string]any{"urls": []string{site + "/"},
		"options": map[string]any{"outputs": []string{"html", "markdown"}, "markdown_max_chars": 10}}, &bad)
	if code != http.StatusBadRequest || bad.Error.Field != "options.markdown_max_chars" {
		t.Fatalf("markdown_max_chars 10: status %d, error %+v", code, bad.Error)
	}

	var b batchResp
	code = s.do("POST", "/v1/batches", map[string]any{
		"targets": []map[string]any{{"url": site + "/", "name": "home"}},
		"options": map[string]any{
			"outputs": []string{"screenshot", "html", "text", "links", "metadata", "pdf", "markdown"},
			"pdf":     map[string]any{"paper": "letter", "margin_mm": 5},
		},
	}, &b)
	if code != http.StatusAccepted || len(b.Jobs) != 1 {
		t.Fatalf("submit: status %d, %+v", code, b)
	}
	done := s.waitBatch(b.ID, 2*time.Minute)
	if done.Counts["succeeded"] != 1 {
		t.Fatalf("counts %v, want 1 succeeded", done.Counts)
	}
	var job struct {
		jobResp
		Result struct {
			TextChars         int  `json:"text_chars"`
			MarkdownChars     int  `json:"markdown_chars"`
			MarkdownTruncated bool `json:"markdown_truncated"`
		} `json:"result"`
	}
	if code := s.do("GET", "/v1/jobs/"+b.Jobs[0].ID, nil, &job); code != http.StatusOK {
		t.Fatalf("GET job: %d", code)
	}
	if job.Result.TextChars == 0 {
		t.Errorf("result.text_chars = 0, want the text output's length")
	}
	if job.Result.MarkdownChars == 0 || job.Result.MarkdownTruncated {
		t.Errorf("result.markdown_chars = %d, markdown_truncated = %v", job.Result.MarkdownChars, job.Result.MarkdownTruncated)
	}

	wantType := map[string]string{
		"screenshot": "image/png", "html": "text/html; charset=utf-8", "text": "text/plain; charset=utf-8",
		"links": "application/json", "metadata": "application/json", "pdf": "application/pdf",
		"markdown": "text/markdown; charset=utf-8",
	}
	wantName := map[string]string{
		"html": "home.html", "text": "home.txt", "links": "home-links.json", "metadata": "home-metadata.json", "pdf": "home.pdf",
		"markdown": "home.md",
	}
	seen := map[string]bool{}
	for _, a := range job.Artifacts {
		seen[a.Kind] = true
		if wantType[a.Kind] == "" {
			t.Errorf("unexpected artifact kind %q (%s)", a.Kind, a.Name)
			continue
		}
		if n := wantName[a.Kind]; n != "" && a.Name != n {
			t.Errorf("%s artifact named %q, want %q", a.Kind, a.Name, n)
		}
		if a.ContentType != wantType[a.Kind] {
			t.Errorf("%s: API content type %q, want %q", a.Name, a.ContentType, wantType[a.Kind])
		}
		data, hdr := downloadWithHeaders(t, a.URL)
		sum := sha256.Sum256(data)
		if int64(len(data)) != a.Bytes || hex.EncodeToString(sum[:]) != a.SHA256 {
			t.Errorf("%s: downloaded %d bytes sha256 %x, API says %d bytes %s", a.Name, len(data), sum, a.Bytes, a.SHA256)
		}
		if ct := hdr.Get("Content-Type"); ct != wantType[a.Kind] {
			t.Errorf("%s: served as %q, want %q", a.Name, ct, wantType[a.Kind])
		}
		cd := hdr.Get("Content-Disposition")
		switch a.Kind {
		case "html":
			// MinIO drops the quotes around the file name.
			if !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, "filename=") || !strings.Contains(cd, "home.html") {
				t.Errorf("html served with Content-Disposition %q, want an attachment", cd)
			}
			if !strings.HasPrefix(string(data), "<!doctype html>") || strings.Contains(strings.ToLower(string(data)), "<script>") {
				t.Errorf("html artifact: %.200q", data)
			}
		case "pdf":
			if !strings.HasPrefix(string(data), "%PDF-") {
				t.Errorf("pdf artifact starts %.8q", data)
			}
		case "markdown":
			if n := len([]rune(string(data))); n != job.Result.MarkdownChars || strings.Contains(string(data), "<script") {
				t.Errorf("markdown artifact: %d characters (result says %d): %.200q", n, job.Result.MarkdownChars, data)
			}
		case "links", "metadata":
			if !json.Valid(data) {
				t.Errorf("%s is not JSON: %.200q", a.Name, data)
			}
		}
	}
	if len(seen) != 7 {
		t.Errorf("artifact kinds %v, want all 7 outputs", seen)
	}
}

// downloadWithHeaders follows the API's 302 to the presigned URL and returns the bytes and
// the storage's response headers.
func downloadWithHeaders(t *testing.T, apiURL string) ([]byte, http.Header) {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.Contains(loc, "X-Amz-Signature=") {
		t.Fatalf("GET %s: status %d, Location %q; want 302 to a presigned URL", apiURL, resp.StatusCode, loc)
	}
	resp, err = http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET presigned: status %d, %v", resp.StatusCode, err)
	}
	return data, resp.Header
}
