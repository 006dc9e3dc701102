package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// PingTimeout bounds Ping when the caller's context has no earlier deadline.
const PingTimeout = 3 * time.Second

// metaSHA256 is the user-metadata name of the hex SHA-256; on the wire it is
// the X-Amz-Meta-Sha256 header.
const metaSHA256 = "Sha256"

const defaultContentType = "application/octet-stream"

// Object describes a stored object.
type Object struct {
	Key         string
	Bytes       int64
	SHA256      string // lowercase hex; "" for objects not written by Put
	ContentType string
	// Modified is when the object was last written (or touched); List and
	// Stat set it.
	Modified time.Time
	// Reused is true when PutContent found the bytes already stored and
	// uploaded nothing.
	Reused bool
}

// PutOptions are optional settings for Put.
type PutOptions struct {
	// ContentDisposition is stored with the object and sent on every GET
	// that does not override it, e.g. `attachment; filename="page.html"`.
	ContentDisposition string
}

// Store reads and writes artifacts in one bucket. It is safe for concurrent
// use.
type Store struct {
	client  *minio.Client
	presign *minio.Client // signs links for Config.PublicURL; same as client when unset
	bucket  string
	expiry  time.Duration
}

// New connects to the storage service and creates the bucket, private, when
// it is missing. Several processes may call New at once: a bucket created by
// a concurrent caller with the same credentials is fine. An unreachable
// service yields an error for which IsTransient is true.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("artifacts config: %w", err)
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.UseSSL,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts client for %s: %w", cfg.Endpoint, err)
	}
	s := &Store{client: client, presign: client, bucket: cfg.Bucket, expiry: cfg.PresignExpiry}
	if err := s.ensureBucket(ctx, cfg.Region); err != nil {
		return nil, err
	}
	if cfg.PublicURL != "" {
		if s.presign, err = newPresignClient(ctx, cfg, client); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newPresignClient builds a client for the public host. Signing is offline
// as long as the region is known, so the public host never has to be
// reachable from here; the region comes from the config or from the server.
func newPresignClient(ctx context.Context, cfg Config, internal *minio.Client) (*minio.Client, error) {
	u, err := parsePublicURL(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("artifacts config: SNAPQ_S3_PUBLIC_URL: %w", err)
	}
	region := cfg.Region
	if region == "" {
		if region, err = internal.GetBucketLocation(ctx, cfg.Bucket); err != nil {
			return nil, wrap("bucket location", cfg.Bucket, err)
		}
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: u.Scheme == "https",
		Region: region,
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts client for %s: %w", cfg.PublicURL, err)
	}
	return c, nil
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

func (s *Store) ensureBucket(ctx context.Context, region string) error {
	exists, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return wrap("check bucket", s.bucket, err)
	}
	if exists {
		return nil
	}
	// New buckets have no policy, so they are private.
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code == "BucketAlreadyOwnedByYou" {
		return nil // created concurrently by another snapq process
	}
	if errors.As(err, &resp) && resp.Code == "BucketAlreadyExists" {
		return fmt.Errorf("create bucket %s: the name is taken by another account; choose another SNAPQ_S3_BUCKET: %w", s.bucket, err)
	}
	return wrap("create bucket", s.bucket, err)
}

// Put stores data under key, replacing any object already there (a job's
// attempts write keys of their own, jobs.AttemptKey, so one never replaces
// another's). The
// SHA-256 of data is recorded as X-Amz-Meta-Sha256 and returned; the server
// checks the upload against a Content-MD5 header (per part for multipart
// uploads above 16 MiB). An empty contentType stores application/octet-stream.
func (s *Store) Put(ctx context.Context, key string, data []byte, contentType string, opts PutOptions) (Object, error) {
	if err := checkKey(key); err != nil {
		return Object{}, fmt.Errorf("put %s: %w", key, err)
	}
	if contentType == "" {
		contentType = defaultContentType
	}
	sum := sha256.Sum256(data)
	obj := Object{
		Key:         key,
		Bytes:       int64(len(data)),
		SHA256:      hex.EncodeToString(sum[:]),
		ContentType: contentType,
	}
	_, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(data), obj.Bytes, minio.PutObjectOptions{
		ContentType:        contentType,
		ContentDisposition: opts.ContentDisposition,
		UserMetadata:       map[string]string{metaSHA256: obj.SHA256},
		SendContentMd5:     true,
	})
	if err != nil {
		return Object{}, wrap("put", key, err)
	}
	return obj, nil
}

// Stat describes the object at key without reading it. A missing key yields
// an error matching ErrNotFound.
func (s *Store) Stat(ctx context.Context, key string) (Object, error) {
	if err := checkKey(key); err != nil {
		return Object{}, fmt.Errorf("stat %s: %w", key, err)
	}
	info, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, wrap("stat", key, err)
	}
	return objectFrom(key, info), nil
}

