package capture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// A launched Chromium takes a PDF or download target itself: its profile opens PDFs as
// downloads (profilePreferences), each tab's context downloads into a directory of its own
// (Browser.setDownloadBehavior allowAndName), and the job reads the finished file. Nothing
// pauses the tab's document responses, which cost every page a round trip through the one
// DevTools pipe (behind other tabs' screenshots) and put DevTools' interceptor between every
// request and the network. The bytes still come over the context's own connection, so through
// its egress proxy. Only the main frame's download during the job's navigation is taken; any
// other (an iframe's, a script's, a later navigation's) is cancelled as it begins, and the
// clean slate removes whatever reached the directory. A remote browser, whose files the worker
// cannot read, keeps pausing Document responses (download.go).

// downloadPoll is how often a running download's file is measured against MaxPDFBytes:
// Chromium reports its progress only every half second or so.
const downloadPoll = 20 * time.Millisecond

// downloadBeginWait bounds the wait, once the main-frame navigation was aborted after its
// response arrived, for the download Chromium begins of it (Page.navigate may answer first).
const downloadBeginWait = 5 * time.Second

// partSuffix ends the name of a file Chromium is still downloading.
const partSuffix = ".crdownload"

// tabDownload is the download Chromium makes of the current job's main-frame response.
type tabDownload struct {
	guid  string
	state string        // the final state, completed or canceled ("" until then; guarded by tab.mu)
	done  chan struct{} // closed once state is set
}

// downloadBegan handles Page.downloadWillBegin on the event loop: the main frame's download
// during the job's navigation is taken, any other cancelled.
func (t *tab) downloadBegan(e *proto.PageDownloadWillBegin) {
	t.mu.Lock()
	take := t.dlDir != "" && t.dlCtx != nil && e.FrameID == t.page.FrameID && t.native == nil
	if take {
		t.native = &tabDownload{guid: e.GUID, done: make(chan struct{})}
		d := describeDownload(t.st.status, t.st.docHeader)
		d.url = cmp.Or(t.st.docURL, e.URL)
		t.st.download = d
	}
	t.mu.Unlock()
	if !take {
		go t.cancelDownload(e.GUID)
	}
}

// downloadProgressed handles Page.downloadProgress on the event loop: the taken download's
// end is signalled; any other download that completed before its cancel arrived (a small
// one) is removed at once, so a session, which has no clean slate between pages, keeps none.
func (t *tab) downloadProgressed(e *proto.PageDownloadProgress) {
	if e.State == proto.PageDownloadProgressStateInProgress {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.native
	if n != nil && n.guid == e.GUID {
		if n.state == "" {
			n.state = string(e.State)
			close(n.done)
		}
		return
	}
	if t.dlDir != "" && e.State == proto.PageDownloadProgressStateCompleted {
		_ = os.Remove(t.downloadPath(e.GUID))
	}
}

// cancelDownload stops one of the context's downloads.
func (t *tab) cancelDownload(guid string) {
	ctx, cancel := context.WithTimeout(t.ctx, cleanTimeout)
	defer cancel()
	err := proto.BrowserCancelDownload{GUID: guid, BrowserContextID: t.contextID}.Call(t.inst.rb.Context(ctx))
	if err != nil {
		t.inst.log.Debug("cancel a download", "err", err)
	}
}

// finishDownload runs after the job's navigation was aborted with its response seen: it waits
// for the download Chromium begins of it and reads the finished file into the page state's
// download. It reports whether a download was taken; an error is ctx's end while waiting.
func (t *tab) finishDownload(ctx context.Context, rawURL string) (bool, error) {
	// Page.navigate may answer before the response's event has arrived.
	st := t.document(ctx, rawURL)
	if !st.sawDocument || noContent(st.status) {
		return false, nil
	}
	t.mu.Lock()
	taking := t.dlCtx != nil
	t.mu.Unlock()
	if !taking {
		return false, refusedDownload(st)
	}
	bctx, cancel := context.WithTimeout(ctx, downloadBeginWait)
	defer cancel()
	var n *tabDownload
	_ = poll(bctx, 5*time.Millisecond, func() (bool, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		n = t.native
		return n != nil, nil
	})
	if n == nil {
		return false, ctx.Err()
	}
	st, _ = t.state()
	return true, t.awaitDownload(ctx, n, st.download)
}

// refusedDownload explains a navigation outside a job's own (a session's) that Chromium
// turned into a download, which it cancelled; nil when the response was no download.
func refusedDownload(st pageState) error {
	d := takeDownload(st.status, st.docHeader)
	if d == nil {
		return nil
	}
	return newError(CodeUnsupportedContentType, false, nil,
		"%s is a download (%s), which a browser session does not open: capture it as a job to read it", CapMessage(st.docURL), typeName(d))
}

// awaitDownload waits for n to end and reads its file into d, cancelling it once its file
// passes MaxPDFBytes (or, declared over it, once its first bytes tell whether it is a PDF).
func (t *tab) awaitDownload(ctx context.Context, n *tabDownload, d *download) error {
	if d.tooLarge && d.isPDF() {
		t.cancelDownload(n.guid) // refused from Content-Length alone
		return nil
	}
	tick := time.NewTicker(downloadPoll)
	defer tick.Stop()
	for {
		select {
		case <-n.done:
			t.readDownloadFile(n, d)
			return nil
		case <-ctx.Done():
			go t.cancelDownload(n.guid)
			return ctx.Err()
		case <-tick.C:
			if size := t.partSize(n.guid); size > MaxPDFBytes || d.tooLarge && size >= int64(len(pdfSignature)) {
				d.tooLarge = true
				d.data, _ = readDownloadHead(t.downloadPath(n.guid))
				t.cancelDownload(n.guid)
				return nil
			}
		}
	}
}

// readDownloadFile reads the ended download's file into d (at most MaxPDFBytes, beyond which
// only its first KiB is kept, enough to tell a PDF) and removes it.
func (t *tab) readDownloadFile(n *tabDownload, d *download) {
	// n.state was set before n.done closed, and this runs after.
	if n.state != string(proto.PageDownloadProgressStateCompleted) {
		d.err = errors.New("chromium cancelled the download")
		return
	}
	path := t.downloadPath(n.guid)
	defer func() { _ = os.Remove(path) }()
	f, err := openRegular(path) // download_file_*.go
	if err != nil {
		d.err = fmt.Errorf("open the downloaded file: %w", err)
		return
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxPDFBytes+1))
	if err != nil {
		d.err = fmt.Errorf("read the downloaded file: %w", err)
		return
	}
	if len(data) > MaxPDFBytes {
		d.tooLarge, data = true, data[:1024]
	}
	d.data = data
}

