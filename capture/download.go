package capture

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/proto"

	"github.com/snapq/snapq/capture/internal/runecap"
)

// A target whose main document Chromium would not render — a PDF, a Content-Disposition:
// attachment, a type it downloads — is taken instead of rendered. A launched Chromium
// downloads it into the tab's own directory (nativedl.go). With a remote browser it is taken
// at the response stage of the navigation (Fetch interception of Document responses): its
// headers are inspected, its body is read through Fetch.takeResponseBodyAsStream, and the
// request is then failed. Either way the bytes come over the browser context's own connection
// (and so through its egress proxy), never from a second fetch by the worker.

// FileDownload is the kind of the File holding a non-PDF download's body as served.
const FileDownload = "download"

// streamChunk is how much one IO.read asks for.
const streamChunk = 4 << 20

// pdfSignature starts every PDF file.
const pdfSignature = "%PDF-"

// documentPattern pauses every Document response (main frame and iframes) of a remote
// browser's tab so the main frame's can be inspected; the others are continued at once.
var documentPattern = &proto.FetchRequestPattern{
	URLPattern: "*", ResourceType: proto.NetworkResourceTypeDocument, RequestStage: proto.FetchRequestStageResponse,
}

// download is a main-frame response snapq took instead of letting Chromium render it.
type download struct {
	url         string
	status      int
	contentType string // the Content-Type header as served
	mime        string // its media type, lower case ("" when absent or unparsable)
	charset     string
	attachment  bool
	filename    string
	data        []byte
	tooLarge    bool  // Content-Length or the bytes read passed MaxPDFBytes
	err         error // reading the body failed
}

// isPDF reports a PDF by its declared type or, whatever the type, by its first bytes.
func (d *download) isPDF() bool {
	return d.mime == "application/pdf" || d.mime == "application/x-pdf" || bytes.HasPrefix(d.data, []byte(pdfSignature))
}

// takeDownload decides from a main-frame Document response's status and headers whether
// snapq takes it (a PDF, an attachment, or a type Chromium would download) and returns its
// description without the body, or nil to let Chromium render the response.
func takeDownload(status int, h http.Header) *download {
	if status >= 300 && status < 400 && h.Get("Location") != "" {
		return nil // a redirect hop
	}
	if h.Get(egressHeader) != "" {
		return nil // the guard answered (a refusal page): job.checkEgress (job.go) reports it
	}
	d := describeDownload(status, h)
	if !d.isPDF() && !d.attachment && chromiumRenders(d.mime) {
		return nil
	}
	return d
}

// describeDownload describes a response from its status and headers, without its body.
func describeDownload(status int, h http.Header) *download {
	d := &download{status: status, contentType: h.Get("Content-Type")}
	if mt, params, err := mime.ParseMediaType(d.contentType); err == nil {
		d.mime, d.charset = mt, strings.ToLower(params["charset"])
	} else if d.contentType != "" {
		d.mime = strings.ToLower(strings.TrimSpace(strings.Split(d.contentType, ";")[0]))
	}
	if disp, params, err := mime.ParseMediaType(h.Get("Content-Disposition")); err == nil && disp == "attachment" {
		d.attachment, d.filename = true, CapMessage(params["filename"]) // the server's text
	} else if strings.HasPrefix(strings.ToLower(strings.TrimSpace(h.Get("Content-Disposition"))), "attachment") {
		d.attachment = true
	}
	if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil && n > MaxPDFBytes {
		d.tooLarge = true
	}
	return d
}

// chromiumRenders reports the media types Chromium shows as a document rather than
// downloading (after Chromium's own list of supported non-image, image and text types).
func chromiumRenders(mt string) bool {
	switch {
	case mt == "": // no type: Chromium sniffs the body
		return true
	case strings.HasPrefix(mt, "text/"):
		return !downloadedTextTypes[mt]
	case mt == "application/json", strings.HasSuffix(mt, "+json"), mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/ecmascript", mt == "application/x-javascript",
		mt == "multipart/x-mixed-replace":
		return true
	case strings.HasPrefix(mt, "image/"):
		switch mt {
		case "image/png", "image/jpeg", "image/jpg", "image/pjpeg", "image/gif", "image/webp", "image/bmp", "image/x-icon",
			"image/vnd.microsoft.icon", "image/svg+xml", "image/avif", "image/apng":
			return true
		}
		return false
	case strings.HasPrefix(mt, "video/"), strings.HasPrefix(mt, "audio/"):
		return true // the media player
	}
	return false
}

