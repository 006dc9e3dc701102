package artifacts

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"
)

// ArchiveFile is one file of an Archive: an object (Key) or bytes held in
// memory (Data, for a small file such as a manifest).
type ArchiveFile struct {
	Path     string // its name inside the archive
	Key      string // the object holding its bytes; "" when Data holds them
	Data     []byte
	Bytes    int64  // its size (len(Data) for an inline file)
	CRC32    uint32 // IEEE CRC-32 of its bytes (computed for an inline file)
	Modified time.Time
}

// Opener reads an object from offset to its end (Store.Open).
type Opener func(ctx context.Context, key string, offset int64) (io.ReadCloser, error)

// Archive is a ZIP of objects whose every byte is known before any object is
// read: files are stored as they are (the Store method: screenshots are
// compressed already), each header names the file's size and CRC-32, and
// times come from the files. So the same files always make the same bytes,
// the length is known up front (Content-Length), and any range of it can be
// produced on its own, reading only the objects the range covers: a
// download that broke off resumes by re-requesting the rest.
//
// Memory stays flat whatever the size: objects are copied through small
// buffers, never held.
type Archive struct {
	files   []ArchiveFile
	offsets []int64 // where each file's bytes start in the archive
	size    int64
}

// NewArchive lays files out. Inline files get their size and CRC-32 from
// their Data. Paths must be unique.
func NewArchive(files []ArchiveFile) (*Archive, error) {
	a := &Archive{files: make([]ArchiveFile, len(files)), offsets: make([]int64, len(files))}
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		if f.Key == "" {
			f.Bytes, f.CRC32 = int64(len(f.Data)), crc32.ChecksumIEEE(f.Data)
		}
		if seen[f.Path] {
			return nil, fmt.Errorf("archive: two files named %q", f.Path)
		}
		seen[f.Path] = true
		a.files[i] = f
	}
	// A dry run writes the archive with zeros for contents to a counter: the
	// layout does not depend on the bytes (sizes and CRCs are given).
	cw := &rangeWriter{end: -1}
	zw := zip.NewWriter(cw)
	for i := range a.files {
		fw, err := a.header(zw, i)
		if err != nil {
			return nil, err
		}
		if err := zw.Flush(); err != nil {
			return nil, err
		}
		a.offsets[i] = cw.pos
		if err := writeZeros(fw, a.files[i].Bytes); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	a.size = cw.pos
	return a, nil
}

// Size is the archive's length in bytes.
func (a *Archive) Size() int64 { return a.size }

// header starts file i in zw and returns the writer of its raw bytes.
func (a *Archive) header(zw *zip.Writer, i int) (io.Writer, error) {
	f := a.files[i]
	fh := &zip.FileHeader{Name: f.Path, Method: zip.Store, Modified: f.Modified.UTC().Truncate(time.Second),
		CRC32: f.CRC32, CompressedSize64: uint64(f.Bytes), UncompressedSize64: uint64(f.Bytes)}
	fw, err := zw.CreateRaw(fh)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", f.Path, err)
	}
	return fw, nil
}

// errRangeDone stops writing once the requested range is out.
var errRangeDone = errors.New("range written")

// WriteRange writes bytes [start, end) of the archive to w (end past Size
// means to the end), reading with open only the objects whose bytes fall in
// the range. An object whose size differs from its file's is an error: the
// archive would be corrupt.
func (a *Archive) WriteRange(ctx context.Context, w io.Writer, start, end int64, open Opener) error {
	if end > a.size {
		end = a.size
	}
	if start >= end {
		return nil
	}
	rw := &rangeWriter{w: w, start: start, end: end}
	zw := zip.NewWriter(rw)
	err := a.writeFiles(ctx, zw, rw, open)
	if err == nil {
		err = zw.Close()
	}
	if errors.Is(err, errRangeDone) {
		return nil
	}
	return err
}

