package cli

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

func (a *app) suitesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "suites", Short: "List and show visual-regression suites, run them, approve runs"}
	cmd.AddCommand(a.suitesLsCommand(), a.suitesGetCommand(), a.suitesRunCommand(), a.suitesApproveCommand(),
		a.suitesMergeCommand(), a.suitesFlakyCommand(), a.rulesCommand(), a.changesCommand(), a.volatilityCommand())
	return cmd
}

// suitesLsCommand is `snapq suites ls`.
func (a *app) suitesLsCommand() *cobra.Command {
	return &cobra.Command{
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
}

// suitesGetCommand is `snapq suites get`.
func (a *app) suitesGetCommand() *cobra.Command {
	return &cobra.Command{
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
}

// suitesRunCommand is `snapq suites run`, the CI gate with --wait.
func (a *app) suitesRunCommand() *cobra.Command {
	var wait bool
	var junitPath, markdownPath string
	var opts client.RunOptions
	run := &cobra.Command{
		Use:   "run NAME|ID",
		Short: "Start a run of a suite now; with --wait, a CI gate",
		Long: `run starts a run of the suite named NAME (or with the id ID). --branch puts it on a branch:
it compares against the branch's approved baselines where they exist, else the base branch's
(--base-branch, default the suite's main branch). --base-url captures every target on another
origin (a deploy preview); --commit names the commit under test.

With --wait it follows the run and prints a summary and the review link; the exit code is
0 when the run passed (or was approved), 1 when it failed or needs review, 2 on an error.`,
		Example: "  snapq suites run homepage\n" +
			"  snapq suites run homepage --branch feature/login --commit $GITHUB_SHA --base-url https://pr-42.preview.example.com --wait\n" +
			"  snapq suites run homepage --wait --junit snapq.xml --markdown \"$GITHUB_STEP_SUMMARY\"",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !wait && (junitPath != "" || markdownPath != "") {
				return usagef("--junit and --markdown describe the finished run: give --wait too")
			}
			id, err := a.suiteID(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			r, err := a.c.StartRunWith(cmd.Context(), id, opts)
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
			return a.gateRun(cmd.Context(), r.ID, junitPath, markdownPath)
		},
	}
	run.Flags().BoolVar(&wait, "wait", false, "wait until the run is finished, showing progress; exit 0 passed, 1 failed or needs review, 2 error")
	run.Flags().StringVar(&junitPath, "junit", "", "with --wait: write a JUnit XML report of the run to this file (one test case per comparison)")
	run.Flags().StringVar(&markdownPath, "markdown", "", "with --wait: write a Markdown summary of the run to this file (e.g. $GITHUB_STEP_SUMMARY)")
	run.Flags().StringVar(&opts.Branch, "branch", "", "run on this branch (its baselines, falling back to the base branch's)")
	run.Flags().StringVar(&opts.BaseBranch, "base-branch", "", "the branch to fall back to (default: the suite's main branch)")
	run.Flags().StringVar(&opts.Commit, "commit", "", "the commit SHA under test")
	run.Flags().StringVar(&opts.BaseURL, "base-url", "", "capture every target on this origin instead (e.g. a deploy preview)")
	run.Flags().StringVar(&opts.CompareToBaseURL, "compare-to", "", "an environment pair: capture every target on this origin too and diff the two (no baselines), e.g. production vs staging")
	run.Flags().IntVar(&opts.PullRequest, "pull-request", 0, "the pull (merge) request whose snapq comment the run edits (with the suite's vcs)")
	return run
}

// suitesMergeCommand is `snapq suites merge`.
func (a *app) suitesMergeCommand() *cobra.Command {
	var mergeBase string
	merge := &cobra.Command{
		Use:     "merge NAME|ID BRANCH",
		Short:   "Promote a branch's approved baselines to its base branch (when its pull request merges)",
		Example: "  snapq suites merge homepage feature/login",
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.suiteID(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			m, err := a.c.MergeBranch(cmd.Context(), id, args[1], mergeBase)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(m)
			}
			fmt.Fprintf(a.stdout, "merged %s into %s: %d baselines promoted\n", m.Branch, m.BaseBranch, m.Promoted)
			return nil
		},
	}
	merge.Flags().StringVar(&mergeBase, "base-branch", "", "where to promote them (default: the suite's main branch)")
	return merge
}

// suitesApproveCommand is `snapq suites approve`.
func (a *app) suitesApproveCommand() *cobra.Command {
	var all bool
	var targets, comparisons, approveStatus []string
	approve := &cobra.Command{
		Use:     "approve RUN_ID",
		Short:   "Approve a run's captures as the new baselines",
		Long:    "approve promotes a run's captures to baselines: all of them (--all), those of some targets (--target), some comparisons (--comparison), or those in some statuses (--status failed|new|missing).",
		Example: "  snapq suites approve 3c4d… --all\n  snapq suites approve 3c4d… --target home --target pricing\n  snapq suites approve 3c4d… --status new",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			given := 0
			for _, b := range []bool{all, len(targets) > 0, len(comparisons) > 0, len(approveStatus) > 0} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usagef("give exactly one of --all, --target, --comparison or --status")
			}
			r, err := a.c.ApproveRun(cmd.Context(), args[0], client.Approval{All: all, Targets: targets, Comparisons: comparisons,
				Status: approveStatus})
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
	approve.Flags().StringArrayVar(&approveStatus, "status", nil, "approve every open comparison in this status: failed, new or missing (repeatable)")
	return approve
}

// suitesFlakyCommand is `snapq suites flaky`.
func (a *app) suitesFlakyCommand() *cobra.Command {
	var flakyOpts client.FlakinessOptions
	flaky := &cobra.Command{
		Use:   "flaky NAME|ID",
		Short: "List a suite's targets flakiest first (changes between runs nobody approved)",
		Long: `flaky reads the suite's newest finished runs and scores each target: a flip is a change from
passed to not passed (or back) between consecutive runs where the older run was not approved; the
score is flips over transitions, 0 steady, 1 changing on every run. The runs column shows each
run's outcome, oldest first: . passed, A approved, F failed, N new, M missing, E error.`,
		Example: "  snapq suites flaky homepage\n  snapq suites flaky homepage --runs 50 --limit 10 --json",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.suiteID(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			f, err := a.c.SuiteFlakiness(cmd.Context(), id, flakyOpts)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(f)
			}
			rows := make([][]string, len(f.Targets))
			for i, t := range f.Targets {
				rows[i] = []string{t.Target, strconv.FormatFloat(t.FlakeScore, 'f', 2, 64), strconv.Itoa(t.Flips), outcomes(t.History)}
			}
			a.table([]string{"TARGET", "SCORE", "FLIPS", "RUNS"}, rows)
			return nil
		},
	}
	flaky.Flags().IntVar(&flakyOpts.Runs, "runs", 0, "how many of the newest finished runs to read (2-200; default 20)")
	flaky.Flags().IntVar(&flakyOpts.Limit, "limit", 0, "at most this many targets, the flakiest (default all)")
	flaky.Flags().StringVar(&flakyOpts.Branch, "branch", "", "the branch whose runs to read (default the suite's main branch)")
	return flaky
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
	cmd.AddCommand(a.groupCommands()...)
	return cmd
}

