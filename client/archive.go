package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// ArchiveManifest is the manifest.json a batch archive starts with.
type ArchiveManifest struct {
	BatchID string        `json:"batch_id"`
	RunID   string        `json:"run_id,omitempty"`
	Files   []ArchiveFile `json:"files"`
}

// ArchiveFile is one file of an archive: its path in the ZIP, its job and
// artifact, and the size and SHA-256 its bytes must have.
type ArchiveFile struct {
	Path        string `json:"path"`
	JobID       string `json:"job_id"`
	JobName     string `json:"job_name"`
	URL         string `json:"url"`
	ArtifactID  string `json:"artifact_id"`
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	ArtifactURL string `json:"artifact_url"`
}

// DownloadBatchArchive streams GET /v1/batches/:id/archive, a ZIP of every
// artifact of the batch (manifest.json first, then one folder per job), to
// w and returns how many bytes it wrote. One request, whatever the number
// of files.
func (c *Client) DownloadBatchArchive(ctx context.Context, id string, w io.Writer) (int64, error) {
	path := "/v1/batches/" + escape(id) + "/archive"
	resp, err := c.send(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, readError(resp)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("GET %s: got %d of %d bytes", path, n, resp.ContentLength)
	}
	return n, nil
}
