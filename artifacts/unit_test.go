package artifacts_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/snapq/snapq/artifacts"
)

func TestKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		parts []string
		want  string
	}{
		{name: "plain", parts: []string{"batches", "b1", "jobs", "j1", "shot.png"}, want: "batches/b1/jobs/j1/shot.png"},
		{name: "part with slashes", parts: []string{"batches/b1", "shot-001.png"}, want: "batches/b1/shot-001.png"},
		{name: "leading slash", parts: []string{"/etc", "passwd"}, want: "etc/passwd"},
		{name: "trailing and double slashes", parts: []string{"a//", "//b/"}, want: "a/b"},
		{name: "empty parts", parts: []string{"", "a", "", "b", ""}, want: "a/b"},
		{name: "dot dot dropped", parts: []string{"jobs", "../../secrets", "x"}, want: "jobs/secrets/x"},
		{name: "single dot dropped", parts: []string{".", "a", "./b"}, want: "a/b"},
		{name: "dots inside a name kept", parts: []string{"a..b", "...", "v1.2.png"}, want: "a..b/.../v1.2.png"},
		{name: "backslash is a separator", parts: []string{`a\..\b`}, want: "a/b"},
		{name: "control characters replaced", parts: []string{"a\x00b", "c\nd"}, want: "a_b/c_d"},
		{name: "unicode kept", parts: []string{"captures", "页面 1.png"}, want: "captures/页面 1.png"},
		{name: "nothing usable", parts: []string{"", "/", "..", "."}, want: ""},
		{name: "no parts", parts: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := artifacts.Key(tt.parts...); got != tt.want {
				t.Errorf("Key(%q) = %q, want %q", tt.parts, got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() artifacts.Config {
		c := artifacts.DefaultConfig()
		c.AccessKey, c.SecretKey = "snapq", "snapqsecret"
		return c
	}
	tests := []struct {
		name    string
		mutate  func(*artifacts.Config)
		wantErr []string // substrings that must all appear; none means valid
	}{
		{name: "defaults with credentials", mutate: func(*artifacts.Config) {}},
		{name: "region and ssl", mutate: func(c *artifacts.Config) { c.Region, c.UseSSL = "eu-west-1", true }},
		{name: "max expiry", mutate: func(c *artifacts.Config) { c.PresignExpiry = artifacts.MaxPresignExpiry }},
		{name: "public url", mutate: func(c *artifacts.Config) { c.PublicURL = "https://files.example.com" }},
		{name: "public url with port", mutate: func(c *artifacts.Config) { c.PublicURL = "http://127.0.0.1:9000/" }},
		{name: "public url without scheme", mutate: func(c *artifacts.Config) { c.PublicURL = "files.example.com" }, wantErr: []string{"SNAPQ_S3_PUBLIC_URL"}},
		{name: "public url with path", mutate: func(c *artifacts.Config) { c.PublicURL = "https://example.com/s3" }, wantErr: []string{"SNAPQ_S3_PUBLIC_URL", "without a path"}},
		{name: "missing endpoint", mutate: func(c *artifacts.Config) { c.Endpoint = "" }, wantErr: []string{"SNAPQ_S3_ENDPOINT is required"}},
		{name: "endpoint with scheme", mutate: func(c *artifacts.Config) { c.Endpoint = "https://s3.example.com" }, wantErr: []string{"SNAPQ_S3_ENDPOINT", "without a scheme", "SNAPQ_S3_USE_SSL"}},
		{name: "endpoint with path", mutate: func(c *artifacts.Config) { c.Endpoint = "s3.example.com/bucket" }, wantErr: []string{"SNAPQ_S3_ENDPOINT", "without a path"}},
		{name: "missing access key", mutate: func(c *artifacts.Config) { c.AccessKey = "" }, wantErr: []string{"SNAPQ_S3_ACCESS_KEY is required"}},
		{name: "missing secret key", mutate: func(c *artifacts.Config) { c.SecretKey = "" }, wantErr: []string{"SNAPQ_S3_SECRET_KEY is required"}},
		{name: "missing bucket", mutate: func(c *artifacts.Config) { c.Bucket = "" }, wantErr: []string{"SNAPQ_S3_BUCKET is required"}},
		{name: "bad bucket name", mutate: func(c *artifacts.Config) { c.Bucket = "My_Bucket" }, wantErr: []string{"SNAPQ_S3_BUCKET", "My_Bucket"}},
		{name: "bad region", mutate: func(c *artifacts.Config) { c.Region = "EU West" }, wantErr: []string{"SNAPQ_S3_REGION"}},
		{name: "zero expiry", mutate: func(c *artifacts.Config) { c.PresignExpiry = 0 }, wantErr: []string{"SNAPQ_PRESIGN_EXPIRY"}},
		{name: "expiry over 7 days", mutate: func(c *artifacts.Config) { c.PresignExpiry = 8 * 24 * time.Hour }, wantErr: []string{"SNAPQ_PRESIGN_EXPIRY", "7 days"}},
		{
			name:    "every problem reported at once",
			mutate:  func(c *artifacts.Config) { *c = artifacts.Config{} },
			wantErr: []string{"SNAPQ_S3_ENDPOINT", "SNAPQ_S3_ACCESS_KEY", "SNAPQ_S3_SECRET_KEY", "SNAPQ_S3_BUCKET", "SNAPQ_PRESIGN_EXPIRY"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := valid()
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to mention %q", err, want)
				}
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	c := artifacts.DefaultConfig()
	if c.PresignExpiry != 15*time.Minute || c.Bucket != "snapq" || c.Endpoint != "127.0.0.1:9000" || c.UseSSL {
		t.Errorf("DefaultConfig() = %+v, want 127.0.0.1:9000, bucket snapq, no SSL, 15m expiry", c)
	}
}

func TestIsTransient(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "503 service unavailable", err: minio.ErrorResponse{Code: "ServiceUnavailable", StatusCode: 503}, want: true},
		{name: "500 internal error", err: minio.ErrorResponse{Code: "InternalError", StatusCode: 500}, want: true},
		{name: "slow down", err: minio.ErrorResponse{Code: "SlowDown", StatusCode: 503}, want: true},
		{name: "429", err: minio.ErrorResponse{Code: "TooManyRequests", StatusCode: 429}, want: true},
		{name: "wrapped 502", err: fmt.Errorf("upload: %w", minio.ErrorResponse{Code: "BadGateway", StatusCode: 502}), want: true},
		{name: "access denied", err: minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403}, want: false},
		{name: "bad signature", err: minio.ErrorResponse{Code: "SignatureDoesNotMatch", StatusCode: 403}, want: false},
		{name: "no such bucket", err: minio.ErrorResponse{Code: "NoSuchBucket", StatusCode: 404}, want: false},
		{name: "wrapped access denied", err: fmt.Errorf("put k: %w", minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403}), want: false},
		{name: "connection refused", err: fmt.Errorf("put k: %w", refused), want: true},
		{name: "unexpected EOF", err: io.ErrUnexpectedEOF, want: true},
		{name: "deadline exceeded", err: context.DeadlineExceeded, want: true},
		{name: "canceled", err: fmt.Errorf("put k: %w", context.Canceled), want: false},
		{name: "unknown host", err: &net.DNSError{Err: "no such host", Name: "s3.invalid", IsNotFound: true}, want: false},
		{name: "dns timeout", err: &net.DNSError{Err: "i/o timeout", Name: "s3.example", IsTimeout: true}, want: true},
		{name: "invalid key", err: artifacts.ErrInvalidKey, want: false},
		{name: "sentinel", err: fmt.Errorf("x: %w", artifacts.ErrUnavailable), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := artifacts.IsTransient(tt.err); got != tt.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// A full disk is its own kind, and still transient: space may be freed
// before the job's retries run out.
func TestStorageFull(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		full, tran bool
	}{
		{name: "minio storage full", err: minio.ErrorResponse{Code: "XMinioStorageFull", StatusCode: 507}, full: true, tran: true},
		{name: "507 without code", err: minio.ErrorResponse{StatusCode: 507}, full: true, tran: true},
		{name: "wrapped", err: fmt.Errorf("put: %w", minio.ErrorResponse{Code: "XMinioStorageFull", StatusCode: 507}), full: true, tran: true},
		{name: "503", err: minio.ErrorResponse{Code: "ServiceUnavailable", StatusCode: 503}, full: false, tran: true},
		{name: "access denied", err: minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403}, full: false, tran: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := artifacts.Wrap("put", "k", tt.err)
			if got := errors.Is(err, artifacts.ErrStorageFull); got != tt.full {
				t.Errorf("errors.Is(%v, ErrStorageFull) = %v, want %v", err, got, tt.full)
			}
			if got := artifacts.IsTransient(err); got != tt.tran {
				t.Errorf("IsTransient(%v) = %v, want %v", err, got, tt.tran)
			}
		})
	}
}