func (a *Archive) writeFiles(ctx context.Context, zw *zip.Writer, rw *rangeWriter, open Opener) error {
	for i, f := range a.files {
		fw, err := a.header(zw, i)
		if err != nil {
			return err
		}
		off := a.offsets[i]
		if off+f.Bytes <= rw.start || off >= rw.end || f.Bytes == 0 {
			if err := writeZeros(fw, f.Bytes); err != nil { // outside the range: never read
				return err
			}
			continue
		}
		skip := max(0, rw.start-off) // the file's bytes before the range
		if err := writeZeros(fw, skip); err != nil {
			return err
		}
		if f.Key == "" {
			if err := writeAll(fw, f.Data[skip:]); err != nil {
				return err
			}
			continue
		}
		if err := copyObject(ctx, fw, f, skip, open); err != nil {
			return err
		}
	}
	return nil
}

// copyObject copies f's object from skip to its end into fw.
func copyObject(ctx context.Context, fw io.Writer, f ArchiveFile, skip int64, open Opener) error {
	r, err := open(ctx, f.Key, skip)
	if err != nil {
		return fmt.Errorf("archive %s: %w", f.Path, err)
	}
	defer r.Close()
	n, err := io.Copy(fw, io.LimitReader(r, f.Bytes-skip))
	if errors.Is(err, errRangeDone) {
		return err
	}
	if err != nil {
		return fmt.Errorf("archive %s: read %s: %w", f.Path, f.Key, err)
	}
	if n != f.Bytes-skip {
		return fmt.Errorf("archive %s: object %s has %d bytes from %d, want %d", f.Path, f.Key, n, skip, f.Bytes-skip)
	}
	return nil
}

func writeAll(w io.Writer, p []byte) error {
	_, err := w.Write(p)
	return err
}

var zeros = make([]byte, 32<<10)

// writeZeros writes n zero bytes: the stand-in for a file's contents where
// only their length matters.
func writeZeros(w io.Writer, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// rangeWriter passes on the bytes of [start, end) of what is written to it
// and counts everything. end < 0 passes nothing and never stops (a counter).
type rangeWriter struct {
	w          io.Writer
	start, end int64
	pos        int64
}

func (r *rangeWriter) Write(p []byte) (int, error) {
	n := len(p)
	from, to := r.pos, r.pos+int64(n)
	r.pos = to
	if r.end < 0 {
		return n, nil
	}
	lo, hi := max(from, r.start), min(to, r.end)
	if lo < hi {
		if _, err := r.w.Write(p[lo-from : hi-from]); err != nil {
			return 0, err
		}
	}
	if to >= r.end {
		return n, errRangeDone
	}
	return n, nil
}

// Reader is the archive as an io.ReadSeekCloser, for http.ServeContent
// (which answers Range, If-Range and If-None-Match with it): reading after a
// seek produces the archive from there on (WriteRange), so only the objects
// from that point on are read. Close stops the producer.
func (a *Archive) Reader(ctx context.Context, open Opener) io.ReadSeekCloser {
	return &archiveReader{a: a, ctx: ctx, open: open}
}

type archiveReader struct {
	a    *Archive
	ctx  context.Context
	open Opener

	mu     sync.Mutex
	pos    int64
	pr     *io.PipeReader // the producer writing from pos; nil until a Read
	cancel context.CancelFunc
}

func (r *archiveReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pos >= r.a.size {
		return 0, io.EOF
	}
	if r.pr == nil {
		ctx, cancel := context.WithCancel(r.ctx)
		pr, pw := io.Pipe()
		r.pr, r.cancel = pr, cancel
		go func(start int64) {
			pw.CloseWithError(r.a.WriteRange(ctx, pw, start, r.a.size, r.open))
		}(r.pos)
	}
	n, err := r.pr.Read(p)
	r.pos += int64(n)
	if err == io.EOF && r.pos < r.a.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (r *archiveReader) Seek(offset int64, whence int) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pos int64
	switch whence {
	case io.SeekStart:
		pos = offset
	case io.SeekCurrent:
		pos = r.pos + offset
	case io.SeekEnd:
		pos = r.a.size + offset
	default:
		return 0, errors.New("archive: bad whence")
	}
	if pos < 0 {
		return 0, errors.New("archive: negative position")
	}
	if pos != r.pos {
		r.stop()
		r.pos = pos
	}
	return pos, nil
}

func (r *archiveReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
	return nil
}

// stop ends the producer, if any.
func (r *archiveReader) stop() {
	if r.pr != nil {
		r.cancel()
		r.pr.Close()
		r.pr, r.cancel = nil, nil
	}
}
