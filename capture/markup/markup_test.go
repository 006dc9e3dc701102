package markup_test

import (
	"strings"
	"testing"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/capture/markup"
)

var _ capture.Markup = markup.Codec{}

// The markdown output's documented default cap is the converter's.
func TestDefaultMaxChars(t *testing.T) {
	t.Parallel()
	if markup.DefaultMaxChars != capture.DefaultMarkdownMaxChars {
		t.Errorf("markup.DefaultMaxChars = %d, capture.DefaultMarkdownMaxChars = %d", markup.DefaultMaxChars, capture.DefaultMarkdownMaxChars)
	}
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	md, cut, err := markup.Codec{}.Markdown(`<html><body><h1>Hi</h1><p>A <a href="/x">link</a>.</p></body></html>`, "http://127.0.0.1/", 8, 0)
	if err != nil || cut {
		t.Fatalf("Markdown: %q, cut %v, %v", md, cut, err)
	}
	if want := "# Hi\n\nA [link](http://127.0.0.1/x)."; md != want {
		t.Errorf("Markdown = %q, want %q", md, want)
	}
	md, cut, err = markup.Codec{}.Markdown("<p>"+strings.Repeat("word ", 100)+"</p>", "", 500, 20)
	if err != nil || !cut || len([]rune(md)) > 20 {
		t.Errorf("Markdown capped at 20 = %q, cut %v, %v", md, cut, err)
	}
}

func TestDecodeCharset(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, label string
		in          []byte
		want        string
		wantErr     bool
	}{
		{name: "latin-1", label: "iso-8859-1", in: []byte("caf\xe9"), want: "café"},
		{name: "shift_jis", label: "shift_jis", in: []byte("\x93\xfa\x96\x7b"), want: "日本"},
		{name: "unknown label", label: "no-such-charset", in: []byte("x"), wantErr: true},
	} {
		got, err := markup.Codec{}.DecodeCharset(tt.label, tt.in)
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("%s: DecodeCharset = %q, %v; want %q (error %v)", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}
