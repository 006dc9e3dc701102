package artifacts_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/snapq/snapq/artifacts"
)

// PutContent stores identical bytes once: the second put uploads nothing,
// moves the object's last-modified time forward (what the orphan sweep
// judges by), and links to the shared object serve each artifact's own name
// and content type.
func TestPutContentStoresOnce(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	data := []byte("<p>the same bytes</p>")
	first, err := s.PutContent(ctx, data, "text/html")
	if err != nil {
		t.Fatalf("PutContent: %v", err)
	}
	sum := sha256.Sum256(data)
	if want := artifacts.ContentKey(hex.EncodeToString(sum[:])); first.Key != want || first.Reused {
		t.Fatalf("first put: key %s reused %v, want %s uploaded", first.Key, first.Reused, want)
	}
	if !artifacts.IsContentKey(first.Key) {
		t.Errorf("IsContentKey(%s) = false", first.Key)
	}
	before, err := s.Stat(ctx, first.Key)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // S3 times have a resolution of a second
	second, err := s.PutContent(ctx, data, "text/plain")
	if err != nil {
		t.Fatalf("second PutContent: %v", err)
	}
	if second.Key != first.Key || !second.Reused || second.SHA256 != first.SHA256 || second.Bytes != first.Bytes {
		t.Errorf("second put = %+v, want the first object reused", second)
	}
	after, err := s.Stat(ctx, first.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Modified.After(before.Modified) {
		t.Errorf("last modified %s after the reuse, %s before: want it moved forward", after.Modified, before.Modified)
	}
	objs, err := s.List(ctx, artifacts.ContentPrefix, "", 0)
	if err != nil || len(objs) != 1 {
		t.Fatalf("content objects %v, %v; want exactly one", objs, err)
	}

	for _, tt := range []struct{ name, filename, contentType string }{
		{"as html", "page.html", "text/html"},
		{"as text", "page.txt", "text/plain"},
	} {
		u, err := s.PresignGetAs(ctx, first.Key, tt.filename, tt.contentType)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != string(data) || resp.Header.Get("Content-Type") != tt.contentType ||
			resp.Header.Get("Content-Disposition") != `attachment; filename=`+tt.filename {
			t.Errorf("%s: %d %q type %q disposition %q", tt.name, resp.StatusCode, body,
				resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"))
		}
	}
}
