package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/snapq/snapq/client"
)

// snapq capture --sync URL: one page over POST /v1/capture, answered in the
// same call (docs/agents.md), its bytes or its job view written out.

// syncTypes are the values of --as and the content type each asks for.
var syncTypes = map[string]string{
	"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp",
	"markdown": "text/markdown", "html": "text/html", "pdf": "application/pdf",
}

func syncFlags(fl *pflag.FlagSet, f *captureFlags) {
	fl.BoolVar(&f.sync, "sync", false, "capture one page (URL or --url) and wait for it in the same call (POST /v1/capture)")
	fl.StringVar(&f.as, "as", "json", "with --sync: what to write: json (the job), png, jpeg, webp (a screenshot segment), markdown, html or pdf")
	fl.StringVarP(&f.output, "output", "o", "-", "with --sync: the file to write (- for standard output)")
	fl.IntVar(&f.waitMS, "wait-ms", 0, "with --sync: how long the server waits for the capture, in ms (default 30000, at most 120000)")
	fl.IntVar(&f.segment, "segment", 0, "with --sync and an image --as: the screenshot segment (default 1)")
}

// syncTarget checks the flags of --sync and returns its one URL.
func syncTarget(args []string, f captureFlags) (string, error) {
	urls := append(append([]string{}, args...), f.urls...)
	switch {
	case len(urls) != 1:
		return "", usagef("--sync captures one page: give one URL (as the argument or --url)")
	case f.sitemap != "" || f.crawl != "" || f.wait || f.out != "" || len(f.labels) > 0:
		return "", usagef("--sync takes no --sitemap, --crawl, --wait, --out or --label")
	case f.as != "json" && syncTypes[f.as] == "":
		return "", usagef("--as %q: want json, png, jpeg, webp, markdown, html or pdf", f.as)
	case f.segment != 0 && !strings.HasPrefix(syncTypes[f.as], "image/"):
		return "", usagef("--segment goes with --as png, jpeg or webp")
	}
	return urls[0], nil
}

func (a *app) captureSync(ctx context.Context, args []string, f captureFlags) error {
	u, err := syncTarget(args, f)
	if err != nil {
		return err
	}
	raw, err := f.rawOptions()
	if err != nil {
		return err
	}
	req := client.CaptureRequest{Target: client.Target{URL: u}, WaitMS: f.waitMS, RawOptions: raw}
	if f.as == "json" {
		return a.syncJob(ctx, req, f.output)
	}
	out, err := a.c.CaptureAs(ctx, req, syncTypes[f.as], f.segment)
	var notDone *client.ErrCaptureNotDone
	if errors.As(err, &notDone) {
		return fmt.Errorf("%w; follow it with: snapq jobs get %s", err, notDone.JobID)
	}
	if err != nil {
		return err
	}
	defer out.Body.Close()
	n, err := a.writeOutput(f.output, out.Body)
	if err != nil {
		return err
	}
	if !a.quiet && f.output != "-" {
		fmt.Fprintf(a.stderr, "%s: %s (%s, page status %d, job %s)\n", f.output, humanBytes(n), out.ContentType, out.ResponseCode, out.JobID)
	}
	return nil
}

// syncJob writes the job view; a failed or unfinished capture fails the command.
func (a *app) syncJob(ctx context.Context, req client.CaptureRequest, path string) error {
	got, err := a.c.Capture(ctx, req)
	if err != nil {
		return err
	}
	w, closeOut, err := a.outputFile(path)
	if err != nil {
		return err
	}
	saved := a.stdout
	a.stdout = w
	err = errors.Join(a.printJSON(got.Job), closeOut())
	a.stdout = saved
	switch {
	case err != nil:
		return err
	case !got.Done:
		return fmt.Errorf("the capture was not done within the wait; follow it with: snapq jobs get %s", got.Job.ID)
	case got.Job.Status != "succeeded":
		return fmt.Errorf("the capture %s", got.Job.Status)
	}
	return nil
}

// writeOutput copies r to path ("-": standard output).
func (a *app) writeOutput(path string, r io.Reader) (int64, error) {
	w, closeOut, err := a.outputFile(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(w, r)
	return n, errors.Join(err, closeOut())
}

func (a *app) outputFile(path string) (io.Writer, func() error, error) {
	if path == "-" || path == "" {
		return a.stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, usageError{err}
	}
	return f, f.Close, nil
}
