package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
)

// One job asks for every output; each is stored as its own artifact with its content type,
// and captured HTML is served as a download.
func TestOutputsEndToEnd(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
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

	t.Run("pdf target and partial page", func(t *testing.T) { pdfTargetAndPartial(t, s, site) })
}

// pdfTargetAndPartial submits a PDF target asking for markdown, and a page that never
// finishes loading with a 2 s budget: the PDF is stored as served with its text, the page is
// captured as it was, marked partial.
func pdfTargetAndPartial(t *testing.T, s *stack, site string) {
	var b batchResp
	code := s.do("POST", "/v1/batches", map[string]any{
		"targets": []map[string]any{
			{"url": site + "/pdf/attachment", "name": "report", "options": map[string]any{"outputs": []string{"markdown"}}},
			{"url": site + "/never", "name": "never", "options": map[string]any{"timeout_ms": 2000}},
		},
	}, &b)
	if code != http.StatusAccepted || len(b.Jobs) != 2 {
		t.Fatalf("submit: status %d, %+v", code, b)
	}
	done := s.waitBatch(b.ID, 2*time.Minute)
	if done.Counts["succeeded"] != 2 {
		t.Fatalf("counts %v, want 2 succeeded", done.Counts)
	}
	type result struct {
		HTTPStatus     int    `json:"http_status"`
		Partial        bool   `json:"partial"`
		ContentType    string `json:"content_type"`
		PDFPages       int    `json:"pdf_pages"`
		MarkdownChars  int    `json:"markdown_chars"`
		SkippedOutputs []struct {
			Output string `json:"output"`
		} `json:"skipped_outputs"`
	}
	var pdfJob, pageJob struct {
		jobResp
		Result result `json:"result"`
	}
	s.do("GET", "/v1/jobs/"+b.Jobs[0].ID, nil, &pdfJob)
	s.do("GET", "/v1/jobs/"+b.Jobs[1].ID, nil, &pageJob)

	r := pdfJob.Result
	if r.HTTPStatus != 200 || r.ContentType != "application/pdf" || r.PDFPages != 2 || r.Partial || len(r.SkippedOutputs) != 0 {
		t.Errorf("pdf job result %+v", r)
	}
	wantMD := "<!-- page 1 -->\n\nFixture PDF page one\nSecond line of page one\n\n\n<!-- page 2 -->\n\nPage two says goodbye\n"
	kinds := map[string]bool{}
	for _, a := range pdfJob.Artifacts {
		kinds[a.Kind] = true
		data, hdr := downloadWithHeaders(t, a.URL)
		switch a.Kind {
		case "pdf":
			if !bytes.Equal(data, fixtures.PDF(fixtures.PDFPages...)) || a.Name != "report.pdf" || a.ContentType != "application/pdf" {
				t.Errorf("pdf artifact %s (%s): %d bytes, not the served PDF", a.Name, a.ContentType, len(data))
			}
			if cd := hdr.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
				t.Errorf("the target's PDF is served with Content-Disposition %q, want an attachment", cd)
			}
		case "markdown":
			if string(data) != wantMD || len([]rune(wantMD)) != r.MarkdownChars {
				t.Errorf("markdown artifact (result says %d characters):\n%s", r.MarkdownChars, data)
			}
		default:
			t.Errorf("unexpected artifact %s of kind %s", a.Name, a.Kind)
		}
	}
	if !kinds["pdf"] || !kinds["markdown"] {
		t.Errorf("artifact kinds %v, want pdf and markdown", kinds)
	}

	p := pageJob.Result
	if !p.Partial || p.HTTPStatus != 200 || len(pageJob.Artifacts) != 1 || pageJob.Artifacts[0].Kind != "screenshot" {
		t.Errorf("never-loading page: partial %v status %d artifacts %+v", p.Partial, p.HTTPStatus, pageJob.Artifacts)
	}
}

// downloadWithHeaders follows the API's 302 to the presigned URL and returns the bytes and
// the storage's response headers.
func downloadWithHeaders(t *testing.T, apiURL string) ([]byte, http.Header) {
	t.Helper()
	u, err := url.Parse(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	noFollow := contractClient(t, u.Host)
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
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
