package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

// rulesCommand is `snapq suites rules`: a suite's ignore_element and
// dynamic_text rules.
func (a *app) rulesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "rules", Short: "List, preview, add and remove a suite's rules (ignore an element, dynamic text)"}
	cmd.AddCommand(a.rulesLsCommand(), a.rulesAddCommand(), a.rulesPreviewCommand(), a.rulesRmCommand())
	return cmd
}

// rulesLsCommand is `snapq suites rules ls`.
func (a *app) rulesLsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "ls NAME|ID",
		Short:   "List a suite's rules and how many changes each suppressed in the last runs",
		Example: "  snapq suites rules ls homepage",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.suiteID(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rules, err := a.c.ListRules(cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(nonNil(rules))
			}
			rows := make([][]string, len(rules))
			for i, r := range rules {
				target, expires := r.Target, "-"
				if target == "" {
					target = "(suite)"
				}
				if r.ExpiresAt != nil {
					expires = r.ExpiresAt.Format(time.RFC3339)
				}
				rows[i] = []string{r.ID, r.Kind, r.Selector, r.Pattern, target, expires, strconv.FormatBool(r.Active), strconv.Itoa(r.Suppressed)}
			}
			a.table([]string{"ID", "KIND", "SELECTOR", "PATTERN", "TARGET", "EXPIRES", "ACTIVE", "SUPPRESSED"}, rows)
			return nil
		},
	}
}

// ruleFlags are the flags of `rules add` and `rules preview`: the rule
// besides its kind and selector.
type ruleFlags struct {
	in      client.RuleInput
	expires string
}

// register adds the flags to c.
func (f *ruleFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.in.Pattern, "pattern", "", "dynamic_text: the RE2 pattern of the text that may change")
	c.Flags().StringVar(&f.in.Target, "target", "", "the target the rule applies to (default the whole suite)")
	c.Flags().StringVar(&f.expires, "expires", "", "when the rule stops applying (RFC 3339)")
}

// input is the suite and the rule of the arguments NAME|ID KIND SELECTOR and
// the flags.
func (f *ruleFlags) input(args []string) (string, client.RuleInput, error) {
	r := f.in
	r.Kind, r.Selector = args[1], args[2]
	if f.expires != "" {
		t, err := time.Parse(time.RFC3339, f.expires)
		if err != nil {
			return "", r, fmt.Errorf("--expires: %w", err)
		}
		r.ExpiresAt = &t
	}
	return args[0], r, nil
}

// rulesAddCommand is `snapq suites rules add`.
func (a *app) rulesAddCommand() *cobra.Command {
	var f ruleFlags
	add := &cobra.Command{
		Use:   "add NAME|ID KIND SELECTOR",
		Short: "Add a rule: ignore_element, or dynamic_text with --pattern",
		Example: `  snapq suites rules add homepage dynamic_text "header .clock" --pattern '\d{1,2}:\d{2}'
  snapq suites rules add homepage ignore_element '[data-testid="ad"]' --target home --expires 2027-01-01T00:00:00Z`,
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			suite, r, err := f.input(args)
			if err != nil {
				return err
			}
			id, err := a.suiteID(cmd.Context(), suite)
			if err != nil {
				return err
			}
			rule, err := a.c.CreateRule(cmd.Context(), id, r)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rule)
			}
			fmt.Fprintln(a.stdout, rule.ID)
			return nil
		},
	}
	f.register(add)
	return add
}

// rulesPreviewCommand is `snapq suites rules preview`.
func (a *app) rulesPreviewCommand() *cobra.Command {
	var f ruleFlags
	preview := &cobra.Command{
		Use:     "preview NAME|ID KIND SELECTOR",
		Short:   "Count the changes of the last runs a rule would suppress (nothing is stored)",
		Example: `  snapq suites rules preview homepage dynamic_text "header .clock" --pattern '\d{1,2}:\d{2}'`,
		Args:    exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			suite, r, err := f.input(args)
			if err != nil {
				return err
			}
			id, err := a.suiteID(cmd.Context(), suite)
			if err != nil {
				return err
			}
			p, err := a.c.PreviewRule(cmd.Context(), id, r)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(p)
			}
			fmt.Fprintf(a.stdout, "would suppress %d of %d changes in the last %d runs\n", p.WouldSuppress, p.Changes, p.Runs)
			return nil
		},
	}
	f.register(preview)
	return preview
}

// rulesRmCommand is `snapq suites rules rm`.
func (a *app) rulesRmCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "rm RULE_ID",
		Short:   "Remove a rule",
		Example: "  snapq suites rules rm 0193…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.c.DeleteRule(cmd.Context(), args[0])
		},
	}
}

// changesCommand is `snapq suites changes COMPARISON_ID`.
func (a *app) changesCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "changes COMPARISON_ID",
		Short:   "Show a comparison's changes, explained by elements",
		Example: "  snapq suites changes 0193…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cc, err := a.c.ComparisonChanges(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(cc)
			}
			rows := make([][]string, len(cc.Changes))
			for i, ch := range cc.Changes {
				var detail []string
				if ch.Before != nil && ch.After != nil && ch.Kind == "text_changed" {
					detail = append(detail, fmt.Sprintf("%q → %q", ch.Before.Text, ch.After.Text))
				}
				if ch.DX != 0 || ch.DY != 0 {
					detail = append(detail, fmt.Sprintf("dx=%d dy=%d", ch.DX, ch.DY))
				}
				if len(ch.Properties) > 0 {
					detail = append(detail, strings.Join(ch.Properties, ","))
				}
				if ch.SuppressedBy != "" {
					detail = append(detail, "suppressed by "+ch.SuppressedBy)
				}
				rows[i] = []string{ch.Kind, ch.Selector, fmt.Sprintf("%d,%d %dx%d", ch.Box.X, ch.Box.Y, ch.Box.Width, ch.Box.Height), strings.Join(detail, "; ")}
			}
			a.table([]string{"KIND", "SELECTOR", "BOX", "DETAIL"}, rows)
			return nil
		},
	}
}
