package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

func (a *app) suitesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "suites", Short: "List and show visual-regression suites, run them, approve runs"}
	ls := &cobra.Command{
		Use:     "ls",
		Short:   "List your suites",
		Example: "  snapq suites ls",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []client.Suite
			for s, err := range a.c.ListSuites(cmd.Context(), client.ListOptions{Limit: 1000}) {
				if err != nil {
					return err
				}
				list = append(list, s)
			}
			if a.json {
				return a.printJSON(nonNil(list))
			}
			rows := make([][]string, len(list))
			for i, s := range list {
				sched, last := "-", "-"
				if s.Schedule != nil {
					sched = s.Schedule.Cron
				}
				if s.LastRun != nil {
					last = s.LastRun.Status + " " + when(&s.LastRun.CreatedAt)
				}
				rows[i] = []string{s.ID, s.Name, strconv.Itoa(len(s.Targets)), sched, strconv.FormatBool(s.Enabled), last}
			}
			a.table([]string{"ID", "NAME", "TARGETS", "SCHEDULE", "ENABLED", "LAST RUN"}, rows)
			return nil
		},
	}
	get := &cobra.Command{
		Use:     "get ID",
		Short:   "Show a suite, its targets and recent runs",
		Example: "  snapq suites get 7a2b…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.c.GetSuite(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			page, err := a.c.ListRunsPage(cmd.Context(), s.ID, client.ListOptions{Limit: 10})
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(struct {
					*client.Suite
					Runs []client.Run `json:"runs"`
				}{s, nonNil(page.Items)})
			}
			sched := "-"
			if s.Schedule != nil {
				sched = s.Schedule.Cron + " " + s.Schedule.Timezone
			}
			a.fields("suite", s.ID, "name", s.Name, "schedule", sched, "enabled", strconv.FormatBool(s.Enabled),
				"threshold", strconv.FormatFloat(s.Threshold, 'g', -1, 64))
			fmt.Fprintln(a.stdout)
			rows := make([][]string, len(s.Targets))
			for i, t := range s.Targets {
				vps := ""
				for k, v := range t.Viewports {
					if k > 0 {
						vps += " "
					}
					vps += fmt.Sprintf("%dx%d", v.Width, v.Height)
				}
				rows[i] = []string{t.Name, t.URL, vps}
			}
			a.table([]string{"TARGET", "URL", "VIEWPORTS"}, rows)
			if len(page.Items) > 0 {
				fmt.Fprintln(a.stdout)
				a.printRuns(page.Items)
			}
			return nil
		},
	}
	var wait bool
	run := &cobra.Command{
		Use:     "run ID",
		Short:   "Start a run of a suite now (with --wait: exit 1 unless it passes)",
		Example: "  snapq suites run 7a2b…\n  snapq suites run 7a2b… --wait",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.c.StartRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !wait {
				if a.json {
					return a.printJSON(r)
				}
				fmt.Fprintf(a.stdout, "run %s started; follow it with: snapq runs watch %s\n", r.ID, r.ID)
				return nil
			}
			if !a.json {
				fmt.Fprintf(a.stdout, "run %s started\n", r.ID)
			}
			return a.watchRun(cmd.Context(), r.ID)
		},
	}
	run.Flags().BoolVar(&wait, "wait", false, "wait until the run is finished, showing progress")

	var all bool
	var targets, comparisons []string
	approve := &cobra.Command{
		Use:     "approve RUN_ID",
		Short:   "Approve a run's captures as the new baselines",
		Long:    "approve promotes a run's captures to baselines: all of them (--all), those of some targets (--target), or some comparisons (--comparison).",
		Example: "  snapq suites approve 3c4d… --all\n  snapq suites approve 3c4d… --target home --target pricing",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			given := 0
			for _, b := range []bool{all, len(targets) > 0, len(comparisons) > 0} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usagef("give exactly one of --all, --target or --comparison")
			}
			r, err := a.c.ApproveRun(cmd.Context(), args[0], client.Approval{All: all, Targets: targets, Comparisons: comparisons})
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(r)
			}
			fmt.Fprintf(a.stdout, "run %s %s: %s\n", r.ID, r.Status, runCounts(r.Counts))
			return nil
		},
	}
	approve.Flags().BoolVar(&all, "all", false, "approve every capture of the run")
	approve.Flags().StringArrayVar(&targets, "target", nil, "approve the captures of this target (repeatable)")
	approve.Flags().StringArrayVar(&comparisons, "comparison", nil, "approve this comparison (repeatable)")
	cmd.AddCommand(ls, get, run, approve)
	return cmd
}

func (a *app) runsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "Show and follow visual-regression runs"}
	get := &cobra.Command{
		Use:     "get ID",
		Short:   "Show a run and its comparisons",
		Example: "  snapq runs get 3c4d…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.c.GetRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(r)
			}
			a.printRun(r)
			return nil
		},
	}
	watch := &cobra.Command{
		Use:     "watch ID",
		Short:   "Follow a run until it is finished (exit 1 unless it passed or was approved)",
		Example: "  snapq runs watch 3c4d…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.watchRun(cmd.Context(), args[0])
		},
	}
	cmd.AddCommand(get, watch)
	return cmd
}

// watchRun follows a run, prints it, and fails unless it passed (or was
// approved).
func (a *app) watchRun(ctx context.Context, id string) error {
	last := ""
	r, err := a.c.WaitRun(ctx, id, func(e client.RunEvent) {
		if a.quiet {
			return
		}
		line := fmt.Sprintf("run %s %s: %s", e.Run.ID, e.Run.Status, runCounts(e.Run.Counts))
		if line != last {
			fmt.Fprintln(a.stderr, line)
			last = line
		}
	})
	if err != nil {
		return err
	}
	if a.json {
		if err := a.printJSON(r); err != nil {
			return err
		}
	} else {
		a.printRun(r)
	}
	if r.Status != client.RunPassed && r.Status != client.RunApproved {
		return failedError{fmt.Sprintf("run %s is %s", r.ID, r.Status)}
	}
	return nil
}

func (a *app) printRun(r *client.Run) {
	a.fields("run", r.ID, "suite", r.SuiteID, "batch", r.BatchID, "trigger", r.Trigger, "status", r.Status,
		"comparisons", runCounts(r.Counts), "created", when(&r.CreatedAt), "finished", when(r.FinishedAt))
	if len(r.Comparisons) == 0 {
		return
	}
	fmt.Fprintln(a.stdout)
	rows := make([][]string, len(r.Comparisons))
	for i, c := range r.Comparisons {
		rows[i] = []string{c.ID, c.Target, c.Viewport, strconv.Itoa(c.Segment), c.Status,
			strconv.FormatFloat(c.DiffRatio, 'f', 4, 64), strconv.FormatBool(c.Approved), c.Message}
	}
	a.table([]string{"COMPARISON", "TARGET", "VIEWPORT", "SEGMENT", "STATUS", "DIFF", "APPROVED", "MESSAGE"}, rows)
}

func (a *app) printRuns(runs []client.Run) {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		rows[i] = []string{r.ID, r.Status, r.Trigger, runCounts(r.Counts), when(&r.CreatedAt)}
	}
	a.table([]string{"RUN", "STATUS", "TRIGGER", "COMPARISONS", "CREATED"}, rows)
}
