package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

// groupCommands are `snapq runs groups`, `approve-group` and `reject-group`:
// review at scale, one decision per change group.
func (a *app) groupCommands() []*cobra.Command {
	groups := &cobra.Command{
		Use:   "groups RUN_ID",
		Short: "List a run's change groups (comparisons showing the same change), largest first",
		Long: `groups lists the run's change groups: comparisons whose changed pixels are the same, at the same
place in their segment, across targets, viewports and segments. Approve or reject a whole group with
approve-group and reject-group.`,
		Example: "  snapq runs groups 3c4d…",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			gs, err := a.c.ListGroups(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(gs)
			}
			rows := make([][]string, len(gs))
			for i, g := range gs {
				rows[i] = []string{g.ID, strconv.Itoa(g.Size), strconv.Itoa(g.NeedsReview), groupCounts(g.Counts),
					strings.Join(g.Viewports, ","), sample(g.Targets, 3)}
			}
			a.table([]string{"GROUP", "SIZE", "TO REVIEW", "STATUSES", "VIEWPORTS", "TARGETS"}, rows)
			return nil
		},
	}
	action := func(verb string, do func(*cobra.Command, string, string) (*client.GroupResult, error)) *cobra.Command {
		return &cobra.Command{
			Use:     verb + "-group RUN_ID GROUP",
			Short:   strings.ToUpper(verb[:1]) + verb[1:] + " every comparison of a change group that waits for review, in one call",
			Example: "  snapq runs " + verb + "-group 3c4d… g1-9b32f3c3eec3ea48b9ef166aa55596bb",
			Args:    exactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				res, err := do(cmd, args[0], args[1])
				if err != nil {
					return err
				}
				if a.json {
					return a.printJSON(res)
				}
				n := res.Approved
				if verb == "reject" {
					n = res.Rejected
				}
				fmt.Fprintf(a.stdout, "%sd %d of the group's %d comparisons; run %s: %s\n", verb, n, res.Group.Size,
					res.RunStatus, runCounts(res.Counts))
				return nil
			},
		}
	}
	approve := action("approve", func(cmd *cobra.Command, run, group string) (*client.GroupResult, error) {
		return a.c.ApproveGroup(cmd.Context(), run, group)
	})
	reject := action("reject", func(cmd *cobra.Command, run, group string) (*client.GroupResult, error) {
		return a.c.RejectGroup(cmd.Context(), run, group)
	})
	return []*cobra.Command{groups, approve, reject}
}

func groupCounts(c client.GroupCounts) string {
	var parts []string
	for _, p := range []struct {
		n    int
		name string
	}{{c.Failed, "failed"}, {c.New, "new"}, {c.Missing, "missing"}, {c.Passed, "passed"}, {c.Error, "error"},
		{c.Approved, "approved"}, {c.Rejected, "rejected"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	return strings.Join(parts, ", ")
}

// sample lists the first n names and how many more there are.
func sample(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s +%d", strings.Join(names[:n], ","), len(names)-n)
}