// readDownloadHead returns the first KiB of a download's file, finished or not.
func readDownloadHead(path string) ([]byte, error) {
	for _, p := range []string{path + partSuffix, path} {
		f, err := openRegular(p)
		if err != nil {
			continue
		}
		buf := make([]byte, 1024)
		n, err := io.ReadFull(f, buf)
		_ = f.Close()
		if err == nil || errors.Is(err, io.ErrUnexpectedEOF) {
			return buf[:n], nil
		}
	}
	return nil, errors.New("no downloaded file")
}

// downloadPath is where the finished download guid lies.
func (t *tab) downloadPath(guid string) string { return filepath.Join(t.dlDir, filepath.Base(guid)) }

// partSize is the size of download guid's file so far (0 when there is none yet).
func (t *tab) partSize(guid string) int64 {
	var size int64
	for _, p := range []string{t.downloadPath(guid) + partSuffix, t.downloadPath(guid)} {
		if fi, err := os.Lstat(p); err == nil {
			size = max(size, fi.Size())
		}
	}
	return size
}

// clearDownloads removes every file in the tab's download directory (the clean slate; the
// next job's beginJob forgets its download).
func (t *tab) clearDownloads() error {
	if t.dlDir == "" {
		return nil
	}
	entries, err := os.ReadDir(t.dlDir)
	if err != nil {
		return fmt.Errorf("read the download directory: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(t.dlDir, e.Name())); err != nil {
			return fmt.Errorf("remove a download: %w", err)
		}
	}
	return nil
}

// setDownloadBehavior has a launched Chromium download the context's files into a directory
// of the tab's own, and a remote browser refuse every download (its Document responses are
// paused instead).
func (t *tab) setDownloadBehavior(rb *rod.Browser) error {
	b := proto.BrowserSetDownloadBehavior{Behavior: proto.BrowserSetDownloadBehaviorBehaviorDeny, BrowserContextID: t.contextID}
	if t.inst.dir != "" {
		dir, err := t.inst.downloadDir()
		if err != nil {
			return err
		}
		t.dlDir = dir
		b.Behavior, b.DownloadPath = proto.BrowserSetDownloadBehaviorBehaviorAllowAndName, dir
	}
	if err := b.Call(rb); err != nil {
		return fmt.Errorf("set the download behaviour: %w", err)
	}
	return nil
}

// downloadDir creates a directory in the profile for one tab's downloads, owned by the user
// Chromium runs as.
func (inst *instance) downloadDir() (string, error) {
	dir, err := os.MkdirTemp(inst.dir, "downloads-")
	if err != nil {
		return "", fmt.Errorf("create a download directory: %w", err)
	}
	cred, err := inst.cfg.chromeCredential(os.Geteuid())
	if err == nil && cred != nil {
		err = os.Chown(dir, int(cred.uid), int(cred.gid))
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("give the download directory to chromium's user: %w", err)
	}
	return dir, nil
}
