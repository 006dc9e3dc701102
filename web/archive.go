package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/internal/uniquename"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// ArchiveSource lists what a batch's archive holds. store.Store implements it.
type ArchiveSource interface {
	// BatchArtifacts returns every artifact of a batch's jobs with its job,
	// in job order, then artifact order.
	BatchArtifacts(ctx context.Context, batchID string) ([]*jobs.JobArtifact, error)
}

// ObjectOpener streams an object from an offset (artifacts.Store).
type ObjectOpener interface {
	Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error)
}

// archiveManifest is manifest.json, the archive's first file: every other
// file with its job, size, SHA-256 and links. It holds nothing that changes
// between two requests for the same artifacts (the links are the API's
// own, which redirect to fresh presigned URLs), so the archive's bytes do
// not change either and a ranged re-request resumes a download.
type archiveManifest struct {
	BatchID string            `json:"batch_id"`
	RunID   string            `json:"run_id,omitempty"`
	Files   []archiveFileView `json:"files"`
}

type archiveFileView struct {
	Path        string `json:"path"`
	JobID       string `json:"job_id"`
	JobName     string `json:"job_name"`
	URL         string `json:"url"` // the captured page
	ArtifactID  string `json:"artifact_id"`
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	ArtifactURL string `json:"artifact_url"`
}

func (s *Server) batchArchive(c *gin.Context) error {
	b, err := loaded[*jobs.Batch](c, batchKey)
	if err != nil {
		return err
	}
	return s.serveArchive(c, b.ID, "", "batch-"+b.ID+".zip")
}

func (s *Server) runArchive(c *gin.Context) error {
	r, err := loaded[*regression.Run](c, runKey)
	if err != nil {
		return err
	}
	return s.serveArchive(c, r.BatchID, r.ID, "run-"+r.ID+".zip")
}

// archiveDirs names each job's folder (by job id) after the job, unique in
// the archive whatever the jobs are called (uniquename.Names; manifest.json
// is the archive's own).
func archiveDirs(list []*jobs.JobArtifact) map[string]string {
	var ids, names []string
	seen := map[string]bool{}
	for _, a := range list {
		if !seen[a.JobID] {
			seen[a.JobID] = true
			name := a.JobName
			if name == "" {
				name = "job-" + strconv.Itoa(a.JobSeq+1)
			}
			ids, names = append(ids, a.JobID), append(names, name)
		}
	}
	out := make(map[string]string, len(ids))
	for i, dir := range uniquename.Names(names, "manifest.json") {
		out[ids[i]] = dir
	}
	return out
}

// serveArchive streams the ZIP of a batch's artifacts (artifacts.Archive):
// each job's files in a folder named after the job, manifest.json first.
// Range, If-Range and If-None-Match work (http.ServeContent), the ETag being
// a digest of the manifest.
func (s *Server) serveArchive(c *gin.Context, batchID, runID, filename string) error {
	if s.Archives == nil || s.Objects == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "archives are not served here"}
	}
	ctx := c.Request.Context()
	list, err := s.Archives.BatchArtifacts(ctx, batchID)
	if err != nil {
		return fmt.Errorf("archive of batch %s: %w", batchID, err)
	}
	base := s.baseURL(c)
	man := archiveManifest{BatchID: batchID, RunID: runID, Files: make([]archiveFileView, 0, len(list))}
	files := make([]artifacts.ArchiveFile, 1, len(list)+1)
	dirs := archiveDirs(list)
	var newest time.Time
	for _, a := range list {
		dir := dirs[a.JobID]
		crc := a.CRC32
		if crc == 0 && a.Bytes > 0 {
			// Stored before CRCs were recorded: read it once to know it.
			if crc, err = s.objectCRC(ctx, a.ObjectKey); err != nil {
				return fmt.Errorf("archive of batch %s: %w", batchID, err)
			}
		}
		path := dir + "/" + a.Name
		files = append(files, artifacts.ArchiveFile{Path: path, Key: a.ObjectKey, Bytes: a.Bytes, CRC32: crc, Modified: a.CreatedAt})
		man.Files = append(man.Files, archiveFileView{Path: path, JobID: a.JobID, JobName: a.JobName, URL: a.JobURL,
			ArtifactID: a.ID, Name: a.Name, Kind: a.Kind, ContentType: a.ContentType, Bytes: a.Bytes, SHA256: a.SHA256,
			ArtifactURL: base + "/v1/artifacts/" + a.ID})
		if a.CreatedAt.After(newest) {
			newest = a.CreatedAt
		}
	}
	manifest, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return fmt.Errorf("archive manifest: %w", err)
	}
	files[0] = artifacts.ArchiveFile{Path: "manifest.json", Data: manifest, Modified: newest}
	arc, err := artifacts.NewArchive(files)
	if err != nil {
		return fmt.Errorf("archive of batch %s: %w", batchID, err)
	}
	sum := sha256.Sum256(manifest)
	c.Header("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	c.Header("Content-Type", "application/zip")
	c.Header("Content-Disposition", `attachment; filename="`+filename+`"`)
	c.Header("Cache-Control", "private, no-cache")
	open := func(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
		r, err := s.Objects.Open(ctx, key, offset)
		if err != nil {
			s.logger().Error("archive: open object", "batch_id", batchID, "key", key, "err", err)
		}
		return r, err
	}
	rs := arc.Reader(ctx, open)
	defer rs.Close()
	http.ServeContent(c.Writer, c.Request, filename, time.Time{}, rs)
	return nil
}

// objectCRC reads an object to compute its CRC-32.
func (s *Server) objectCRC(ctx context.Context, key string) (uint32, error) {
	r, err := s.Objects.Open(ctx, key, 0)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, r); err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	return h.Sum32(), nil
}
