package capture

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sitefx "github.com/snapq/snapq/internal/fixtures"
)

// downloadFiles lists the files in b's download directories (the tabs' own, in the profile).
func downloadFiles(t *testing.T, b *Browser) []string {
	t.Helper()
	b.mu.Lock()
	inst := b.inst
	b.mu.Unlock()
	if inst == nil || inst.dir == "" {
		t.Fatal("no launched browser")
	}
	// A failed job's tab is thrown away with its directory: there may be none.
	dirs, err := filepath.Glob(filepath.Join(inst.dir, "downloads-*"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				files = append(files, p)
			}
			return nil
		})
	}
	return files
}

// waitNoDownloadFiles waits until the clean slate has emptied b's download directories.
func waitNoDownloadFiles(t *testing.T, b *Browser) {
	t.Helper()
	var files []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if files = downloadFiles(t, b); len(files) == 0 {
			return
		}
	}
	t.Errorf("files left in the download directories: %v", files)
}

// A download with no Content-Length is cancelled once its file passes MaxPDFBytes: the job
// fails with the too-large code, the server is cut off well before it has sent its gigabyte,
// and nothing stays on disk.
func TestNativeDownloadCappedWhileStreaming(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	var sent atomic.Int64
	mux := http.NewServeMux()
	for path, first := range map[string]string{"/stream.bin": "%PDF-1.4\n", "/stream.txt": "plain text\n"} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			chunk := bytes.Repeat([]byte("y"), 1<<20)
			n, _ := w.Write([]byte(first))
			sent.Add(int64(n))
			for range 1024 { // 1 GiB unless cut off
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, code := range map[string]string{"/stream.bin": CodePDFTooLarge, "/stream.txt": CodeDownloadTooLarge} {
		t.Run(path, func(t *testing.T) {
			sent.Store(0)
			_, err := capture(t, b, Request{URL: srv.URL + path, Name: "s", Outputs: []string{OutputText}, Timeout: time.Minute})
			wantCode(t, err, code, false)
			t.Logf("the server sent %d MiB", sent.Load()>>20)
			if n := sent.Load(); n > 4*MaxPDFBytes {
				t.Errorf("the server sent %d MiB before the download was cancelled; the cap is %d MiB", n>>20, MaxPDFBytes>>20)
			}
			waitNoDownloadFiles(t, b)
		})
	}
}

// Downloads other than the job's own target (an iframe's attachment, a script's download
// link) are cancelled: the page is captured as a page and no file stays on disk.
func TestStrayDownloadsCancelled(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	site := siteServer(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Stray</title><h1>A page with downloads</h1>
<iframe src="%[1]s/download/json"></iframe>
<a id="dl" href="%[1]s/download/markdown" download="m.md">get</a>
<script>addEventListener("load", () => document.getElementById("dl").click())</script>`, site.URL)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res := mustCapture(t, b, Request{URL: srv.URL + "/page", Name: "p", Outputs: []string{OutputText},
		Wait: Wait{Until: UntilNetworkIdle}})
	if res.HTTPStatus != 200 || res.ContentType != "text/html" || res.Title != "Stray" || len(res.Skipped) != 0 || len(res.Files) != 1 {
		t.Errorf("status %d, type %q, title %q, skipped %+v, %d files; want the page itself",
			res.HTTPStatus, res.ContentType, res.Title, res.Skipped, len(res.Files))
	}
	if text := string(fileByKind(t, res, OutputText).Data); !strings.Contains(text, "A page with downloads") {
		t.Errorf("text %q", text)
	}
	waitNoDownloadFiles(t, b)
	// The tab still takes its next target.
	res = mustCapture(t, b, Request{URL: site.URL + "/download/json", Name: "d"})
	diff(t, "download body", sitefx.DownloadJSON, string(fileByKind(t, res, FileDownload).Data))
	waitNoDownloadFiles(t, b)
}

// A remote browser's tabs keep taking PDFs and downloads by pausing Document responses: the
// worker cannot read a remote browser's files.
func TestRemoteTakesDownloads(t *testing.T) {
	b := newBrowser(t, Config{RemoteURL: startRemoteChromium(t), ChromeBin: "/nonexistent", Tabs: 1})
	srv := siteServer(t)
	res := mustCapture(t, b, Request{URL: srv.URL + "/pdf/inline", Name: "doc", Outputs: []string{OutputText}})
	if !bytes.Equal(fileByKind(t, res, OutputPDF).Data, sitefx.PDF(sitefx.PDFPages...)) {
		t.Error("the stored PDF differs from the served one")
	}
	wantPDFText(t, "text", string(fileByKind(t, res, OutputText).Data))
	res = mustCapture(t, b, Request{URL: srv.URL + "/download/json", Name: "d"})
	diff(t, "download body", sitefx.DownloadJSON, string(fileByKind(t, res, FileDownload).Data))
}

// openRegular reads a regular file and refuses what a hostile browser could put in its
// download directory instead: a symbolic link, a hard link, a FIFO (without blocking).
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("worker's file"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("downloaded"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := openRegular(plain)
	if err != nil {
		t.Fatalf("a regular file: %v", err)
	}
	_ = f.Close()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(dir, "symlink")))
	must(os.Link(secret, filepath.Join(dir, "hardlink")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	must(os.Mkdir(filepath.Join(dir, "dir"), 0o700))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"symlink", "hardlink", "fifo", "dir"} {
		done := make(chan error, 1)
		go func() {
			f, err := openRegular(filepath.Join(dir, name))
			if err == nil {
				_ = f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("openRegular opened the %s", name)
			}
		case <-ctx.Done():
			t.Fatalf("openRegular blocked on the %s", name)
		}
	}
	if _, err := readDownloadHead(filepath.Join(dir, "symlink")); err == nil {
		t.Error("readDownloadHead read through a symbolic link")
	}
}

// A browser session takes no downloads: going to a PDF fails at once with a clear error
// (not after a wait for a download the session would not take), and the session goes on.
func TestSessionRefusesDownload(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	srv := siteServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := b.OpenSession(ctx, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	err = s.Goto(ctx, srv.URL+"/pdf/inline")
	ce := wantCode(t, err, CodeUnsupportedContentType, false)
	if ce != nil && !strings.Contains(ce.Message, "application/pdf") {
		t.Errorf("message %q does not name the type", ce.Message)
	}
	if took := time.Since(start); took >= downloadBeginWait {
		t.Errorf("took %s: it waited for a download the session does not take", took)
	}
	if err := s.Goto(ctx, srv.URL+"/short"); err != nil {
		t.Fatalf("the next navigation: %v", err)
	}
	waitNoDownloadFiles(t, b)
}
