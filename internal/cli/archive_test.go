package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/snapq/snapq/client"
)

// fakeArchiveAPI serves one batch (b1) of one job (j1) with two artifacts,
// as its archive and file by file; archive says what the archive route does.
type fakeArchiveAPI struct {
	archive string // "ok", "tampered" (a file's bytes differ from the manifest's sha256), "fail" (500)
	mu      sync.Mutex
	hits    map[string]int
}

var fakeFiles = map[string][]byte{"a1": []byte("png bytes"), "a2": []byte("<p>html</p>")}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func (f *fakeArchiveAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits[r.URL.Path]++
	f.mu.Unlock()
	names := map[string]string{"a1": "shot.png", "a2": "page.html"}
	switch r.URL.Path {
	case "/v1/batches/b1/archive":
		if f.archive == "fail" {
			http.Error(w, `{"error":{"code":"internal","message":"boom"}}`, http.StatusInternalServerError)
			return
		}
		man := client.ArchiveManifest{BatchID: "b1"}
		for _, id := range []string{"a1", "a2"} {
			man.Files = append(man.Files, client.ArchiveFile{Path: "page/" + names[id], JobID: "j1", ArtifactID: id,
				Name: names[id], Bytes: int64(len(fakeFiles[id])), SHA256: sum(fakeFiles[id]), ArtifactURL: "http://x/v1/artifacts/" + id})
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		raw, _ := json.Marshal(man)
		mw, _ := zw.Create("manifest.json")
		mw.Write(raw)
		for _, id := range []string{"a1", "a2"} {
			data := fakeFiles[id]
			if f.archive == "tampered" && id == "a2" {
				data = []byte("<p>HTML</p>")
			}
			fw, _ := zw.Create("page/" + names[id])
			fw.Write(data)
		}
		zw.Close()
		w.Header().Set("Content-Type", "application/zip")
		w.Write(buf.Bytes())
	case "/v1/jobs/j1":
		j := client.Job{ID: "j1", Name: "page", Status: client.JobSucceeded}
		for _, id := range []string{"a1", "a2"} {
			j.Artifacts = append(j.Artifacts, client.Artifact{ID: id, Name: names[id], Bytes: int64(len(fakeFiles[id])),
				SHA256: sum(fakeFiles[id]), URL: "http://x/v1/artifacts/" + id})
		}
		json.NewEncoder(w).Encode(j)
	case "/v1/artifacts/a1", "/v1/artifacts/a2":
		w.Write(fakeFiles[filepath.Base(r.URL.Path)])
	default:
		http.NotFound(w, r)
	}
}

func TestDownloadViaArchive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, archive, via string
		fileRequests       int
	}{
		{"archive", "ok", "archive", 0},
		{"archive route fails", "fail", "files", 2},
		{"archive file does not match its sha256", "tampered", "files", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := &fakeArchiveAPI{archive: tc.archive, hits: map[string]int{}}
			srv := httptest.NewServer(api)
			defer srv.Close()
			c, err := client.New(client.Config{BaseURL: srv.URL, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			a := &app{stdout: io.Discard, stderr: &stderr, c: c}
			out := t.TempDir()
			m, err := a.download(context.Background(), &client.Batch{ID: "b1"}, []client.Job{{ID: "j1", Name: "page"}}, out)
			if err != nil {
				t.Fatalf("download: %v", err)
			}
			if m.Via != tc.via || api.hits["/v1/batches/b1/archive"] != 1 ||
				api.hits["/v1/artifacts/a1"]+api.hits["/v1/artifacts/a2"] != tc.fileRequests {
				t.Errorf("via %q, requests %v; want via %q, one archive request and %d file requests", m.Via, api.hits, tc.via, tc.fileRequests)
			}
			for id, name := range map[string]string{"a1": "shot.png", "a2": "page.html"} {
				got, err := os.ReadFile(filepath.Join(out, "page", name))
				if err != nil || !bytes.Equal(got, fakeFiles[id]) {
					t.Errorf("%s: %q, %v; want %q", name, got, err, fakeFiles[id])
				}
			}
			entries, _ := os.ReadDir(out)
			if len(entries) != 2 { // page/ and manifest.json: the archive is gone
				t.Errorf("%s holds %d entries, want page/ and manifest.json", out, len(entries))
			}
			if (tc.via == "files") != bytes.Contains(stderr.Bytes(), []byte("downloading file by file")) {
				t.Errorf("stderr %q", stderr.String())
			}
		})
	}
}
