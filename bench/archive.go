package main

// The archive bench (-archive): -archive-mib MiB of artifacts planted straight
// into the bucket and Postgres (no rendering), then GET
// /v1/batches/:id/archive downloaded to a file while the api's RSS is sampled
// every 50 ms. It prints the archive's size, the download rate, the api's RSS
// before and at its peak, checks every unzipped file against the manifest's
// SHA-256, and resumes the download from its middle with a Range request
// (the bytes must equal the first download's).

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
)

const (
	archiveObjectMiB = 4 // each planted artifact
	archivePerJob    = 4 // artifacts per job
)

func archiveBench(o options) error {
	ctx := context.Background()
	o.noWorker = true
	st, err := startStack(ctx, o)
	if err != nil {
		return err
	}
	defer st.close()
	batchID, total, err := st.plantArchive(ctx, o.archiveMiB)
	if err != nil {
		return fmt.Errorf("plant: %w", err)
	}
	fmt.Printf("bench: archive: planted %d MiB in %d artifacts\n", total>>20, total/(archiveObjectMiB<<20))

	pid := st.procs.Pid("api")
	before := rssMiB(pid)
	stop := samplePeakEvery(50*time.Millisecond, func() float64 { return rssMiB(pid) })
	file := filepath.Join(os.TempDir(), "snapq-bench-archive-"+testenv.RandomSuffix(4)+".zip")
	defer os.Remove(file)
	start := time.Now()
	n, etag, err := download(st.api+"/v1/batches/"+batchID+"/archive", file)
	took := time.Since(start)
	peak := stop()
	if err != nil {
		return err
	}
	fmt.Printf("bench: archive: %d bytes (%.0f MiB) in %.1fs, %.0f MiB/s\n", n, float64(n)/(1<<20), took.Seconds(),
		float64(n)/(1<<20)/took.Seconds())
	fmt.Printf("bench: archive: api RSS %.1f MiB before, %.1f MiB peak while streaming: growth %.1f MiB\n", before, peak, peak-before)
	files, err := verifyArchive(file)
	if err != nil {
		return err
	}
	fmt.Printf("bench: archive: %d files unzipped, every sha256 matches the manifest\n", files)
	if err := verifyResume(st.api+"/v1/batches/"+batchID+"/archive", file, n/2+12345, etag); err != nil {
		return err
	}
	fmt.Printf("bench: archive: resumed from byte %d with Range + If-Range: the rest matches byte for byte\n", n/2+12345)
	if peak-before >= 50 {
		return fmt.Errorf("the api's RSS grew %.1f MiB while streaming, want < 50", peak-before)
	}
	return nil
}

