package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

// keys runs `api keys create|list|revoke|retention`.
func keys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("api keys: want create, list, revoke or retention\n%s", usage)
	}
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	switch args[0] {
	case "create":
		fs := flag.NewFlagSet("api keys create", flag.ContinueOnError)
		name := fs.String("name", "", "what the key is for (required)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		secret, k, err := jobs.NewAPIKey(*name)
		if err != nil {
			return err
		}
		if err := st.CreateKey(ctx, k); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "created key %s (%s); it is shown only now, store it safely:\n", k.ID, k.Name)
		fmt.Println(secret)
		return nil
	case "list":
		ks, err := st.ListKeys(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tPREFIX\tNAME\tCREATED\tLAST USED\tREVOKED")
		for _, k := range ks {
			fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Name, k.CreatedAt.Format(time.RFC3339), when(k.LastUsedAt), when(k.RevokedAt))
		}
		return w.Flush()
	case "revoke":
		if len(args) != 2 || !jobs.ValidID(args[1]) {
			return fmt.Errorf("usage: api keys revoke ID (see api keys list)")
		}
		if err := st.RevokeKey(ctx, strings.ToLower(args[1])); err != nil {
			return err
		}
		fmt.Println("revoked", args[1])
		return nil
	case "retention":
		return keyRetention(ctx, st, args[1:])
	}
	return fmt.Errorf("api keys %s: want create, list, revoke or retention", args[0])
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// keyRetention runs `api keys retention ID DAYS|default`: the key's batches
// (and its suites' runs, unless the suite sets its own days) are deleted
// after DAYS days; 0 keeps them forever; default follows SNAPQ_RETENTION_DAYS.
func keyRetention(ctx context.Context, st interface {
	SetKeyRetention(ctx context.Context, id string, days *int) error
}, args []string) error {
	const use = "usage: api keys retention ID DAYS|default (0 keeps forever; default follows SNAPQ_RETENTION_DAYS)"
	if len(args) != 2 || !jobs.ValidID(args[0]) {
		return errors.New(use)
	}
	var days *int
	if args[1] != "default" {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 || n > maintenance.MaxRetentionDays {
			return fmt.Errorf("DAYS %q: want 0-%d or default\n%s", args[1], maintenance.MaxRetentionDays, use)
		}
		days = &n
	}
	if err := st.SetKeyRetention(ctx, strings.ToLower(args[0]), days); err != nil {
		return err
	}
	fmt.Println("retention of", args[0], "set to", args[1])
	return nil
}