// downloadedTextTypes are text types Chromium downloads instead of showing.
var downloadedTextTypes = map[string]bool{
	"text/calendar": true, "text/x-calendar": true, "text/x-vcalendar": true, "text/vcalendar": true,
	"text/vcard": true, "text/x-vcard": true, "text/directory": true, "text/ldif": true, "text/qif": true,
	"text/x-qif": true, "text/x-csv": true, "text/x-vcf": true, "text/rtf": true, "text/comma-separated-values": true,
	"text/csv": true, "text/tab-separated-values": true, "text/tsv": true, "text/ofx": true,
}

// headerOfNetwork turns the Network domain's header map into an http.Header.
func headerOfNetwork(h proto.NetworkHeaders) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		out.Add(k, v.Str())
	}
	return out
}

// headerOf turns Fetch's header list into an http.Header.
func headerOf(entries []*proto.FetchHeaderEntry) http.Header {
	h := http.Header{}
	for _, e := range entries {
		if e != nil {
			h.Add(e.Name, e.Value)
		}
	}
	return h
}

// paused handles one Fetch.requestPaused event off the event loop: a request-stage pause is
// decided by the job's blocking (filter.go); a response-stage pause is a Document response.
func (t *tab) paused(e proto.FetchRequestPaused) {
	if e.ResponseStatusCode == nil && e.ResponseErrorReason == "" {
		t.requestPaused(e) // filter.go
		return
	}
	t.mu.Lock()
	ctx := t.dlCtx
	t.mu.Unlock()
	if ctx == nil || e.ResourceType != proto.NetworkResourceTypeDocument || e.FrameID != t.page.FrameID ||
		e.ResponseErrorReason != "" || e.ResponseStatusCode == nil {
		t.continuePaused(e.RequestID)
		return
	}
	d := takeDownload(*e.ResponseStatusCode, headerOf(e.ResponseHeaders))
	if d == nil {
		t.continuePaused(e.RequestID)
		return
	}
	if e.Request != nil {
		d.url = e.Request.URL
	}
	t.readDownload(ctx, e.RequestID, d)
	t.mu.Lock()
	t.st.download = d
	t.mu.Unlock()
	// Recorded before the request fails, so the navigation's caller finds it.
	fctx, cancel := context.WithTimeout(t.ctx, cleanTimeout)
	defer cancel()
	if err := (proto.FetchFailRequest{RequestID: e.RequestID, ErrorReason: proto.NetworkErrorReasonAborted}).Call(t.page.Context(fctx)); err != nil {
		t.inst.log.Debug("fail a taken download", "err", err)
	}
}

// readDownload reads the paused response's body into d, at most MaxPDFBytes (a declared
// oversize reads only the first bytes, enough to tell a PDF; a declared PDF none).
func (t *tab) readDownload(ctx context.Context, id proto.FetchRequestID, d *download) {
	if d.tooLarge && (d.mime == "application/pdf" || d.mime == "application/x-pdf") {
		return // refused from Content-Length alone
	}
	p := t.page.Context(ctx)
	s, err := proto.FetchTakeResponseBodyAsStream{RequestID: id}.Call(p)
	if err != nil {
		d.err = fmt.Errorf("take the response body: %w", err)
		return
	}
	defer func() {
		cctx, cancel := context.WithTimeout(t.ctx, cleanTimeout)
		defer cancel()
		_ = proto.IOClose{Handle: s.Stream}.Call(t.page.Context(cctx))
	}()
	// IO.read answers once it has the size asked for (or the end): a body declared over the
	// limit is read only as far as the PDF signature.
	limit, size := MaxPDFBytes, streamChunk
	if d.tooLarge {
		limit, size = len(pdfSignature), len(pdfSignature)
	}
	var buf bytes.Buffer
	for {
		r, err := proto.IORead{Handle: s.Stream, Size: &size}.Call(p)
		if err != nil {
			d.err = fmt.Errorf("read the response body: %w", err)
			return
		}
		chunk := []byte(r.Data)
		if r.Base64Encoded {
			if chunk, err = base64.StdEncoding.DecodeString(r.Data); err != nil {
				d.err = fmt.Errorf("decode the response body: %w", err)
				return
			}
		}
		buf.Write(chunk)
		if buf.Len() > MaxPDFBytes || d.tooLarge && buf.Len() >= limit {
			d.tooLarge = true
			d.data = buf.Bytes()[:min(buf.Len(), 1024)]
			return
		}
		if r.EOF {
			d.data = buf.Bytes()
			return
		}
	}
}

