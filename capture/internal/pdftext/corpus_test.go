package pdftext

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requirePoppler skips a test of the poppler reader where poppler-utils is not installed,
// except under CI=true, where scripts/services.sh installs it and a skip would hide a
// missing install.
func requirePoppler(t *testing.T) {
	t.Helper()
	if ReaderName() == "poppler" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("poppler-utils (pdfinfo, pdftotext) is not installed: run scripts/services.sh up")
	}
	t.Skip("poppler-utils is not installed")
}

// TestReadCorpus reads every kind of valid PDF of testdata/corpus (see make.sh there) in
// the limited child, as capture does: each gives its text, or ErrNoText when it has none,
// or ErrEncrypted when it needs a password, within a bound that proves "not the timeout".
// The Go reader looped on the pages without a content stream, and misread the object
// streams and three kinds of encryption with an empty password.
func TestReadCorpus(t *testing.T) {
	t.Parallel()
	requirePoppler(t)
	gs := []string{"Ghostscript page one says hello\nSecond line of page one", "Page two says goodbye"}
	chromium := []string{"Quarterly report\nRevenue grew by twelve percent in the third quarter.\nÜnïcödé: café, naïve, Straße,\n\n東京, Ελληνικά.",
		"Second page\nCosts fell."}
	tests := []struct {
		file      string
		wantTitle string
		wantText  []string
		wantKind  error
	}{
		{file: "no-content-stream.pdf", wantKind: ErrNoText},
		{file: "nocontent-bare.pdf", wantKind: ErrNoText},
		{file: "empty-stream.pdf", wantKind: ErrNoText},
		{file: "image-only.pdf", wantKind: ErrNoText},
		{file: "chromium-blank.pdf", wantKind: ErrNoText},
		{file: "chromium-cid.pdf", wantTitle: "Quarterly report", wantText: chromium},
		{file: "objstm.pdf", wantTitle: "Quarterly report", wantText: chromium},
		{file: "gs-type1.pdf", wantText: gs},
		{file: "linearized.pdf", wantText: gs},
		{file: "incremental.pdf", wantTitle: "Incremental fixture", wantText: []string{"Updated text after the incremental save"}},
		{file: "aes128-empty.pdf", wantText: gs},
		{file: "aes256-empty.pdf", wantText: gs},
		{file: "rc4-empty.pdf", wantText: gs},
		{file: "aes256-user.pdf", wantKind: ErrEncrypted},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "corpus", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			doc, err := ReadInChild(context.Background(), data, 500, true, testLimits)
			if err == nil {
				_, err = Markdown(doc.Text)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("read in %s, want well under the %s timeout", took, testLimits.Timeout)
			}
			if tt.wantKind != nil {
				if !errors.Is(err, tt.wantKind) {
					t.Fatalf("error %v, want kind %v", err, tt.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Title != tt.wantTitle || strings.Join(doc.Text, "\f") != strings.Join(tt.wantText, "\f") {
				t.Errorf("title %q, text %q; want %q, %q", doc.Title, doc.Text, tt.wantTitle, tt.wantText)
			}
		})
	}
}
