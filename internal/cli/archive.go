package cli

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/snapq/snapq/client"
	"github.com/snapq/snapq/internal/uniquename"
)

// downloadArchive is download through GET /v1/batches/:id/archive: one
// streamed ZIP, saved next to the files (a ZIP is read from its end) and
// removed after, each file unzipped to the path download gives it and
// checked against the archive manifest's size and sha256. The archive's own
// folder and file names are not trusted as paths: each file lands where its
// job id and artifact name say.
func (a *app) downloadArchive(ctx context.Context, b *client.Batch, jobs []client.Job, out string) (*Manifest, error) {
	tmp, err := os.CreateTemp(out, ".snapq-archive-*.zip")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = a.c.DownloadBatchArchive(ctx, b.ID, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	zr, err := zip.OpenReader(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer zr.Close()
	am, err := archiveManifest(zr, b.ID)
	if err != nil {
		return nil, err
	}
	m := a.newManifest(b, jobs, out, "archive")
	dests, err := placeArchive(m, jobs, am)
	if err != nil {
		return nil, err
	}
	for _, zf := range zr.File[1:] {
		d, ok := dests[zf.Name]
		if !ok {
			return nil, fmt.Errorf("archive: %s is not in its manifest", zf.Name)
		}
		delete(dests, zf.Name)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := unzipFile(zf, d.file, filepath.Join(out, filepath.FromSlash(d.path))); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// archiveManifest reads the archive's manifest.json, its first file, and
// checks it lists one file per other entry of batch batchID.
func archiveManifest(zr *zip.ReadCloser, batchID string) (*client.ArchiveManifest, error) {
	if len(zr.File) == 0 || zr.File[0].Name != "manifest.json" {
		return nil, errors.New("archive: manifest.json is not its first file")
	}
	var am client.ArchiveManifest
	if err := readJSON(zr.File[0], &am); err != nil {
		return nil, fmt.Errorf("archive: manifest.json: %w", err)
	}
	if am.BatchID != batchID || len(am.Files) != len(zr.File)-1 {
		return nil, fmt.Errorf("archive: manifest of batch %s lists %d files for %d entries", am.BatchID, len(am.Files), len(zr.File)-1)
	}
	return &am, nil
}

// archiveDest is where an archive entry is unzipped, and what it must be.
type archiveDest struct {
	file client.ArchiveFile
	path string
}

// placeArchive gives each file of the archive's manifest its path (under its
// job's folder, by its artifact name), adds it to m, and returns the
// destinations by entry name.
func placeArchive(m *Manifest, jobs []client.Job, am *client.ArchiveManifest) (map[string]archiveDest, error) {
	byJob := make(map[string]int, len(jobs))
	for i, j := range jobs {
		byJob[j.ID] = i
	}
	dests := make(map[string]archiveDest, len(am.Files))
	names := make(map[string]*uniquename.Set) // per job: its files' names
	for k, f := range am.Files {
		i, ok := byJob[f.JobID]
		if !ok {
			return nil, fmt.Errorf("archive: %s belongs to job %s, which the batch's list does not have", f.Path, f.JobID)
		}
		if names[f.JobID] == nil {
			names[f.JobID] = &uniquename.Set{}
		}
		dir := m.Jobs[i].Dir
		path := dir + "/" + names[f.JobID].TakeFile(safeName(f.Name, "artifact-"+strconv.Itoa(k+1)))
		m.Jobs[i].Artifacts = append(m.Jobs[i].Artifacts, ManifestArtifact{ID: f.ArtifactID, Name: f.Name, Kind: f.Kind,
			ContentType: f.ContentType, Path: path, Bytes: f.Bytes, SHA256: f.SHA256, URL: f.ArtifactURL})
		if _, dup := dests[f.Path]; dup {
			return nil, fmt.Errorf("archive: %s is listed twice", f.Path)
		}
		dests[f.Path] = archiveDest{file: f, path: path}
	}
	return dests, nil
}

// unzipFile writes one archive entry to path through a temporary file,
// checking its size and sha256 against the manifest's (the ZIP reader
// checks its CRC-32).
func unzipFile(zf *zip.File, want client.ArchiveFile, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	rc, err := zf.Open()
	if err != nil {
		return fmt.Errorf("archive: %s: %w", zf.Name, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapq-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), rc)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("archive: %s: %w", zf.Name, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != want.Bytes || (want.SHA256 != "" && sum != want.SHA256) {
		return fmt.Errorf("archive: %s: %d bytes, sha256 %s; the manifest lists %d, %s", zf.Name, n, sum, want.Bytes, want.SHA256)
	}
	return os.Rename(tmp.Name(), path)
}

// readJSON decodes one archive entry.
func readJSON(zf *zip.File, v any) error {
	rc, err := zf.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return json.NewDecoder(rc).Decode(v)
}
