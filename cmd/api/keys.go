package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snapq/snapq/jobs"
)

// keys runs `api keys create|list|revoke`.
func keys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("api keys: want create, list or revoke\n%s", usage)
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
	}
	return fmt.Errorf("api keys %s: want create, list or revoke", args[0])
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
