package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/snapq/snapq/internal/testenv"
)

// bucketUsage sums the objects in the stack's bucket under prefix.
func (s *stack) bucketUsage(prefix string) (objects int, bytes int64) {
	s.t.Helper()
	mc, err := testenv.LocalS3().Client(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	for o := range mc.ListObjects(context.Background(), s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			s.t.Fatal(o.Err)
		}
		objects++
		bytes += o.Size
	}
	return objects, bytes
}

// get fetches path and returns the response with its body read.
func (s *stack) get(path string, headers ...string) (*http.Response, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.api+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	return resp, body
}

type archiveManifest struct {
	BatchID string `json:"batch_id"`
	Files   []struct {
		Path        string `json:"path"`
		JobID       string `json:"job_id"`
		Name        string `json:"name"`
		Bytes       int64  `json:"bytes"`
		SHA256      string `json:"sha256"`
		ArtifactURL string `json:"artifact_url"`
	} `json:"files"`
}

// checkArchive unzips a batch archive and checks every file against the
// manifest's size and SHA-256; it returns the manifest.
func checkArchive(t *testing.T, body []byte) archiveManifest {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("the archive is not a zip: %v", err)
	}
	if len(zr.File) == 0 || zr.File[0].Name != "manifest.json" {
		t.Fatalf("the archive does not start with manifest.json")
	}
	var man archiveManifest
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc) // checks each file's CRC-32
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		files[f.Name] = data
	}
	if err := json.Unmarshal(files["manifest.json"], &man); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(man.Files) != len(zr.File)-1 {
		t.Errorf("manifest names %d files, the archive holds %d", len(man.Files), len(zr.File)-1)
	}
	for _, mf := range man.Files {
		sum := sha256.Sum256(files[mf.Path])
		if hex.EncodeToString(sum[:]) != mf.SHA256 || int64(len(files[mf.Path])) != mf.Bytes {
			t.Errorf("%s: %d bytes, sha256 %x; manifest says %d, %s", mf.Path, len(files[mf.Path]), sum, mf.Bytes, mf.SHA256)
		}
	}
	return man
}

