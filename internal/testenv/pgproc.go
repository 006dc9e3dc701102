package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresServer is a Postgres cluster of one test, on a loopback port, a
// data directory and a socket directory of its own, for tests that restart
// or stop Postgres: the machine's shared Postgres must never be hurt by one
// test. Authentication is trust, for user postgres, on 127.0.0.1 only.
type PostgresServer struct {
	Port string
	Dir  string // holds data/ (PGDATA), sock/ and postgres.log
	bin  string
	root bool // run the server's programs as the postgres OS user
}

// StartPostgres initdbs and starts a cluster for the test and stops it, and
// removes its files, in t.Cleanup. Call it before starting processes that
// use it, so it outlives them. As root, the programs run as the postgres OS
// user (initdb refuses root). Missing binaries fail the test under CI=true
// and skip it elsewhere.
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	bin := Getenv("SNAPQ_PG_BIN_DIR", "/usr/lib/postgresql/15/bin")
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		Unavailable(t, "postgres binaries", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "snapq-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &PostgresServer{Port: port, Dir: dir, bin: bin, root: os.Geteuid() == 0}
	t.Cleanup(func() {
		_ = p.run("pg_ctl", "stop", "-D", p.data(), "-m", "immediate", "-w")
		if t.Failed() {
			t.Logf("--- postgres log (last 2 KiB) ---\n%s", tail(filepath.Join(dir, "postgres.log"), 2048))
		}
		os.RemoveAll(dir)
	})
	for _, d := range []string{p.data(), p.sock()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if p.root {
		u, err := user.Lookup("postgres")
		if err != nil {
			Unavailable(t, "postgres OS user", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// The postgres user must reach its directories through dir.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{p.data(), p.sock()} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		logf, err := os.Create(filepath.Join(dir, "postgres.log"))
		if err != nil {
			t.Fatal(err)
		}
		logf.Close()
		if err := os.Chown(logf.Name(), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.run("initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// URL is the cluster's postgres database as SNAPQ_DATABASE_URL wants it.
func (p *PostgresServer) URL() string {
	return "postgres://postgres@127.0.0.1:" + p.Port + "/postgres?sslmode=disable"
}

// Start starts the server and waits until it accepts connections.
func (p *PostgresServer) Start() error {
	return p.run("pg_ctl", "start", "-D", p.data(), "-w", "-t", "30", "-l", filepath.Join(p.Dir, "postgres.log"),
		"-o", p.serverOptions())
}

// Stop stops the server in mode (smart, fast or immediate; immediate is a
// crash: no checkpoint, recovery on the next start) and waits for the exit.
func (p *PostgresServer) Stop(mode string) error {
	return p.run("pg_ctl", "stop", "-D", p.data(), "-m", mode, "-w", "-t", "30")
}

// Restart is pg_ctl restart in mode.
func (p *PostgresServer) Restart(mode string) error {
	return p.run("pg_ctl", "restart", "-D", p.data(), "-m", mode, "-w", "-t", "30",
		"-l", filepath.Join(p.Dir, "postgres.log"), "-o", p.serverOptions())
}

// QueryInt runs one statement that returns a single integer, e.g. a count.
func (p *PostgresServer) QueryInt(ctx context.Context, sql string, args ...any) (int, error) {
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

func (p *PostgresServer) data() string { return filepath.Join(p.Dir, "data") }
func (p *PostgresServer) sock() string { return filepath.Join(p.Dir, "sock") }

// serverOptions keeps the server on loopback, its socket in the test's
// directory, and skips fsync: the tests stop processes, not the machine.
func (p *PostgresServer) serverOptions() string {
	return "-p " + p.Port + " -c listen_addresses=127.0.0.1 -k " + p.sock() + " -c fsync=off -c max_connections=100"
}

// run runs a program of the server's bin directory, as the postgres user when
// running as root.
func (p *PostgresServer) run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := filepath.Join(p.bin, name)
	var cmd *exec.Cmd
	if p.root {
		cmd = exec.CommandContext(ctx, "setpriv", append([]string{"--reuid=postgres", "--regid=postgres", "--init-groups", "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = p.Dir
	// pg_ctl sends the server's output to the -l file, so the pipes close when pg_ctl exits.
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	return nil
}
