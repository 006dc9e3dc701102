package artifacts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/internal/testenv"
)

// testConfig describes the local MinIO started by scripts/services.sh, with a
// bucket of its own so parallel test runs never see each other's objects.
func testConfig(t *testing.T) artifacts.Config {
	t.Helper()
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	cfg := artifacts.DefaultConfig()
	cfg.Endpoint = env("SNAPQ_S3_ENDPOINT", "127.0.0.1:9000")
	cfg.AccessKey = env("SNAPQ_S3_ACCESS_KEY", "snapq")
	cfg.SecretKey = env("SNAPQ_S3_SECRET_KEY", "snapqsecret")
	cfg.UseSSL = env("SNAPQ_S3_USE_SSL", "false") == "true"
	cfg.Bucket = "snapq-test-" + testenv.RandomSuffix(6)
	return cfg
}

// requireMinIO fails under CI=true and skips elsewhere when nothing listens on
// the endpoint.
func requireMinIO(t *testing.T, cfg artifacts.Config) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", cfg.Endpoint, 2*time.Second)
	if err == nil {
		conn.Close()
		return
	}
	testenv.Unavailable(t, "MinIO at "+cfg.Endpoint, err)
}

// setup returns a Store on a fresh bucket that is removed with its objects
// when the test ends.
func setup(t *testing.T) (*artifacts.Store, artifacts.Config) {
	t.Helper()
	cfg := testConfig(t)
	requireMinIO(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := artifacts.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := artifacts.DestroyBucket(ctx, s); err != nil {
			t.Errorf("remove bucket %s: %v", cfg.Bucket, err)
		}
	})
	return s, cfg
}

func fetch(t *testing.T, rawURL string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(rawURL)
	if err != nil {
		t.Fatalf("GET presigned URL: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read presigned body: %v", err)
	}
	return resp.StatusCode, resp.Header, body
}

func hexSHA(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestStoreRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	key := artifacts.Key("batches", "b1", "jobs", "j1", "page-001.png")
	data := bytes.Repeat([]byte("\x89PNG fake image bytes "), 1000)

	put, err := s.Put(ctx, key, data, "image/png", artifacts.PutOptions{})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	want := artifacts.Object{Key: key, Bytes: int64(len(data)), SHA256: hexSHA(data), ContentType: "image/png"}
	if put != want {
		t.Errorf("Put = %+v, want %+v", put, want)
	}

	stat, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if stat.Modified.IsZero() {
		t.Errorf("Stat: no last-modified time")
	}
	stat.Modified = time.Time{}
	if stat != want {
		t.Errorf("Stat = %+v, want %+v (size and X-Amz-Meta-Sha256 as stored)", stat, want)
	}

	got, obj, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("Get returned %d bytes that differ from the %d put", len(got), len(data))
	}
	obj.Modified = time.Time{}
	if obj != want {
		t.Errorf("Get object = %+v, want %+v", obj, want)
	}

	link, err := s.PresignGet(ctx, key, "example.com page 1.png")
	if err != nil {
		t.Fatalf("PresignGet: %v", err)
	}
	status, hdr, body := fetch(t, link)
	if status != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("presigned GET = %d with %d bytes, want 200 with the %d bytes put", status, len(body), len(data))
	}
	if cd := hdr.Get("Content-Disposition"); cd != `attachment; filename="example.com page 1.png"` {
		t.Errorf("presigned GET Content-Disposition = %q, want the attachment filename", cd)
	}
	if ct := hdr.Get("Content-Type"); ct != "image/png" {
		t.Errorf("presigned GET Content-Type = %q, want image/png", ct)
	}

	// A link whose signature was altered must be refused.
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	sig := q.Get("X-Amz-Signature")
	if sig == "" {
		t.Fatalf("presigned URL has no X-Amz-Signature: %s", link)
	}
	flipped := "0"
	if sig[0] == '0' {
		flipped = "1"
	}
	q.Set("X-Amz-Signature", flipped+sig[1:])
	u.RawQuery = q.Encode()
	if status, _, _ := fetch(t, u.String()); status != http.StatusForbidden {
		t.Errorf("presigned GET with a tampered signature = %d, want 403", status)
	}

	// A retried upload under the same key replaces the object.
	data2 := []byte("second attempt")
	if _, err := s.Put(ctx, key, data2, "image/png", artifacts.PutOptions{}); err != nil {
		t.Fatalf("Put again: %v", err)
	}
	got, obj, err = s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get after overwrite: %v", err)
	}
	if !bytes.Equal(got, data2) || obj.SHA256 != hexSHA(data2) || obj.Bytes != int64(len(data2)) {
		t.Errorf("after overwrite Get = %q %+v, want %q with its own size and sha256", got, obj, data2)
	}
	link, err = s.PresignGet(ctx, key, "")
	if err != nil {
		t.Fatalf("PresignGet: %v", err)
	}
	if status, _, body := fetch(t, link); status != http.StatusOK || !bytes.Equal(body, data2) {
		t.Errorf("presigned GET after overwrite = %d %q, want 200 %q", status, body, data2)
	}
}

