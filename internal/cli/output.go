package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snapq/snapq/client"
)

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows under a header, aligned.
func (a *app) table(header []string, rows [][]string) {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// fields writes key: value lines, aligned.
func (a *app) fields(kv ...string) {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], kv[i+1])
	}
	_ = tw.Flush()
}

func (a *app) printJobs(jobs []client.Job) {
	rows := make([][]string, len(jobs))
	for i, j := range jobs {
		http, problem := "", ""
		if j.Result != nil && j.Result.HTTPStatus != 0 {
			http = fmt.Sprint(j.Result.HTTPStatus)
		}
		if j.Error != nil {
			problem = j.Error.Code
		}
		rows[i] = []string{j.Name, j.Status, http, problem, j.URL}
	}
	a.table([]string{"NAME", "STATUS", "HTTP", "ERROR", "URL"}, rows)
}

func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func counts(c client.Counts) string {
	return fmt.Sprintf("%d queued, %d running, %d succeeded, %d failed, %d canceled",
		c.Queued, c.Running, c.Succeeded, c.Failed, c.Canceled)
}

func runCounts(c client.RunCounts) string {
	return fmt.Sprintf("%d total: %d passed, %d failed, %d new, %d missing, %d error, %d pending",
		c.Total, c.Passed, c.Failed, c.New, c.Missing, c.Error, c.Pending)
}
