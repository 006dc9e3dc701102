package artifacts

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/minio/minio-go/v7"
)

var (
	// ErrUnavailable marks a failure worth retrying later: the storage
	// service could not be reached, timed out, or answered 5xx/429/408.
	ErrUnavailable = errors.New("object storage unavailable")
	// ErrStorageFull means the storage service is out of space (MinIO's
	// XMinioStorageFull, HTTP 507 Insufficient Storage). It is transient
	// too: errors.Is(err, ErrUnavailable) holds, space may be freed.
	ErrStorageFull = errors.New("object storage is full")
	// ErrNotFound means the key does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrIntegrity means stored bytes do not match their recorded SHA-256.
	ErrIntegrity = errors.New("object checksum mismatch")
	// ErrInvalidKey means a key is empty, absolute, or has ".", ".." or
	// empty segments. Build keys with Key.
	ErrInvalidKey = errors.New("invalid object key")
)

// opError is what every Store method returns on failure: the operation and
// key for the message, the original error, and a classification sentinel
// (ErrUnavailable, ErrNotFound, ...) for errors.Is.
type opError struct {
	op, key string
	kind    error // may be nil: a permanent failure with no sentinel
	err     error
}

func (e *opError) Error() string { return e.op + " " + e.key + ": " + e.err.Error() }

func (e *opError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// wrap classifies err at the minio-go boundary ("put key: ...").
func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var kind error
	switch {
	case isNotFound(err):
		kind = ErrNotFound
	case isStorageFull(err):
		kind = storageFull
	case isTransient(err):
		kind = ErrUnavailable
	}
	return &opError{op: op, key: key, kind: kind, err: err}
}

// IsTransient reports whether err is worth retrying: a network failure, a
// timeout, or an S3 answer of 5xx, 429 (SlowDown) or 408. Access denied,
// bad signatures, missing buckets or keys and invalid arguments are
// permanent. It works on errors returned by Store and on raw minio-go errors,
// wrapped or not (minio.ToErrorResponse alone does not unwrap).
//
// A deadline that ran out counts as transient (the next attempt gets a fresh
// one); a cancelled context does not (the caller gave up on purpose).
func IsTransient(err error) bool {
	return errors.Is(err, ErrUnavailable) || isTransient(err)
}

func isTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.Code {
		case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout",
			"XMinioServerNotInitialized", "XMinioReadQuorum", "XMinioWriteQuorum":
			return true
		}
		return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode == http.StatusRequestTimeout
	}
	// Certificate problems are configuration, not weather.
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return !dnsErr.IsNotFound // NXDOMAIN for the endpoint is a typo
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true // dial refused, reset, read/write failures
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// storageFull is the kind of a storage-full error: both sentinels.
var storageFull = errors.Join(ErrStorageFull, ErrUnavailable)

// isStorageFull reports an S3 answer that the storage is out of space.
func isStorageFull(err error) bool {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return false
	}
	return resp.Code == "XMinioStorageFull" || resp.StatusCode == http.StatusInsufficientStorage
}

func isNotFound(err error) bool {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return false
	}
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return true // NoSuchBucket is a configuration problem, not a missing object
	}
	return false
}
