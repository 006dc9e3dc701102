package pdftext

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	sitefx "github.com/snapq/snapq/internal/fixtures"
)

// The test binary is re-executed as the child: this package's init serves it.

var testLimits = Limits{Timeout: 10 * time.Second, Memory: 1 << 30}

func TestReadInChild(t *testing.T) {
	t.Parallel()
	doc, err := ReadInChild(context.Background(), sitefx.PDF("Alpha", "Beta"), 500, true, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Doc{Pages: 2, Title: "snapq fixture", Text: []string{"Alpha", "Beta"}}, doc); d != "" {
		t.Errorf("doc mismatch (-want +got):\n%s", d)
	}
	_, err = ReadInChild(context.Background(), sitefx.EncryptedPDF("user", "owner", "a"), 500, true, testLimits)
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, ErrEncrypted) || pe.Message == "" {
		t.Errorf("encrypted: error %v, want a *Error of kind ErrEncrypted with its message", err)
	}
}

func TestReadInChildLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     []byte
		lim      Limits
		wantKind error
	}{
		// 8 MiB of one string is under MaxContentBytes but some 800 MB of the Go reader's
		// glyph records (poppler keeps a few dozen bytes of such a string).
		{name: "memory", data: bombPDF(8 << 20), lim: Limits{Timeout: 20 * time.Second, Memory: 128 << 20, goReader: true}, wantKind: ErrInvalid},
		{name: "content", data: bombPDF(MaxContentBytes + 1<<20), lim: Limits{Timeout: 20 * time.Second, Memory: 1 << 30, goReader: true}, wantKind: ErrTooLarge},
		{name: "output", data: sitefx.PDF("a long enough line of text"), lim: Limits{Timeout: 10 * time.Second, Output: 16}, wantKind: ErrTooLarge},
		{name: "wall clock", data: bombPDF(24 << 20), lim: Limits{Timeout: 300 * time.Millisecond}, wantKind: ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadInChild(context.Background(), tt.data, 500, true, tt.lim)
			if !errors.Is(err, tt.wantKind) {
				t.Fatalf("error %v, want kind %v", err, tt.wantKind)
			}
		})
	}
}

func TestReadInChildCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := ReadInChild(ctx, bombPDF(24<<20), 500, true, testLimits)
	var pe *Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) || time.Since(start) > 3*time.Second {
		t.Fatalf("error %v after %s, want context.Canceled (not an *Error) soon after the cancel", err, time.Since(start))
	}
}

// bombPDF is a one-page PDF whose flate content stream inflates to about n bytes of one
// string shown as text.
func bombPDF(n int) []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	fmt.Fprint(w, "BT /F1 12 Tf 72 720 Td (")
	chunk := bytes.Repeat([]byte("A"), 1<<16)
	for i := 0; i < n; i += len(chunk) {
		_, _ = w.Write(chunk)
	}
	fmt.Fprint(w, ") Tj ET")
	_ = w.Close()
	objs := []string{
		"<</Type/Catalog/Pages 2 0 R>>",
		"<</Type/Pages/Kids[3 0 R]/Count 1>>",
		"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
		fmt.Sprintf("<</Length %d/Filter/FlateDecode>>\nstream\n%s\nendstream", z.Len(), z.Bytes()),
		"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
	}
	return sitefx.AssemblePDF(objs, fmt.Sprintf("<</Size %d/Root 1 0 R>>", len(objs)+1))
}

// BenchmarkRead compares reading a small ordinary PDF (internal/fixtures' two pages, with
// text) in this process and in a child: the difference is the child's cost per PDF.
func BenchmarkRead(b *testing.B) {
	data := sitefx.PDF(sitefx.PDFPages...)
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := Read(data, 500, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("child", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadInChild(context.Background(), data, 500, true, testLimits); err != nil {
				b.Fatal(err)
			}
		}
	})
}
