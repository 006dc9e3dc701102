// Package artifacts stores capture outputs (screenshots, PDFs, HTML, Markdown)
// in S3-compatible object storage and hands out short-lived links to them.
//
// It exists so that the rest of snapq never talks to minio-go directly: one
// place decides how objects are written (a SHA-256 recorded as object
// metadata, Content-MD5 checked by the server), how keys are built (Key never
// yields "..", empty or absolute segments), how long presigned links live
// (15 minutes by default, at most 7 days) and which storage failures are worth
// a retry (IsTransient, ErrUnavailable) and which are not (access denied, a
// missing bucket). Callers choose the keys: a job's attempts each write keys
// of their own (jobs.AttemptKey), so no attempt overwrites an object another
// attempt's committed rows name.
//
// The package is a leaf: it imports minio-go and the standard library only.
// It works against MinIO and any other S3 implementation that supports
// signature v4.
package artifacts
