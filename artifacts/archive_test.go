package artifacts_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/artifacts"
)

// memObjects is an Opener over objects in memory that records what it opened.
type memObjects struct {
	mu     sync.Mutex
	data   map[string][]byte
	opened []string
}

func (m *memObjects) open(_ context.Context, key string, offset int64) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opened = append(m.opened, key)
	d, ok := m.data[key]
	if !ok {
		return nil, artifacts.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(d[offset:])), nil
}

func testArchive(t *testing.T) (*artifacts.Archive, *memObjects, map[string][]byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	objs := &memObjects{data: map[string][]byte{}}
	want := map[string][]byte{}
	files := []artifacts.ArchiveFile{{Path: "manifest.json", Data: []byte(`{"files":3}`)}}
	want["manifest.json"] = files[0].Data
	for i, size := range []int{70000, 0, 123457} {
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		key := fmt.Sprintf("content/k%d", i)
		path := fmt.Sprintf("job-%d/page-%03d.png", i, i)
		objs.data[key] = data
		want[path] = data
		files = append(files, artifacts.ArchiveFile{Path: path, Key: key, Bytes: int64(size),
			CRC32: crc32.ChecksumIEEE(data), Modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	}
	a, err := artifacts.NewArchive(files)
	if err != nil {
		t.Fatal(err)
	}
	return a, objs, want
}

// The archive is a valid ZIP of exactly its files, Size long, and every range
// of it is the same bytes as that part of the whole: a re-request with Range
// continues a download byte for byte.
func TestArchiveRanges(t *testing.T) {
	t.Parallel()
	a, objs, want := testArchive(t)
	ctx := context.Background()
	var full bytes.Buffer
	if err := a.WriteRange(ctx, &full, 0, a.Size(), objs.open); err != nil {
		t.Fatal(err)
	}
	if int64(full.Len()) != a.Size() {
		t.Fatalf("wrote %d bytes, Size says %d", full.Len(), a.Size())
	}
	zr, err := zip.NewReader(bytes.NewReader(full.Bytes()), int64(full.Len()))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	if len(zr.File) != len(want) {
		t.Errorf("%d files, want %d", len(zr.File), len(want))
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc) // checks the CRC-32
		rc.Close()
		if err != nil || !bytes.Equal(got, want[f.Name]) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", f.Name, len(got), err, len(want[f.Name]))
		}
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want Store", f.Name, f.Method)
		}
	}
	for _, r := range [][2]int64{{0, 10}, {5, 100000}, {70100, 70200}, {100000, a.Size()}, {a.Size() - 1, a.Size()}} {
		var part bytes.Buffer
		if err := a.WriteRange(ctx, &part, r[0], r[1], objs.open); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(part.Bytes(), full.Bytes()[r[0]:r[1]]) {
			t.Errorf("range %d-%d differs from the whole archive's bytes", r[0], r[1])
		}
	}
	// The central directory alone reads no object.
	objs.opened = nil
	if err := a.WriteRange(ctx, io.Discard, a.Size()-50, a.Size(), objs.open); err != nil {
		t.Fatal(err)
	}
	if len(objs.opened) != 0 {
		t.Errorf("the archive's last 50 bytes opened %v, want no object", objs.opened)
	}
}

// Served with http.ServeContent, the archive answers ranges and If-Range.
func TestArchiveServeContent(t *testing.T) {
	t.Parallel()
	a, objs, _ := testArchive(t)
	var full bytes.Buffer
	if err := a.WriteRange(context.Background(), &full, 0, a.Size(), objs.open); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs := a.Reader(r.Context(), objs.open)
		defer rs.Close()
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "a.zip", time.Time{}, rs)
	}))
	defer srv.Close()
	get := func(header ...string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	resp, body := get()
	if resp.StatusCode != 200 || !bytes.Equal(body, full.Bytes()) || resp.ContentLength != a.Size() {
		t.Errorf("GET: %d, %d bytes (Content-Length %d), want the whole archive", resp.StatusCode, len(body), resp.ContentLength)
	}
	resp, body = get("Range", "bytes=100000-")
	if resp.StatusCode != 206 || !bytes.Equal(body, full.Bytes()[100000:]) ||
		!strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes 100000-") {
		t.Errorf("resumed GET: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
	}
	resp, _ = get("Range", "bytes=100000-", "If-Range", `"v0"`)
	if resp.StatusCode != 200 {
		t.Errorf("GET with a stale If-Range: %d, want 200 and the whole archive", resp.StatusCode)
	}
}
