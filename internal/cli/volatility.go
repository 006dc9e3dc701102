package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

// volatilityCommand is `snapq suites volatility`: where a suite's pages
// change by themselves, and the rules that would quiet them.
func (a *app) volatilityCommand() *cobra.Command {
	var o client.VolatilityOptions
	var accept bool
	var set string
	cmd := &cobra.Command{
		Use:   "volatility NAME|ID",
		Short: "Show which elements change by themselves over a suite's last runs, and suggested rules",
		Long: `volatility reads the changes of the suite's last runs and lists each element (target, viewport,
stable selector) with the share of runs in which it changed in place (text, image, frame, style). An
element that changed in at least --threshold of at least --min-runs runs is volatile and suggested as
an ignore_element rule, with how many of those runs' changes it would have suppressed. --accept
creates the suggested rules.

--set MODE stores the suite's volatility mode (off, suggest or mask), with --min-runs and
--threshold as its settings: in mask mode, each comparison masks the regions learned volatile
over the suite's earlier runs (never one in which a human approved a change) and lists them.`,
		Example: "  snapq suites volatility homepage\n  snapq suites volatility homepage --runs 20 --threshold 0.6 --accept\n" +
			"  snapq suites volatility homepage --set mask --min-runs 3",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.suiteID(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if set != "" {
				patch := map[string]any{"volatility": client.VolatilitySettings{Mode: set, MinRuns: o.MinRuns, Threshold: o.Threshold}}
				su, err := a.c.UpdateSuite(cmd.Context(), id, patch)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "volatility: mode %s, min_runs %d, threshold %g\n", su.Volatility.Mode, su.Volatility.MinRuns, su.Volatility.Threshold)
			}
			v, err := a.c.SuiteVolatility(cmd.Context(), id, o)
			if err != nil {
				return err
			}
			if accept {
				for _, s := range v.Suggestions {
					if _, err := a.c.CreateRule(cmd.Context(), id, s.Rule); err != nil {
						return fmt.Errorf("accept the rule for %s: %w", s.Rule.Selector, err)
					}
				}
			}
			if a.json {
				return a.printJSON(v)
			}
			a.printVolatility(v, accept)
			return nil
		},
	}
	cmd.Flags().IntVar(&o.Runs, "runs", 0, "how many of the last runs to learn from (1-50; default 10)")
	cmd.Flags().IntVar(&o.MinRuns, "min-runs", 0, "fewer runs than this make nothing volatile (default 5)")
	cmd.Flags().Float64Var(&o.Threshold, "threshold", 0, "the share of runs a volatile element changed in (default 0.5)")
	cmd.Flags().BoolVar(&accept, "accept", false, "create the suggested rules")
	cmd.Flags().StringVar(&set, "set", "", "store the suite's volatility mode: off, suggest or mask (with --min-runs and --threshold)")
	return cmd
}

// printVolatility prints the regions and the suggestions as tables.
func (a *app) printVolatility(v *client.Volatility, accepted bool) {
	rows := make([][]string, len(v.Regions))
	for i, r := range v.Regions {
		rows[i] = []string{r.Target, r.Viewport, r.Selector, fmt.Sprintf("%d/%d", r.ChangedRuns, v.Runs),
			strconv.FormatFloat(r.Share, 'f', 2, 64), strconv.FormatBool(r.Volatile)}
	}
	a.table([]string{"TARGET", "VIEWPORT", "SELECTOR", "CHANGED", "SHARE", "VOLATILE"}, rows)
	state := "suggested"
	if accepted {
		state = "created"
	}
	srows := make([][]string, len(v.Suggestions))
	for i, s := range v.Suggestions {
		srows[i] = []string{s.Rule.Kind, s.Rule.Selector, s.Rule.Target,
			fmt.Sprintf("would have suppressed %d of %d changes in the last %d runs", s.Preview.WouldSuppress, s.Preview.Changes, s.Preview.Runs), state}
	}
	if len(srows) > 0 {
		fmt.Fprintln(a.stdout)
		a.table([]string{"RULE", "SELECTOR", "TARGET", "PREVIEW", ""}, srows)
	}
}