// A second identical batch adds rows, not bytes: the bucket's content
// objects are the same before and after it. Its archive streams every
// artifact with a manifest whose SHA-256s match the unzipped files, the same
// bytes on every request, and a ranged re-request continues it.
func TestStorageDedupAndArchive(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	site := fixtureSite(t)
	targets := []map[string]any{
		{"url": site + "/tall?h=2000", "name": "tall"},
		{"url": site + "/short", "name": "short"},
		{"url": site + "/article", "name": "article", "options": map[string]any{"outputs": []string{"screenshot", "html", "markdown"}}},
	}
	submit := func() batchResp {
		t.Helper()
		var b batchResp
		if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets}, &b); code != http.StatusAccepted {
			t.Fatalf("submit: status %d", code)
		}
		done := s.waitBatch(b.ID, 2*time.Minute)
		if done.Counts["succeeded"] != len(targets) {
			t.Fatalf("batch %s: %v, want all succeeded", b.ID, done.Counts)
		}
		return b
	}
	submit()
	objs1, bytes1 := s.bucketUsage("")
	second := submit()
	objs2, bytes2 := s.bucketUsage("")
	t.Logf("bucket after run 1: %d objects, %d bytes; after run 2: %d objects, %d bytes", objs1, bytes1, objs2, bytes2)
	if objs2 != objs1 || bytes2 > bytes1*105/100 {
		t.Errorf("the second identical batch grew the bucket from %d objects, %d bytes to %d, %d", objs1, bytes1, objs2, bytes2)
	}
	if n, _ := s.bucketUsage("batches/"); n != 0 {
		t.Errorf("%d objects under batches/, want every artifact content-addressed", n)
	}

	// /metrics: what the rows name is what the bucket holds, and the second
	// batch's bytes were not stored again.
	_, metrics := s.get("/metrics")
	gauge := func(name string) float64 {
		for _, line := range strings.Split(string(metrics), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				var f float64
				fmt.Sscan(v, &f)
				return f
			}
		}
		t.Errorf("/metrics has no %s", name)
		return -1
	}
	if got := gauge("snapq_storage_bytes"); int64(got) != bytes2 {
		t.Errorf("snapq_storage_bytes %v, the bucket holds %d", got, bytes2)
	}
	if got := gauge("snapq_storage_objects"); int(got) != objs2 {
		t.Errorf("snapq_storage_objects %v, the bucket holds %d", got, objs2)
	}
	if got := gauge("snapq_storage_deduplicated_bytes"); int64(got) != bytes2 {
		t.Errorf("snapq_storage_deduplicated_bytes %v, want %d (the second batch, stored once)", got, bytes2)
	}

	path := "/v1/batches/" + second.ID + "/archive"
	resp, body := s.get(path)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/zip" ||
		resp.Header.Get("Accept-Ranges") != "bytes" || resp.ContentLength != int64(len(body)) {
		t.Fatalf("GET archive: %d %q, Accept-Ranges %q, Content-Length %d for %d bytes", resp.StatusCode,
			resp.Header.Get("Content-Type"), resp.Header.Get("Accept-Ranges"), resp.ContentLength, len(body))
	}
	man := checkArchive(t, body)
	var sum int64
	for _, f := range man.Files {
		sum += f.Bytes
	}
	if man.BatchID != second.ID || len(man.Files) < 5 {
		t.Errorf("manifest of batch %s names %d files, want the batch's every artifact", man.BatchID, len(man.Files))
	}
	if !strings.HasPrefix(man.Files[0].ArtifactURL, s.api+"/v1/artifacts/") {
		t.Errorf("manifest artifact_url %q, want an API link", man.Files[0].ArtifactURL)
	}
	etag := resp.Header.Get("ETag")
	// A download that broke off halfway resumes where it stopped.
	half := len(body) / 2
	resp, tail := s.get(path, "Range", fmt.Sprintf("bytes=%d-", half), "If-Range", etag)
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(tail, body[half:]) {
		t.Errorf("resumed GET: %d, %d bytes equal to the rest: %v", resp.StatusCode, len(tail), bytes.Equal(tail, body[half:]))
	}
	t.Logf("archive: %d files, %d bytes of artifacts, %d bytes zipped", len(man.Files), sum, len(body))

	// Every job's preview has a thumbnail, 320 px wide, a fraction of the
	// first segment's bytes: what the dashboard's batch page loads.
	var list struct {
		Jobs []struct {
			Name    string `json:"name"`
			Preview *struct {
				URL       string `json:"url"`
				Thumbnail *struct {
					URL   string `json:"url"`
					Width int    `json:"width"`
				} `json:"thumbnail"`
			} `json:"preview"`
		} `json:"jobs"`
	}
	if code := s.do("GET", "/v1/batches/"+second.ID+"/jobs", nil, &list); code != http.StatusOK || len(list.Jobs) != len(targets) {
		t.Fatalf("GET jobs: %d, %d jobs", code, len(list.Jobs))
	}
	var full, thumbs int
	for _, j := range list.Jobs {
		if j.Preview == nil || j.Preview.Thumbnail == nil {
			t.Errorf("%s: no thumbnail in the preview %+v", j.Name, j.Preview)
			continue
		}
		resp, img := s.get(strings.TrimPrefix(j.Preview.Thumbnail.URL, s.api))
		cfg, format, err := image.DecodeConfig(bytes.NewReader(img))
		if resp.StatusCode != http.StatusOK || err != nil || format != "jpeg" || cfg.Width != 320 || j.Preview.Thumbnail.Width != 320 {
			t.Errorf("%s: thumbnail %d, %s %dx%d (%v)", j.Name, resp.StatusCode, format, cfg.Width, cfg.Height, err)
		}
		_, orig := s.get(strings.TrimPrefix(j.Preview.URL, s.api))
		full, thumbs = full+len(orig), thumbs+len(img)
	}
	t.Logf("previews: first segments %d bytes, thumbnails %d bytes (%.1f%%)", full, thumbs, 100*float64(thumbs)/float64(full))
	if thumbs*4 > full {
		t.Errorf("thumbnails %d bytes, first segments %d: want well under a quarter", thumbs, full)
	}
}