// followRun waits for a run to end, printing each change of its status and
// counts on standard error (unless quiet).
func (a *app) followRun(ctx context.Context, id string) (*client.Run, error) {
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
	return r, err
}

// watchRun follows a run, prints it, and fails unless it passed (or was
// approved).
func (a *app) watchRun(ctx context.Context, id string) error {
	r, err := a.followRun(ctx, id)
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

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// suiteID resolves a suite argument: an id as it is, else the one suite of
// that name.
func (a *app) suiteID(ctx context.Context, arg string) (string, error) {
	if uuidPattern.MatchString(arg) {
		return arg, nil
	}
	var ids []string
	for s, err := range a.c.ListSuites(ctx, client.ListOptions{Limit: 1000}) {
		if err != nil {
			return "", err
		}
		if s.Name == arg {
			ids = append(ids, s.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", usagef("no suite is named %q (snapq suites ls lists them)", arg)
	case 1:
		return ids[0], nil
	default:
		return "", usagef("%d suites are named %q; give the id of one (snapq suites ls)", len(ids), arg)
	}
}

// gateRun follows a run as a CI gate: it prints the summary and the review
// link and exits 0 when the run passed or was approved, 1 when it failed or
// needs review, 2 when it ended in error or could not be followed. It
// writes the JUnit and Markdown reports the paths name (none for "").
func (a *app) gateRun(ctx context.Context, id, junitPath, markdownPath string) error {
	r, err := a.followRun(ctx, id)
	if err != nil {
		return errorExit{err}
	}
	if err := writeReports(r, junitPath, markdownPath); err != nil {
		return errorExit{err}
	}
	if a.json {
		if err := a.printJSON(r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "run %s %s: %s\nreview: %s\n", r.ID, r.Status, gateSummary(r.Counts), r.ReviewURL)
	}
	switch r.Status {
	case client.RunPassed, client.RunApproved:
		return nil
	case client.RunFailed, client.RunNeedsReview:
		return failedError{fmt.Sprintf("run %s %s; review it at %s", r.ID, r.Status, r.ReviewURL)}
	default:
		return errorExit{fmt.Errorf("run %s ended in %s; see %s", r.ID, r.Status, r.ReviewURL)}
	}
}

// gateSummary is a run's counts as a pull request shows them:
// "3 changed, 1 new, 120 passed" (missing and error only when there are some).
func gateSummary(c client.RunCounts) string {
	out := fmt.Sprintf("%d changed, %d new, %d passed", c.Failed, c.New, c.Passed)
	if c.Missing > 0 {
		out += fmt.Sprintf(", %d missing", c.Missing)
	}
	if c.Error > 0 {
		out += fmt.Sprintf(", %d error", c.Error)
	}
	return out
}

// outcomes is a target's history as one letter per run, oldest first.
func outcomes(h []client.TargetRun) string {
	letter := map[string]byte{"passed": '.', "failed": 'F', "new": 'N', "missing": 'M', "error": 'E'}
	out := make([]byte, 0, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		c, ok := letter[h[i].Status]
		switch {
		case h[i].Approved && h[i].Status != "passed":
			c = 'A'
		case !ok:
			c = '?'
		}
		out = append(out, c)
	}
	return string(out)
}
