package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

func (a *app) batchesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "batches", Short: "List, show, follow and cancel batches"}
	cmd.AddCommand(a.batchesLsCommand(), a.batchesGetCommand(), a.batchesWatchCommand(), a.batchesCancelCommand())
	return cmd
}

// batchesLsCommand is `snapq batches ls`.
func (a *app) batchesLsCommand() *cobra.Command {
	var status string
	var limit int
	ls := &cobra.Command{
		Use:     "ls",
		Short:   "List your batches, newest first",
		Example: "  snapq batches ls\n  snapq batches ls --status running --limit 100 --json",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []client.Batch
			for b, err := range a.c.ListBatches(cmd.Context(), client.ListOptions{Status: status, Limit: min(max(limit, 1), 1000)}) {
				if err != nil {
					return err
				}
				if list = append(list, b); limit > 0 && len(list) >= limit {
					break
				}
			}
			if a.json {
				return a.printJSON(nonNil(list))
			}
			rows := make([][]string, len(list))
			for i, b := range list {
				rows[i] = []string{b.ID, b.Status, strconv.Itoa(b.Total), strconv.Itoa(b.Counts.Succeeded),
					strconv.Itoa(b.Counts.Failed), strconv.Itoa(b.Counts.Queued + b.Counts.Running), when(&b.CreatedAt)}
			}
			a.table([]string{"ID", "STATUS", "TOTAL", "SUCCEEDED", "FAILED", "UNFINISHED", "CREATED"}, rows)
			return nil
		},
	}
	ls.Flags().StringVar(&status, "status", "", "only batches in this status: queued, running, completed")
	ls.Flags().IntVar(&limit, "limit", 20, "list at most this many (0: all)")
	return ls
}

// batchesGetCommand is `snapq batches get`.
func (a *app) batchesGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "get ID",
		Short:   "Show a batch and its jobs",
		Example: "  snapq batches get 0f1e2d3c-…\n  snapq batches get 0f1e2d3c-… --json | jq '.jobs[] | select(.status==\"failed\")'",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := a.c.GetBatch(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var jobs []client.Job
			for j, err := range a.c.ListJobs(cmd.Context(), b.ID, client.ListOptions{Limit: 1000}) {
				if err != nil {
					return err
				}
				jobs = append(jobs, j)
			}
			if a.json {
				return a.printJSON(struct {
					*client.Batch
					Jobs []client.Job `json:"jobs"`
				}{b, nonNil(jobs)})
			}
			a.fields("batch", b.ID, "status", b.Status, "jobs", fmt.Sprintf("%d (%s)", b.Total, counts(b.Counts)),
				"created", when(&b.CreatedAt), "finished", when(b.FinishedAt))
			fmt.Fprintln(a.stdout)
			a.printJobs(jobs)
			return nil
		},
	}
}

// batchesWatchCommand is `snapq batches watch`.
func (a *app) batchesWatchCommand() *cobra.Command {
	var out string
	watch := &cobra.Command{
		Use:     "watch ID",
		Short:   "Follow a batch until every job is done (exit 1 if any failed)",
		Example: "  snapq batches watch 0f1e2d3c-…\n  snapq batches watch 0f1e2d3c-… --out shots/",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.finishBatch(cmd.Context(), args[0], out)
		},
	}
	watch.Flags().StringVar(&out, "out", "", "then download every artifact into this directory")
	return watch
}

// batchesCancelCommand is `snapq batches cancel`.
func (a *app) batchesCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "cancel ID",
		Short:   "Cancel a batch's unfinished jobs",
		Example: "  snapq batches cancel 0f1e2d3c-…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := a.c.CancelBatch(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(b)
			}
			fmt.Fprintf(a.stdout, "batch %s %s: %s\n", b.ID, b.Status, counts(b.Counts))
			return nil
		},
	}
}

func (a *app) jobsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "Show jobs"}
	cmd.AddCommand(&cobra.Command{
		Use:     "get ID",
		Short:   "Show a job: its status, result and artifacts",
		Example: "  snapq jobs get 5a6b7c8d-…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := a.c.GetJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(j)
			}
			kv := []string{"job", j.ID, "batch", j.BatchID, "name", j.Name, "url", j.URL, "status", j.Status,
				"attempts", strconv.Itoa(j.Attempts), "finished", when(j.FinishedAt)}
			if j.Error != nil {
				kv = append(kv, "error", j.Error.Code+": "+j.Error.Message)
			}
			if r := j.Result; r != nil {
				kv = append(kv, "http status", strconv.Itoa(r.HTTPStatus), "final url", r.FinalURL, "title", r.Title,
					"page height", fmt.Sprintf("%d px, %d of %d segments", r.PageHeight, r.Segments.Captured, r.Segments.Total))
			}
			a.fields(kv...)
			if len(j.Artifacts) > 0 {
				fmt.Fprintln(a.stdout)
				rows := make([][]string, len(j.Artifacts))
				for i, art := range j.Artifacts {
					size := ""
					if art.Width > 0 {
						size = fmt.Sprintf("%dx%d", art.Width, art.Height)
					}
					rows[i] = []string{art.ID, art.Name, art.Kind, size, humanBytes(art.Bytes)}
				}
				a.table([]string{"ARTIFACT", "NAME", "KIND", "PIXELS", "BYTES"}, rows)
			}
			return nil
		},
	})
	return cmd
}

func (a *app) artifactsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "artifacts", Short: "Download artifacts"}
	var out string
	get := &cobra.Command{
		Use:     "get ID -o FILE",
		Short:   "Download an artifact to FILE (- for standard output)",
		Example: "  snapq artifacts get 9e8d7c6b-… -o home.png\n  snapq artifacts get 9e8d7c6b-… -o - | display",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("artifacts get needs -o FILE (or -o - for standard output)")
			}
			if out == "-" {
				_, err := a.c.DownloadArtifact(cmd.Context(), args[0], a.stdout)
				return err
			}
			f, err := os.CreateTemp(dirOf(out), ".snapq-*")
			if err != nil {
				return err
			}
			defer os.Remove(f.Name())
			n, err := a.c.DownloadArtifact(cmd.Context(), args[0], f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(f.Name(), 0o644) // CreateTemp's 0600 is for the partial file
			}
			if err != nil {
				return err
			}
			if err := os.Rename(f.Name(), out); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"id": args[0], "path": out, "bytes": n})
			}
			fmt.Fprintf(a.stderr, "%s: %s\n", out, humanBytes(n))
			return nil
		},
	}
	get.Flags().StringVarP(&out, "output", "o", "", "the file to write (- for standard output)")
	cmd.AddCommand(get)
	return cmd
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if os.IsPathSeparator(path[i]) {
			return path[:i+1]
		}
	}
	return "."
}

// nonNil makes an empty list encode as [], not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