func TestStoreContentDispositionAndType(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	key := artifacts.Key("jobs", "j2", "page.html")
	if _, err := s.Put(ctx, key, []byte("<h1>hi</h1>"), "text/html; charset=utf-8",
		artifacts.PutOptions{ContentDisposition: `attachment; filename="page.html"`}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	link, err := s.PresignGet(ctx, key, "")
	if err != nil {
		t.Fatalf("PresignGet: %v", err)
	}
	status, hdr, _ := fetch(t, link)
	if status != http.StatusOK || hdr.Get("Content-Disposition") != `attachment; filename="page.html"` {
		t.Errorf("presigned GET = %d, Content-Disposition %q; want 200 with the stored disposition", status, hdr.Get("Content-Disposition"))
	}

	// Non-ASCII names and directory parts.
	link, err = s.PresignGet(ctx, key, "../../页面.html")
	if err != nil {
		t.Fatalf("PresignGet: %v", err)
	}
	_, hdr, _ = fetch(t, link)
	if cd := hdr.Get("Content-Disposition"); cd != "attachment; filename*=utf-8''%E9%A1%B5%E9%9D%A2.html" {
		t.Errorf("Content-Disposition = %q, want an RFC 2231 name without directories", cd)
	}

	// No content type means a generic binary.
	obj, err := s.Put(ctx, artifacts.Key("jobs", "j2", "blob"), []byte{1, 2, 3}, "", artifacts.PutOptions{})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if st, err := s.Stat(ctx, obj.Key); err != nil || st.ContentType != "application/octet-stream" {
		t.Errorf("Stat = %+v, %v; want application/octet-stream", st, err)
	}
}

func TestStoreExpiredLink(t *testing.T) {
	t.Parallel()
	s, cfg := setup(t)
	ctx := context.Background()
	key := artifacts.Key("short", "lived.txt")
	if _, err := s.Put(ctx, key, []byte("soon gone"), "text/plain", artifacts.PutOptions{}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	cfg.PresignExpiry = time.Second
	short, err := artifacts.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	link, err := short.PresignGet(ctx, key, "")
	if err != nil {
		t.Fatalf("PresignGet: %v", err)
	}
	time.Sleep(2100 * time.Millisecond)
	if status, _, _ := fetch(t, link); status != http.StatusForbidden {
		t.Errorf("GET of an expired link = %d, want 403", status)
	}
}

func TestStorePublicURL(t *testing.T) {
	t.Parallel()
	s, cfg := setup(t)
	ctx := context.Background()
	key := artifacts.Key("public", "x.txt")
	if _, err := s.Put(ctx, key, []byte("via the public name"), "text/plain", artifacts.PutOptions{}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	// The same MinIO under another name, as a browser outside Docker sees it.
	host, port, err := net.SplitHostPort(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	public := "localhost"
	if host == "localhost" {
		public = "127.0.0.1"
	}
	scheme := "http://"
	if cfg.UseSSL {
		scheme = "https://"
	}
	cfg.PublicURL = scheme + net.JoinHostPort(public, port)
	pub, err := artifacts.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New with PublicURL: %v", err)
	}
	link, err := pub.PresignGet(ctx, key, "")
	if err != nil {
		t.Fatalf("PresignGet: %v", err)
	}
	if !strings.HasPrefix(link, cfg.PublicURL+"/") {
		t.Errorf("PresignGet = %s, want a link on %s", link, cfg.PublicURL)
	}
	if status, _, body := fetch(t, link); status != http.StatusOK || string(body) != "via the public name" {
		t.Errorf("GET public link = %d %q, want 200 with the object", status, body)
	}
}

func TestStoreMissingAndInvalid(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()

	_, err := s.Stat(ctx, "no/such/key")
	if !errors.Is(err, artifacts.ErrNotFound) || artifacts.IsTransient(err) {
		t.Errorf("Stat(missing) = %v, want ErrNotFound, not transient", err)
	}
	_, _, err = s.Get(ctx, "no/such/key")
	if !errors.Is(err, artifacts.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "no/such/key"); err != nil {
		t.Errorf("Delete(missing) = %v, want nil", err)
	}

	for _, key := range []string{"", "/abs", "a/../b", "a//b", "./a", `a\b`} {
		if _, err := s.Put(ctx, key, []byte("x"), "", artifacts.PutOptions{}); !errors.Is(err, artifacts.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
	}

	key := artifacts.Key("to", "delete")
	if _, err := s.Put(ctx, key, []byte("x"), "", artifacts.PutOptions{}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(ctx, key); !errors.Is(err, artifacts.ErrNotFound) {
		t.Errorf("Stat after Delete = %v, want ErrNotFound", err)
	}
}

func TestStoreDetectsCorruption(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	key := artifacts.Key("rot", "x.bin")
	if err := artifacts.PutRaw(ctx, s, key, []byte("flipped bits"), hexSHA([]byte("original bits"))); err != nil {
		t.Fatalf("PutRaw: %v", err)
	}
	if _, _, err := s.Get(ctx, key); !errors.Is(err, artifacts.ErrIntegrity) {
		t.Errorf("Get of an object whose bytes differ from its sha256 = %v, want ErrIntegrity", err)
	}
}

func TestNewConcurrentCreators(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	requireMinIO(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const n = 6
	stores := make([]*artifacts.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = artifacts.New(ctx, cfg) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("New #%d on a bucket created concurrently: %v", i, err)
		}
	}
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() {
				if err := artifacts.DestroyBucket(context.Background(), s); err != nil {
					t.Errorf("remove bucket: %v", err)
				}
			})
			break
		}
	}
	for _, s := range stores {
		if s == nil {
			continue
		}
		if err := s.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	}
}

func TestNewPermanentAndTransientFailures(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	requireMinIO(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	bad := cfg
	bad.SecretKey = "not-the-secret"
	_, err := artifacts.New(ctx, bad)
	if err == nil || artifacts.IsTransient(err) {
		t.Errorf("New with a wrong secret key = %v, want a permanent error", err)
	}
	t.Logf("wrong secret: %v", err)

	// Nothing listens on this port: the error must say "retry later".
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	down := cfg
	down.Endpoint = closed
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	_, err = artifacts.New(short, down)
	if err == nil || !artifacts.IsTransient(err) || !errors.Is(err, artifacts.ErrUnavailable) {
		t.Errorf("New against a closed port = %v, want ErrUnavailable (transient)", err)
	}
	t.Logf("closed port: %v", err)
	if err != nil && !strings.Contains(err.Error(), cfg.Bucket) {
		t.Errorf("error %q does not name the bucket", err)
	}
}

// List pages through a prefix in key order, a bounded page at a time, and
// stamps each object with its last-modified time.
func TestList(t *testing.T) {
	s, _ := setup(t)
	ctx := context.Background()
	before := time.Now().Add(-time.Minute)
	var keys []string
	for _, k := range []string{"batches/b/jobs/j/c.png", "batches/b/jobs/j/a.png", "batches/a/jobs/j/x.png", "other/z.png"} {
		if _, err := s.Put(ctx, k, []byte(k), "", artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after := ""
	for {
		page, err := s.List(ctx, "batches/", after, 2)
		if err != nil {
			t.Fatalf("List after %q: %v", after, err)
		}
		for _, o := range page {
			keys = append(keys, o.Key)
			if o.Bytes != int64(len(o.Key)) || o.Modified.Before(before) {
				t.Errorf("List: %s is %d bytes, modified %v; want %d bytes, modified after %v", o.Key, o.Bytes, o.Modified, len(o.Key), before)
			}
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].Key
	}
	want := []string{"batches/a/jobs/j/x.png", "batches/b/jobs/j/a.png", "batches/b/jobs/j/c.png"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("List pages = %v; want %v", keys, want)
	}
}