// Get reads the whole object at key into memory (artifacts are at most tens
// of MiB) and checks it against its recorded SHA-256: a mismatch yields an
// error matching ErrIntegrity. A missing key yields ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) ([]byte, Object, error) {
	if err := checkKey(key); err != nil {
		return nil, Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	r, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Object{}, wrap("get", key, err)
	}
	defer r.Close()
	info, err := r.Stat()
	if err != nil {
		return nil, Object{}, wrap("get", key, err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, Object{}, wrap("get", key, err)
	}
	obj := objectFrom(key, info)
	if obj.SHA256 != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != obj.SHA256 {
			return nil, Object{}, fmt.Errorf("get %s: %w: read %s, recorded %s", key, ErrIntegrity, got, obj.SHA256)
		}
	}
	return data, obj, nil
}

// Delete removes the object at key. Deleting a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return wrap("delete", key, s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}))
}

// MaxListPage is the most objects one List call returns.
const MaxListPage = 1000

// List returns up to limit objects (at most MaxListPage) whose keys start
// with prefix and sort after startAfter ("" for the first page), in key
// order, in one request. A page shorter than limit is the last one; the next
// page starts after the last key returned. SHA256 and ContentType are not
// filled in: listings do not carry them.
func (s *Store) List(ctx context.Context, prefix, startAfter string, limit int) ([]Object, error) {
	if limit <= 0 || limit > MaxListPage {
		limit = MaxListPage
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops minio-go's lister after the page we need
	objs := make([]Object, 0, limit)
	for info := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{
		Prefix: prefix, StartAfter: startAfter, Recursive: true, MaxKeys: limit,
	}) {
		if info.Err != nil {
			return nil, wrap("list", prefix, info.Err)
		}
		objs = append(objs, Object{Key: info.Key, Bytes: info.Size, Modified: info.LastModified})
		if len(objs) == limit {
			break
		}
	}
	return objs, nil
}

// PresignGet returns a GET link for key, on Config.PublicURL when set, valid
// for the configured PresignExpiry. With a non-empty filename the response carries
// `Content-Disposition: attachment; filename=...`, so browsers save the file
// under that name and never render captured HTML on the storage origin;
// directory parts of filename are dropped. Links are generated on demand and
// must not be stored: they stop working when they expire. The key's existence
// is not checked.
func (s *Store) PresignGet(ctx context.Context, key, filename string) (string, error) {
	return s.PresignGetAs(ctx, key, filename, "")
}

// PresignGetAs is PresignGet whose response also carries Content-Type
// contentType when it is not empty: a content-addressed object (PutContent)
// may be shared by artifacts of different types, and each link serves the
// bytes as its own artifact's.
func (s *Store) PresignGetAs(ctx context.Context, key, filename, contentType string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("presign %s: %w", key, err)
	}
	params := url.Values{}
	if cd := attachment(filename); cd != "" {
		params.Set("response-content-disposition", cd)
	}
	if contentType != "" {
		params.Set("response-content-type", contentType)
	}
	u, err := s.presign.PresignedGetObject(ctx, s.bucket, key, s.expiry, params)
	if err != nil {
		return "", wrap("presign", key, err)
	}
	return u.String(), nil
}

// Ping checks that the service answers and the bucket exists, within
// PingTimeout. It is meant for readiness probes.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	exists, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return wrap("ping bucket", s.bucket, err)
	}
	if !exists {
		return fmt.Errorf("ping bucket %s: bucket does not exist", s.bucket)
	}
	return nil
}

func objectFrom(key string, info minio.ObjectInfo) Object {
	return Object{
		Key:         key,
		Bytes:       info.Size,
		SHA256:      info.UserMetadata[metaSHA256],
		ContentType: info.ContentType,
		Modified:    info.LastModified,
	}
}

// attachment builds a Content-Disposition value for filename, or "" when no
// usable name is left. Non-ASCII names are encoded per RFC 2231.
func attachment(filename string) string {
	if i := strings.LastIndexAny(filename, `/\`); i >= 0 {
		filename = filename[i+1:]
	}
	filename = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '_'
		}
		return r
	}, strings.TrimSpace(filename))
	if filename == "" || filename == "." || filename == ".." {
		return ""
	}
	return mime.FormatMediaType("attachment", map[string]string{"filename": filename})
}

// Open streams the object at key from offset to its end; the caller closes
// it. Nothing is buffered beyond what the connection holds, and the bytes are
// not checked against the recorded SHA-256 (a reader of a part cannot): use
// Get for that. A missing key yields an error matching ErrNotFound on Open or
// on the first Read.
func (s *Store) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	var opts minio.GetObjectOptions
	if offset > 0 {
		if err := opts.SetRange(offset, 0); err != nil {
			return nil, fmt.Errorf("open %s: %w", key, err)
		}
	}
	r, err := s.client.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		return nil, wrap("open", key, err)
	}
	return r, nil
}
