package artifacts

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

const (
	// DefaultPresignExpiry is how long a presigned link stays valid unless
	// SNAPQ_PRESIGN_EXPIRY says otherwise.
	DefaultPresignExpiry = 15 * time.Minute
	// MaxPresignExpiry is the longest lifetime S3 accepts for a presigned link.
	MaxPresignExpiry = 7 * 24 * time.Hour
	// minPresignExpiry is the shortest lifetime minio-go accepts.
	minPresignExpiry = time.Second
)

// Config says where artifacts are stored. cmd/ fills it from the SNAPQ_S3_*
// environment variables named in each field's comment.
type Config struct {
	// Endpoint is host[:port] of the S3 service, without a scheme
	// (SNAPQ_S3_ENDPOINT). Default 127.0.0.1:9000, the local MinIO.
	Endpoint string
	// AccessKey and SecretKey are the credentials (SNAPQ_S3_ACCESS_KEY,
	// SNAPQ_S3_SECRET_KEY). No default.
	AccessKey string
	SecretKey string
	// Bucket holds every artifact (SNAPQ_S3_BUCKET). Default "snapq". It is
	// created, private, when missing.
	Bucket string
	// UseSSL selects https (SNAPQ_S3_USE_SSL). Default false, for the
	// loopback MinIO; set it for anything reached over a network.
	UseSSL bool
	// Region of the bucket (SNAPQ_S3_REGION). Default empty: looked up from
	// the server on first use (MinIO answers us-east-1).
	Region string
	// PublicURL is the scheme://host[:port] that people's browsers use to
	// reach the storage service, when it differs from Endpoint
	// (SNAPQ_S3_PUBLIC_URL), e.g. Endpoint "minio:9000" inside Docker and
	// PublicURL "http://127.0.0.1:9000" on the host. A presigned link is
	// signed for one host, so it only works where that host resolves.
	// Default empty: links point at Endpoint.
	PublicURL string
	// PresignExpiry is the lifetime of links from PresignGet
	// (SNAPQ_PRESIGN_EXPIRY). Default 15m, at most 7 days (168h).
	PresignExpiry time.Duration
}

// DefaultConfig returns the documented defaults. Credentials are left empty:
// they have to be given.
func DefaultConfig() Config {
	return Config{
		Endpoint:      "127.0.0.1:9000",
		Bucket:        "snapq",
		PresignExpiry: DefaultPresignExpiry,
	}
}

// Validate reports every problem in c at once, naming the environment
// variable that sets the field.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch ep := c.Endpoint; {
	case strings.TrimSpace(ep) == "":
		add("SNAPQ_S3_ENDPOINT is required (host[:port], e.g. 127.0.0.1:9000)")
	case strings.Contains(ep, "://"):
		add("SNAPQ_S3_ENDPOINT must be host[:port] without a scheme, got %q (use SNAPQ_S3_USE_SSL=true for https)", ep)
	case strings.ContainsAny(ep, "/?# \t"):
		add("SNAPQ_S3_ENDPOINT must be host[:port] without a path, got %q", ep)
	}
	if c.AccessKey == "" {
		add("SNAPQ_S3_ACCESS_KEY is required")
	}
	if c.SecretKey == "" {
		add("SNAPQ_S3_SECRET_KEY is required")
	}
	if c.Bucket == "" {
		add("SNAPQ_S3_BUCKET is required")
	} else if err := s3utils.CheckValidBucketNameStrict(c.Bucket); err != nil {
		add("SNAPQ_S3_BUCKET %q is not a valid bucket name (3-63 lowercase letters, digits, '.' or '-'): %v", c.Bucket, err)
	}
	if c.Region != "" && strings.Trim(c.Region, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		add("SNAPQ_S3_REGION %q is not a region name (e.g. us-east-1)", c.Region)
	}
	if c.PublicURL != "" {
		if _, err := parsePublicURL(c.PublicURL); err != nil {
			add("SNAPQ_S3_PUBLIC_URL: %v", err)
		}
	}
	if c.PresignExpiry < minPresignExpiry || c.PresignExpiry > MaxPresignExpiry {
		add("SNAPQ_PRESIGN_EXPIRY must be between 1s and 168h (7 days), got %s", c.PresignExpiry)
	}
	return errors.Join(errs...)
}

// parsePublicURL accepts http(s)://host[:port] with no path, query or user.
func parsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q must look like http(s)://host[:port]", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%q must be http(s)://host[:port] without a path, query or user", raw)
	}
	return u, nil
}
