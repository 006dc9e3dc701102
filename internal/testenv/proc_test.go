package testenv

import (
	"context"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A killed redis-server comes back on its port with what its AOF holds.
func TestRedisServerRestartKeepsAOF(t *testing.T) {
	t.Parallel()
	rs := StartRedisServer(t)
	ctx := context.Background()
	c := rs.Client()
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rs.Stop(syscall.SIGKILL)
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("after SIGKILL and restart: GET k = %q, %v; want \"v\"", got, err)
	}
}

// The test's own Postgres answers, restarts, and answers again.
func TestPostgresServerRestart(t *testing.T) {
	t.Parallel()
	pg := StartPostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE TABLE t AS SELECT 1 AS n")
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Restart("fast"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop("immediate"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	if n, err := pg.QueryInt(ctx, "SELECT count(*) FROM t"); err != nil || n != 1 {
		t.Fatalf("after restarts: count = %d, %v; want 1", n, err)
	}
}