// plantArchive stores mib MiB of random artifacts (distinct bytes, so nothing
// is deduplicated) with rows of a batch of their own, and returns the batch.
func (s *stack) plantArchive(ctx context.Context, mib int) (string, int64, error) {
	s3 := testenv.LocalS3()
	cfg := artifacts.DefaultConfig()
	cfg.Endpoint, cfg.AccessKey, cfg.SecretKey, cfg.Bucket = s3.Endpoint, s3.AccessKey, s3.SecretKey, s.bucket
	objs, err := artifacts.New(ctx, cfg)
	if err != nil {
		return "", 0, err
	}
	conn, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(ctx)
	n := max(1, mib/archiveObjectMiB)
	jobsN := (n + archivePerJob - 1) / archivePerJob
	batchID := jobs.NewID()
	if _, err := conn.Exec(ctx, `INSERT INTO batches (id, total, finished_at) VALUES ($1, $2, now())`, batchID, jobsN); err != nil {
		return "", 0, err
	}
	// Uploads run 4 at a time; each worker makes its own random bytes.
	type planted struct {
		job, name, key, sha string
		seq                 int
		crc                 uint32
	}
	out := make([]planted, n)
	jobIDs := make([]string, jobsN)
	for j := range jobIDs {
		jobIDs[j] = jobs.NewID()
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, batch_id, seq, url, name, options, status, attempts, finished_at)
			VALUES ($1, $2, $3, $4, $5, '{}', 'succeeded', 1, now())`,
			jobIDs[j], batchID, j, "http://127.0.0.1/page/"+strconv.Itoa(j), "page-"+strconv.Itoa(j)); err != nil {
			return "", 0, err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	next := make(chan int)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.NewChaCha8([32]byte{byte(w), 1})
			data := make([]byte, archiveObjectMiB<<20)
			for i := range next {
				_, _ = rng.Read(data)
				obj, err := objs.PutContent(ctx, data, "image/png")
				if err != nil {
					errs <- err
					return
				}
				out[i] = planted{job: jobIDs[i/archivePerJob], name: fmt.Sprintf("page-%d-%03d.png", i/archivePerJob, i%archivePerJob+1),
					key: obj.Key, sha: obj.SHA256, seq: i%archivePerJob + 1, crc: crc32.ChecksumIEEE(data)}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return "", 0, err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return "", 0, err
	default:
	}
	for _, p := range out {
		if _, err := conn.Exec(ctx, `INSERT INTO artifacts (id, job_id, kind, name, seq, object_key, content_type, bytes,
			width, height, sha256, crc32) VALUES ($1, $2, 'screenshot', $3, $4, $5, 'image/png', $6, 1280, 720, $7, $8)`,
			jobs.NewID(), p.job, p.name, p.seq, p.key, archiveObjectMiB<<20, p.sha, int64(p.crc)); err != nil {
			return "", 0, err
		}
	}
	return batchID, int64(n) * archiveObjectMiB << 20, nil
}

// download saves url to file and returns its length and ETag.
func download(url, file string) (int64, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
		return 0, "", fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	f, err := os.Create(file)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	n, err := io.Copy(f, resp.Body)
	if err == nil && n != resp.ContentLength {
		err = fmt.Errorf("got %d bytes, Content-Length %d", n, resp.ContentLength)
	}
	return n, resp.Header.Get("ETag"), err
}

// verifyArchive unzips file and checks each file against the manifest.
func verifyArchive(file string) (int, error) {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return 0, fmt.Errorf("open the archive: %w", err)
	}
	defer zr.Close()
	var man struct {
		Files []struct {
			Path   string `json:"path"`
			Bytes  int64  `json:"bytes"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	sums := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return 0, err
		}
		if f.Name == "manifest.json" {
			err = json.NewDecoder(rc).Decode(&man)
		} else {
			h := sha256.New()
			_, err = io.Copy(h, rc) // checks the CRC-32 too
			sums[f.Name] = hex.EncodeToString(h.Sum(nil))
		}
		rc.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	if len(man.Files) != len(sums) {
		return 0, fmt.Errorf("manifest names %d files, the archive holds %d", len(man.Files), len(sums))
	}
	for _, m := range man.Files {
		if sums[m.Path] != m.SHA256 {
			return 0, fmt.Errorf("%s: sha256 %s, manifest %s", m.Path, sums[m.Path], m.SHA256)
		}
	}
	return len(sums), nil
}

// verifyResume requests url from offset on (Range, If-Range) and compares
// the bytes with file's from offset.
func verifyResume(url, file string, offset int64, etag string) error {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	req.Header.Set("If-Range", etag)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		return fmt.Errorf("resume: status %d, want 206", resp.StatusCode)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	want, got := sha256.New(), sha256.New()
	if _, err := io.Copy(want, f); err != nil {
		return err
	}
	if _, err := io.Copy(got, resp.Body); err != nil {
		return err
	}
	if !strings.EqualFold(hex.EncodeToString(want.Sum(nil)), hex.EncodeToString(got.Sum(nil))) {
		return fmt.Errorf("resume: the bytes from %d differ from the first download's", offset)
	}
	return nil
}

// rssMiB is a process's resident set (VmRSS).
func rssMiB(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseFloat(f[1], 64)
				return v / 1024
			}
		}
	}
	return 0
}

// samplePeakEvery is samplePeak at another period.
func samplePeakEvery(every time.Duration, sample func() float64) func() float64 {
	var mu sync.Mutex
	peak := 0.0
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			v := sample()
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
