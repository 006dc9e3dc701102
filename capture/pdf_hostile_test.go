package capture

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sitefx "github.com/snapq/snapq/internal/fixtures"
	"github.com/snapq/snapq/internal/testenv"
)

// TestReadPDFHostile reads the audit's hostile PDFs. Each case runs in a subprocess of the
// test binary, so a reader that hangs, overflows its stack or exhausts memory fails that
// case instead of taking the whole test binary (as it would a worker) down with it. Inside,
// the read must end, within its budget, with one of the outcomes the reader in use
// (PDFReader) gives — read ("") or a stable non-retryable code — and the subprocess's own
// peak memory must stay small: the parsing happens elsewhere. Poppler reads all three (it
// caps nesting and keeps a few dozen bytes of a huge string); on a loaded machine its CPU
// time may run past the budget, which is pdf_timeout.
func TestReadPDFHostile(t *testing.T) {
	tests := []struct {
		name string
		data func() []byte
		want map[string][]string // reader → acceptable codes, "" for a read
		// budget is the read's deadline: the hang is cut at it; the other cases must
		// answer before it, with room for a loaded CI machine (the child parses on a
		// shared CPU).
		budget time.Duration
	}{
		// A few hundred bytes the Go reader loops on for ever.
		{name: "unterminated_array", data: unterminatedArrayPDF, budget: 4 * time.Second,
			want: map[string][]string{"go": {CodePDFTimeout}, "poppler": {"", CodePDFTimeout}}},
		// 4 MB of nested arrays: a stack overflow in the Go reader, fatal in its process.
		{name: "nested_arrays", data: nestedArraysPDF, budget: 20 * time.Second,
			want: map[string][]string{"go": {CodePDFInvalid}, "poppler": {"", CodePDFInvalid, CodePDFTimeout}}},
		// About 64 KB that inflates to 64 MB of one string, a glyph record per byte in the Go reader.
		{name: "flate_bomb", data: func() []byte { return flateBombPDF(64 << 20) }, budget: 20 * time.Second,
			want: map[string][]string{"go": {CodePDFTooLarge}, "poppler": {"", CodePDFTimeout}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if os.Getenv(hostileEnv) != tt.name {
				t.Parallel()
				inSubprocess(t, "^TestReadPDFHostile$/^"+tt.name+"$", tt.name)
				return
			}
			limitAddressSpace(t, 3<<30)
			data := tt.data()
			ctx, cancel := context.WithTimeout(context.Background(), tt.budget)
			defer cancel()
			start := time.Now()
			_, err := readPDF(ctx, data, true)
			took := time.Since(start)
			code := ""
			if err != nil {
				code = wantCode(t, err, errorCode(err), false).Code
			}
			if !slices.Contains(tt.want[PDFReader()], code) {
				t.Errorf("the %s reader: error %v, want one of %q", PDFReader(), err, tt.want[PDFReader()])
			}
			if took > tt.budget+2*time.Second {
				t.Errorf("the read of %d bytes took %s, want an answer within the %s budget", len(data), took, tt.budget)
			}
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
				t.Fatal(err)
			}
			if peak := ru.Maxrss >> 10; peak > 300 { // Maxrss is in KiB on Linux
				t.Errorf("the reading process peaked at %d MiB, want at most 300", peak)
			}
		})
	}
}

// errorCode is err's code when it is an *Error.
func errorCode(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// A PDF target that keeps the reader busy past the job's budget fails its job with
// pdf_timeout within the job's Timeout plus CaptureGrace: the reading counts in the job's
// budget. The PDF is a flate bomb of 256 MB of one string: poppler needs several seconds of
// CPU for it (the Go reader refuses it at once as pdf_too_large, so this needs poppler).
func TestPDFTargetHangsReader(t *testing.T) {
	b := sharedBrowser(t)
	if PDFReader() != "poppler" {
		testenv.Unavailable(t, "poppler-utils", errors.New("pdfinfo and pdftotext are not on PATH"))
	}
	data := flateBombPDF(256 << 20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	req := Request{URL: srv.URL + "/hang.pdf", Name: "h", Outputs: []string{OutputText}, Timeout: 2 * time.Second}
	start := time.Now()
	_, err := capture(t, b, req)
	wantCode(t, err, CodePDFTimeout, false)
	// 3 s of slack for a loaded machine; the reader's own limit (PDFReadTimeout) is 30 s.
	if took, limit := time.Since(start), req.Timeout+CaptureGrace(req.Timeout)+3*time.Second; took > limit {
		t.Errorf("the job took %s, want at most %s", took, limit)
	}
}

// hostileEnv names the hostile case a subprocess of the test binary runs.
const hostileEnv = "SNAPQ_TEST_HOSTILE_PDF"

// inSubprocess runs the tests matching run in a subprocess of the test binary with hostileEnv
// set to name, and fails unless it passes within a minute.
func inSubprocess(t *testing.T, run, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), hostileEnv+"="+name)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestReadPDFHostile/"+name)) {
		var ee *exec.ExitError
		how := fmt.Sprint(err)
		if errors.As(err, &ee) && ctx.Err() != nil {
			how = "killed after a minute"
		}
		t.Fatalf("subprocess: %s after %s; output (tail):\n%s", how, time.Since(start).Round(time.Millisecond), tail(out, 3000))
	}
}

// limitAddressSpace lets this process map at most extra more bytes, so a memory blow-up in
// it fails the case rather than the machine. Only the soft limit is set.
func limitAddressSpace(t *testing.T, extra uint64) {
	t.Helper()
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	var pages uint64
	if _, err := fmt.Sscan(string(statm), &pages); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(lim.Max, pages*uint64(os.Getpagesize())+extra)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }

// Hostile PDFs from the security audit (issue 12), generated so no binary is committed.

// onePage are the objects of a one-page document whose page has content.
func onePage(content string) []string {
	return []string{
		"<</Type/Catalog/Pages 2 0 R>>",
		"<</Type/Pages/Kids[3 0 R]/Count 1>>",
		"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
		content,
		"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
	}
}

// unterminatedArrayPDF is a few hundred bytes whose trailer opens an array it never closes:
// the reader loops for ever on it.
func unterminatedArrayPDF() []byte {
	return sitefx.AssemblePDF(onePage("<</Length 0>>\nstream\n\nendstream"), "<</Size 6/Root 1 0 R/ID[")
}

// nestedArraysPDF is about 4 MB of nested arrays in the trailer: a recursive reader
// overflows the goroutine stack, a fatal error recover cannot catch.
func nestedArraysPDF() []byte {
	return sitefx.AssemblePDF(onePage("<</Length 0>>\nstream\n\nendstream"), "<</Size 6/Root 1 0 R/ID "+strings.Repeat("[", 4<<20))
}

// flateBombPDF is a small PDF whose one content stream inflates to expanded bytes of a single
// text string, which a reader expands further into one glyph record per byte.
func flateBombPDF(expanded int) []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	fmt.Fprint(w, "BT /F1 12 Tf 72 720 Td (")
	chunk := bytes.Repeat([]byte("A"), 1<<16)
	for n := 0; n < expanded; n += len(chunk) {
		_, _ = w.Write(chunk)
	}
	fmt.Fprint(w, ") Tj ET")
	_ = w.Close()
	content := fmt.Sprintf("<</Length %d/Filter/FlateDecode>>\nstream\n%s\nendstream", z.Len(), z.Bytes())
	return sitefx.AssemblePDF(onePage(content), "<</Size 6/Root 1 0 R>>")
}