// continuePaused lets a paused response through unchanged.
func (t *tab) continuePaused(id proto.FetchRequestID) {
	ctx, cancel := context.WithTimeout(t.ctx, cleanTimeout)
	defer cancel()
	if err := (proto.FetchContinueRequest{RequestID: id}).Call(t.page.Context(ctx)); err != nil {
		t.inst.log.Debug("continue intercepted response", "err", err)
	}
}

// Skipped is an output a target could not produce, and why.
type Skipped struct {
	Output string `json:"output"`
	Reason string `json:"reason"`
}

// downloadResult builds the job's outputs from a taken download: a PDF's bytes and text, or
// a text or JSON body. Nothing was rendered, so screenshots, html and links are skipped.
// A PDF is read under ctx, the job's context, so reading it counts in the job's time.
func downloadResult(ctx context.Context, req Request, d *download, redirects []string, res *Result, mk Markup) (*Result, error) {
	if d.err != nil {
		return nil, newError(CodeInternal, true, d.err, "the target is a download that could not be read")
	}
	res.HTTPStatus, res.FinalURL, res.ContentType = d.status, d.url, d.mime
	if d.isPDF() {
		return pdfResult(ctx, req, d, redirects, res)
	}
	if d.tooLarge {
		return nil, newError(CodeDownloadTooLarge, false, nil, "the target is a download of %s over the %d MB limit", typeName(d), MaxPDFBytes>>20)
	}
	text, ok := decodeText(d, mk)
	if !ok {
		return nil, newError(CodeUnsupportedContentType, false, nil,
			"the target is a download of %s, which is neither a PDF nor text snapq can read", typeName(d))
	}
	res.Files = append(res.Files, File{Kind: FileDownload, Name: req.Name + downloadExt(req, d, text), ContentType: cmp.Or(d.contentType, "text/plain; charset=utf-8"), Data: d.data})
	md := text
	if req.wants(OutputMarkdown) && isJSON(d, text) {
		md = "```json\n" + strings.TrimRight(text, "\n") + "\n```\n"
	}
	why := "the target is a download (" + typeName(d) + "), not a page"
	if err := unrenderedOutputs(req, d, redirects, res, text, md, Metadata{Title: d.filename}, why); err != nil {
		return nil, err
	}
	res.Files = sortFiles(res.Files, req.Outputs)
	return res, nil
}

// pdfResult stores the PDF as served (kind pdf) and, when text or markdown is asked for, its
// text with a "<!-- page N -->" marker before each page.
func pdfResult(ctx context.Context, req Request, d *download, redirects []string, res *Result) (*Result, error) {
	res.ContentType = "application/pdf"
	if d.tooLarge {
		return nil, newError(CodePDFTooLarge, false, nil, "the PDF is over the %d MB limit", MaxPDFBytes>>20)
	}
	withText := req.wants(OutputText) || req.wants(OutputMarkdown)
	doc, err := readPDF(ctx, d.data, withText)
	var ce *Error
	if err != nil && (withText || !errors.As(err, &ce) || ce.Code != CodePDFEncrypted) {
		return nil, err
	}
	// Without text asked for, an encrypted PDF is stored as it is (its page count unknown).
	res.Title, res.PDFPages = CapMessage(doc.Title), doc.Pages
	var text string
	if withText {
		if text, err = pdfMarkdown(doc.Text); err != nil {
			return nil, err
		}
	}
	res.Files = append(res.Files, File{Kind: OutputPDF, Name: req.Name + ".pdf", ContentType: "application/pdf", Data: d.data})
	why := "the target is a PDF document, not a page"
	if err := unrenderedOutputs(req, d, redirects, res, text, text, Metadata{Title: doc.Title, Pages: doc.Pages}, why); err != nil {
		return nil, err
	}
	res.Files = sortFiles(res.Files, append([]string{OutputPDF}, req.Outputs...))
	return res, nil
}

