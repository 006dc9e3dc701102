package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snapq/snapq/client"
	"github.com/snapq/snapq/internal/uniquename"
)

// Manifest is DIR/manifest.json: every job of the batch and every file
// downloaded for it.
type Manifest struct {
	BatchID      string    `json:"batch_id"`
	Status       string    `json:"status"`
	API          string    `json:"api"`
	DownloadedAt time.Time `json:"downloaded_at"`
	// Via says how the files came: "archive" (one GET /v1/batches/:id/archive)
	// or "files" (one request per artifact, when the archive could not be used).
	Via  string        `json:"via"`
	Jobs []ManifestJob `json:"jobs"`
	path string
}

// ManifestJob is one job and its files; Dir is relative to the manifest.
type ManifestJob struct {
	ID        string             `json:"id"`
	Name      string             `json:"name"`
	URL       string             `json:"url"`
	Status    string             `json:"status"`
	Error     *client.JobError   `json:"error,omitempty"`
	Dir       string             `json:"dir"`
	Artifacts []ManifestArtifact `json:"artifacts"`
}

// ManifestArtifact is one downloaded file; Path is relative to the manifest.
type ManifestArtifact struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	ContentType string `json:"content_type"`
	Path        string `json:"path"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	URL         string `json:"url"`
}

func (m *Manifest) files() (n int) {
	for _, j := range m.Jobs {
		n += len(j.Artifacts)
	}
	return n
}

func (m *Manifest) bytes() (n int64) {
	for _, j := range m.Jobs {
		for _, a := range j.Artifacts {
			n += a.Bytes
		}
	}
	return n
}

// downloadWorkers is how many artifacts download at once.
const downloadWorkers = 4

// download writes every artifact of jobs to out/<job name>/<artifact name>,
// checks each file's sha256 against the api's, and writes out/manifest.json.
// Jobs with the same name get "-2", "-3", … directories. It fetches the
// batch's archive, one streamed ZIP (archive.go); when that fails it falls
// back to one request per file.
func (a *app) download(ctx context.Context, b *client.Batch, jobs []client.Job, out string) (*Manifest, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	m, err := a.downloadArchive(ctx, b, jobs, out)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		fmt.Fprintf(a.stderr, "the batch archive could not be used (%v); downloading file by file\n", err)
		if m, err = a.downloadFiles(ctx, b, jobs, out); err != nil {
			return nil, err
		}
	}
	return m, m.write()
}

// newManifest is the manifest of jobs without files, each with its folder.
func (a *app) newManifest(b *client.Batch, jobs []client.Job, out, via string) *Manifest {
	m := &Manifest{BatchID: b.ID, Status: b.Status, API: a.c.BaseURL(), DownloadedAt: time.Now().UTC(), Via: via,
		Jobs: make([]ManifestJob, len(jobs)), path: filepath.Join(out, "manifest.json")}
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = safeName(j.Name, "job-"+strconv.Itoa(i+1))
	}
	dirs := uniquename.Names(names, "manifest.json")
	for i, j := range jobs {
		dir := dirs[i]
		m.Jobs[i] = ManifestJob{ID: j.ID, Name: j.Name, URL: j.URL, Status: j.Status, Error: j.Error, Dir: dir,
			Artifacts: []ManifestArtifact{}}
	}
	return m
}

// write writes the manifest to its path.
func (m *Manifest) write() error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(m.path, append(raw, '\n'), 0o644)
}

// downloadFiles is download with one request per artifact (and one per job
// for its artifact list).
func (a *app) downloadFiles(ctx context.Context, b *client.Batch, jobs []client.Job, out string) (*Manifest, error) {
	m := a.newManifest(b, jobs, out, "files")
	type task struct {
		job, art int
		a        client.Artifact
	}
	var tasks []task
	for i, j := range jobs {
		dir := m.Jobs[i].Dir
		full, err := a.c.GetJob(ctx, j.ID)
		if err != nil {
			return nil, err
		}
		if len(full.Artifacts) == 0 {
			continue
		}
		if err := os.MkdirAll(filepath.Join(out, dir), 0o755); err != nil {
			return nil, err
		}
		names := artifactNames(full.Artifacts)
		for k, art := range full.Artifacts {
			name := names[k]
			m.Jobs[i].Artifacts = append(m.Jobs[i].Artifacts, ManifestArtifact{ID: art.ID, Name: art.Name, Kind: art.Kind,
				ContentType: art.ContentType, Path: dir + "/" + name, Bytes: art.Bytes, SHA256: art.SHA256, URL: art.URL})
			tasks = append(tasks, task{job: i, art: k, a: art})
		}
	}
	ch := make(chan task)
	errs := make(chan error, len(tasks))
	var wg sync.WaitGroup
	for range min(downloadWorkers, len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				ma := &m.Jobs[t.job].Artifacts[t.art]
				errs <- a.fetchFile(ctx, t.a, filepath.Join(out, filepath.FromSlash(ma.Path)))
			}
		}()
	}
	for _, t := range tasks {
		ch <- t
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// fetchFile downloads one artifact to path through a temporary file and
// checks its sha256 against the api's.
func (a *app) fetchFile(ctx context.Context, art client.Artifact, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapq-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	_, err = a.c.DownloadArtifact(ctx, art.ID, io.MultiWriter(tmp, h))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) // CreateTemp's 0600 is for the partial file
	}
	if err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); art.SHA256 != "" && sum != art.SHA256 {
		return fmt.Errorf("artifact %s (%s): downloaded sha256 %s, the api lists %s", art.ID, art.Name, sum, art.SHA256)
	}
	return os.Rename(tmp.Name(), path)
}

// safeName is name as one path element: no separators, never "." or "..";
// fallback when nothing is left.
func safeName(name, fallback string) string {
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '-'
		}
		return r
	}, strings.TrimSpace(name))
	if name == "" || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return fallback
	}
	return name
}

// artifactNames are the file names of one job's artifacts: safe, and
// unique in the job's folder (uniquename.Files).
func artifactNames(arts []client.Artifact) []string {
	names := make([]string, len(arts))
	for k, art := range arts {
		names[k] = safeName(art.Name, "artifact-"+strconv.Itoa(k+1))
	}
	return uniquename.Files(names)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
