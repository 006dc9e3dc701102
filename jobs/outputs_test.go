package jobs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/capture"
)

func TestOutputsOptionsResolve(t *testing.T) {
	t.Parallel()
	body := `{
	  "options": {"outputs": ["html", "text"], "pdf": {"paper": "letter", "margin_mm": 5.5}},
	  "targets": [
	    {"url": "https://a.example/"},
	    {"url": "https://b.example/", "options": {"outputs": ["pdf", "screenshot"],
	      "pdf": {"landscape": true, "print_background": false, "scale": 0.5, "page_ranges": "1-3, 5"}}}
	  ]}`
	js, _, err := ParseBatchRequest([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := js[0].Options, js[1].Options
	if diff := cmp.Diff([]string{"html", "text"}, a.Outputs); diff != "" {
		t.Errorf("target 0 outputs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(PDF{Paper: "letter", MarginMM: 5.5, PrintBackground: true, Scale: 1}, a.PDF); diff != "" {
		t.Errorf("target 0 pdf (-want +got):\n%s", diff)
	}
	// A target's list replaces the batch's; pdf fields merge one by one.
	if diff := cmp.Diff([]string{"pdf", "screenshot"}, b.Outputs); diff != "" {
		t.Errorf("target 1 outputs (-want +got):\n%s", diff)
	}
	want := PDF{Paper: "letter", Landscape: true, MarginMM: 5.5, Scale: 0.5, PageRanges: "1-3,5"}
	if diff := cmp.Diff(want, b.PDF); diff != "" {
		t.Errorf("target 1 pdf (-want +got):\n%s", diff)
	}
	req := b.CaptureRequest("https://b.example/", "b")
	wantReq := capture.PDFOptions{Paper: "letter", Landscape: true, MarginMM: 5.5, Scale: 0.5, PageRanges: "1-3,5"}
	if req.PDF != wantReq || strings.Join(req.Outputs, ",") != "pdf,screenshot" {
		t.Errorf("capture request outputs %v pdf %+v", req.Outputs, req.PDF)
	}
	d := DefaultOptions()
	if diff := cmp.Diff([]string{"screenshot"}, d.Outputs); diff != "" || d.PDF != (PDF{Paper: "a4", MarginMM: 10, PrintBackground: true, Scale: 1}) {
		t.Errorf("defaults: outputs %v pdf %+v", d.Outputs, d.PDF)
	}
}

func TestBlockOptionsResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		options string
		want    capture.Block
	}{
		{name: "screenshot job blocks nothing", options: `{}`, want: capture.Block{ResourceTypes: []string{}}},
		{name: "pdf job blocks nothing", options: `{"outputs": ["pdf", "text"]}`, want: capture.Block{ResourceTypes: []string{}}},
		{name: "text job blocks images, fonts, media by default", options: `{"outputs": ["text", "markdown"]}`,
			want: capture.Block{ResourceTypes: []string{"image", "font", "media"}}},
		{name: "explicit empty list turns the default off", options: `{"outputs": ["text"], "block": {"resource_types": []}}`,
			want: capture.Block{ResourceTypes: []string{}}},
		{name: "patterns alone keep the default types", options: `{"outputs": ["html"], "block": {"url_patterns": ["*.doubleclick.net/*"]}}`,
			want: capture.Block{ResourceTypes: []string{"image", "font", "media"}, URLPatterns: []string{"*.doubleclick.net/*"}}},
		{name: "explicit types on a screenshot job", options: `{"block": {"resource_types": ["stylesheet", "font"]}}`,
			want: capture.Block{ResourceTypes: []string{"stylesheet", "font"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			jobs, _, err := ParseBatchRequest([]byte(`{"urls": ["https://a.example/"], "options": `+tt.options+`}`), 0)
			if err != nil {
				t.Fatal(err)
			}
			got := jobs[0].Options.CaptureRequest("https://a.example/", "a").Block
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("block (-want +got):\n%s", diff)
			}
		})
	}
	// A target's explicit [] beats the default its text-only outputs would get.
	jobs, _, err := ParseBatchRequest([]byte(`{"options": {"outputs": ["text"]}, "targets": [
		{"url": "https://a.example/"}, {"url": "https://b.example/", "options": {"block": {"resource_types": []}}}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := jobs[0].Options.Block.ResourceTypes, jobs[1].Options.Block.ResourceTypes; len(a) != 3 || b == nil || len(b) != 0 {
		t.Errorf("resource types: target a %v, target b %#v", a, b)
	}
}

func TestOutputsOptionsReject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		options string
		want    []string
		msg     string // in the first error's message
	}{
		{name: "markdown_max_chars too small", options: `{"outputs": ["markdown"], "markdown_max_chars": 999}`,
			want: []string{"options.markdown_max_chars"}, msg: "1000 to 1000000"},
		{name: "markdown_max_chars too big", options: `{"markdown_max_chars": 1000001}`, want: []string{"options.markdown_max_chars"}},
		{name: "unknown resource type", options: `{"block": {"resource_types": ["image", "script", "image"]}}`,
			want: []string{"options.block.resource_types[1]", "options.block.resource_types[2]"}, msg: "must be one of"},
		{name: "unknown block key", options: `{"block": {"types": ["image"]}}`, want: []string{"options.block.types"}},
		{name: "too many patterns", options: `{"block": {"url_patterns": [` + strings.TrimSuffix(strings.Repeat(`"*.ads.test/*",`, 51), ",") + `]}}`,
			want: []string{"options.block.url_patterns"}, msg: "at most 50"},
		{name: "pattern too long or empty", options: `{"block": {"url_patterns": ["*", "", "` + strings.Repeat("a", 257) + `"]}}`,
			want: []string{"options.block.url_patterns[1]", "options.block.url_patterns[2]"}, msg: "1 to 256"},
		{name: "markdown_max_chars fraction", options: `{"markdown_max_chars": 1500.5}`, want: []string{"options.markdown_max_chars"}},
		{name: "unknown output", options: `{"outputs": ["screenshot", "png"]}`, want: []string{"options.outputs[1]"}, msg: "must be one of"},
		{name: "duplicate", options: `{"outputs": ["text", "html", "text"]}`, want: []string{"options.outputs[2]"}, msg: "twice"},
		{name: "empty list", options: `{"outputs": []}`, want: []string{"options.outputs"}, msg: "at least one"},
		{name: "not a list", options: `{"outputs": "html"}`, want: []string{"options.outputs"}},
		{name: "unknown pdf key", options: `{"pdf": {"paper": "a4", "colour": true}}`, want: []string{"options.pdf.colour"}},
		{name: "pdf ranges", options: `{"pdf": {"paper": "b5", "margin_mm": 51, "scale": 0.05}}`,
			want: []string{"options.pdf.paper", "options.pdf.margin_mm", "options.pdf.scale"}},
		{name: "scale too big", options: `{"pdf": {"scale": 2.5}}`, want: []string{"options.pdf.scale"}},
		{name: "negative margin", options: `{"pdf": {"margin_mm": -1}}`, want: []string{"options.pdf.margin_mm"}},
	}
	for _, r := range []string{"0", "1-", "-3", "3-1", "1;2", "a", "1,,2", "1-2-3"} {
		tests = append(tests, struct {
			name    string
			options string
			want    []string
			msg     string
		}{name: "page_ranges " + r, options: `{"pdf": {"page_ranges": "` + r + `"}}`, want: []string{"options.pdf.page_ranges"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ParseBatchRequest([]byte(`{"urls": ["https://a.example/"], "options": `+tt.options+`}`), 0)
			if diff := cmp.Diff(tt.want, fields(t, err)); diff != "" {
				t.Errorf("bad fields (-want +got):\n%s", diff)
			}
			if tt.msg != "" && (err == nil || !strings.Contains(err.Error(), tt.msg)) {
				t.Errorf("error %v, want it to say %q", err, tt.msg)
			}
		})
	}
	reqs, _, err := ParseBatchRequest([]byte(`{"urls": ["https://a.example/"], "options": {"outputs": ["html", "markdown"], "markdown_max_chars": 5000}}`), 0)
	if err != nil {
		t.Fatalf("markdown rejected: %v", err)
	}
	if cr := reqs[0].Options.CaptureRequest("https://a.example/", "a"); cr.MarkdownMaxChars != 5000 || strings.Join(cr.Outputs, ",") != "html,markdown" {
		t.Errorf("markdown capture request: outputs %v max chars %d", cr.Outputs, cr.MarkdownMaxChars)
	}
	if d := DefaultOptions(); d.MarkdownMaxChars != capture.DefaultMarkdownMaxChars {
		t.Errorf("default markdown_max_chars %d", d.MarkdownMaxChars)
	}
	for _, ok := range []string{"1", "1-3,5", " 2 - 4 , 7 ", ""} {
		if _, _, err := ParseBatchRequest([]byte(`{"urls": ["https://a.example/"], "options": {"pdf": {"page_ranges": "`+ok+`"}}}`), 0); err != nil {
			t.Errorf("page_ranges %q rejected: %v", ok, err)
		}
	}
}