// unrenderedOutputs adds the outputs a document that was taken, not rendered, can give: text,
// markdown and metadata from its bytes (a PDF target's own bytes are its pdf output). Every
// other asked-for output, or the default screenshot, is listed in res.Skipped with why.
func unrenderedOutputs(req Request, d *download, redirects []string, res *Result, text, md string, meta Metadata, why string) error {
	skip := func(o string) { res.Skipped = append(res.Skipped, Skipped{Output: o, Reason: why}) }
	for _, o := range req.Outputs {
		switch o {
		case OutputPDF:
			if !d.isPDF() {
				skip(o)
			}
		case OutputText:
			res.Files = append(res.Files, File{Kind: o, Name: req.Name + ".txt", ContentType: "text/plain; charset=utf-8",
				Data: []byte(text), Chars: utf8.RuneCountInString(text)})
		case OutputMarkdown:
			res.Files = append(res.Files, markdownFile(req, md))
		case OutputMetadata:
			f, err := metadataFile(req, meta, d, redirects)
			if err != nil {
				return err
			}
			res.Files = append(res.Files, f)
		default:
			skip(o)
		}
	}
	if len(req.Outputs) == 0 {
		skip(OutputScreenshot)
	}
	return nil
}

// markdownFile is the markdown output of a download, capped like a page's.
func markdownFile(req Request, md string) File {
	maxChars := req.MarkdownMaxChars
	if maxChars <= 0 {
		maxChars = DefaultMarkdownMaxChars
	}
	md, truncated := runecap.Cut(md, maxChars)
	return File{Kind: OutputMarkdown, Name: req.Name + ".md", ContentType: "text/markdown; charset=utf-8",
		Data: []byte(md), Chars: utf8.RuneCountInString(md), Truncated: truncated}
}

// metadataFile is the metadata output of a download: m plus the response's facts.
func metadataFile(req Request, m Metadata, d *download, redirects []string) (File, error) {
	m.OpenGraph = map[string]string{}
	m.Status, m.ContentType, m.FinalURL, m.RedirectChain = d.status, d.mime, d.url, redirects
	if d.isPDF() {
		m.ContentType = "application/pdf"
	}
	if m.RedirectChain == nil {
		m.RedirectChain = []string{}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return File{}, err
	}
	return File{Kind: OutputMetadata, Name: req.Name + "-metadata.json", ContentType: "application/json", Data: data}, nil
}

// decodeText returns the body as UTF-8 text when it is text: valid in its declared charset
// (UTF-8 when none) and free of control bytes other than tab, newline, carriage return and
// form feed. A charset other than UTF-8 is decoded by mk; without mk the body is not text.
func decodeText(d *download, mk Markup) (string, bool) {
	switch {
	case strings.HasPrefix(d.mime, "image/"), strings.HasPrefix(d.mime, "audio/"), strings.HasPrefix(d.mime, "video/"),
		strings.HasPrefix(d.mime, "font/"):
		return "", false
	}
	data := d.data
	if d.charset != "" && d.charset != "utf-8" && d.charset != "us-ascii" {
		if mk == nil {
			return "", false
		}
		var err error
		if data, err = mk.DecodeCharset(d.charset, data); err != nil {
			return "", false
		}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return "", false
	}
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
			return "", false
		}
	}
	return string(data), true
}

// isJSON reports a JSON body, by type or by content.
func isJSON(d *download, text string) bool {
	return d.mime == "application/json" || strings.HasSuffix(d.mime, "+json") || json.Valid([]byte(text)) && strings.TrimSpace(text) != ""
}

// downloadExt is the stored body's name after the job's: its file extension,
// after "-download" where an output asked for has that extension (the text
// output is <name>.txt, the markdown output <name>.md), so no two artifacts of
// a job share a name.
func downloadExt(req Request, d *download, text string) string {
	switch {
	case isJSON(d, text):
		return ".json"
	case d.mime == "text/csv" || d.mime == "text/x-csv" || d.mime == "text/comma-separated-values":
		return ".csv"
	case d.mime == "text/markdown" && req.wants(OutputMarkdown):
		return "-download.md"
	case d.mime == "text/markdown":
		return ".md"
	case d.mime == "application/xml" || d.mime == "text/xml" || strings.HasSuffix(d.mime, "+xml"):
		return ".xml"
	}
	return "-download.txt"
}

// typeName names a download for messages: its type and file name.
func typeName(d *download) string {
	s := cmp.Or(d.mime, "unknown type")
	if d.filename != "" {
		s += " (" + d.filename + ")"
	}
	return s
}
