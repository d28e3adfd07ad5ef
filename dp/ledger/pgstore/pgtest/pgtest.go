// Package pgtest starts a throw-away PostgreSQL cluster for tests: initdb
// into a temporary directory, a postgres server on a free loopback port
// with its unix socket in that directory (fsync off), stopped and removed
// when the tests end, and a new database on it for each test. Tests that
// need it skip with a clear message where PostgreSQL's server binaries
// are missing (Debian's `postgresql` package provides them; .ci/run
// installs it, and sets RequireEnv so that CI fails rather than skips
// them).
//
// initdb and postgres refuse to run as root. When the test runs as root
// the cluster is run as the unprivileged OS user "postgres" (Debian's
// package creates it), else "nobody": the data directory is created under
// the system's temporary directory and handed to that user, and both
// commands run with its uid and gid.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSNEnv, when set, names an existing PostgreSQL server (a postgres://
// URL of a role allowed to create databases) to test against instead of
// starting a cluster.
const DSNEnv = "DPAL_TEST_POSTGRES_DSN"

// RequireEnv, when set (.ci/run sets it), makes Start fail a test instead
// of skipping it where PostgreSQL is not installed: CI must not skip the
// PostgreSQL tests.
const RequireEnv = "DPAL_REQUIRE_POSTGRES"

// binDirs are where the server binaries are looked for after PATH.
var binDirs = []string{"/usr/local/bin", "/usr/lib/postgresql/*/bin"}

// shared is the cluster of a test binary run through Main: started by
// the first Start, stopped when the tests end.
var shared struct {
	sync.Mutex
	main bool
	c    *cluster
	err  error
	n    int // databases created
}

// Main runs a test binary's tests and then stops the cluster that Start
// started for them, if any: a package's TestMain calls
// os.Exit(pgtest.Main(m)). Without it, every Start starts a cluster of
// its own.
func Main(m *testing.M) int {
	shared.Lock()
	shared.main = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.c != nil {
		shared.c.stop()
	}
	return code
}

// Start returns the DSN (a postgres:// URL with sslmode=disable) of a new,
// empty database on a throw-away cluster, or on DSNEnv's server when that
// is set. It skips t when PostgreSQL's server binaries are not on this
// machine, and fails it when the cluster cannot start.
func Start(t testing.TB) string {
	t.Helper()
	server, err := server(t)
	if err != nil {
		t.Fatalf("starting a throw-away PostgreSQL cluster: %v", err)
	}
	shared.Lock()
	shared.n++
	db := fmt.Sprintf("dpal_test_%d_%d", os.Getpid(), shared.n)
	shared.Unlock()
	dsn, err := createDatabase(server, db)
	if err != nil {
		t.Fatalf("creating database %s: %v", db, err)
	}
	if os.Getenv(DSNEnv) != "" { // a throw-away cluster goes as a whole
		t.Cleanup(func() { execSQL(server, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)") })
	}
	return dsn
}

// server is the DSN of the server Start creates databases on.
func server(t testing.TB) (string, error) {
	if dsn := os.Getenv(DSNEnv); dsn != "" {
		return dsn, nil
	}
	initdb, pgctl, err := binaries()
	if err != nil && os.Getenv(RequireEnv) != "" {
		t.Fatalf("PostgreSQL is not installed (%v), and %s is set: install Debian's postgresql package", err, RequireEnv)
	}
	if err != nil {
		t.Skipf("PostgreSQL is not installed (%v): install Debian's postgresql package (.ci/run does), or set %s", err, DSNEnv)
	}
	shared.Lock()
	defer shared.Unlock()
	if !shared.main {
		c, err := start(initdb, pgctl)
		if c != nil {
			t.Cleanup(c.stop)
		}
		if err != nil {
			return "", err
		}
		return c.dsn, nil
	}
	if shared.c == nil && shared.err == nil {
		shared.c, shared.err = start(initdb, pgctl)
	}
	if shared.err != nil {
		return "", shared.err
	}
	return shared.c.dsn, nil
}

// createDatabase creates database db on the server and returns its DSN.
func createDatabase(server, db string) (string, error) {
	if err := execSQL(server, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return "", err
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	u.Path = "/" + db
	return u.String(), nil
}

// execSQL runs one statement on the server.
func execSQL(server, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// binaries finds initdb and pg_ctl (from one installation).
func binaries() (initdb, pgctl string, err error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if q := filepath.Join(filepath.Dir(p), "pg_ctl"); executable(q) {
			return p, q, nil
		}
	}
	for _, pat := range binDirs {
		dirs, _ := filepath.Glob(pat)
		for _, d := range dirs {
			if p, q := filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl"); executable(p) && executable(q) {
				return p, q, nil
			}
		}
	}
	return "", "", errors.New("initdb not found on PATH nor in " + strings.Join(binDirs, ", "))
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// cluster is a running throw-away cluster.
type cluster struct {
	dir, pgctl string
	cred       *syscall.Credential
	dsn        string
	opts       string // the server's options (port, socket, fsync)
}

// start runs initdb and starts the server; a non-nil cluster must be
// stopped even when err is set.
func start(initdb, pgctl string) (*cluster, error) {
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dpal-pgtest-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, pgctl: pgctl, cred: cred}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return c, err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run(initdb, "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return c, fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return c, err
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100", port, dir)
	if out, err := c.run(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return c, fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	c.dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	c.opts = opts
	return c, nil
}

// Restart stops the shared cluster's server as a crash would (immediate
// shutdown: no checkpoint, clients' connections cut) and starts it again
// on the same port, for tests of how clients recover. It skips t where
// the tests run on DSNEnv's server, and fails it without a cluster that
// Start started under Main.
func Restart(t testing.TB) {
	t.Helper()
	if os.Getenv(DSNEnv) != "" {
		t.Skipf("restarting PostgreSQL needs the throw-away cluster, not %s's server", DSNEnv)
	}
	shared.Lock()
	c := shared.c
	shared.Unlock()
	if c == nil {
		t.Fatal("pgtest.Restart: no shared cluster (call Start first, from a test binary run through Main)")
	}
	data := filepath.Join(c.dir, "data")
	if out, err := c.run(c.pgctl, "-D", data, "-m", "immediate", "-w", "-t", "60", "stop"); err != nil {
		t.Fatalf("pg_ctl stop: %v: %s", err, out)
	}
	if out, err := c.run(c.pgctl, "-D", data, "-o", c.opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		t.Fatalf("pg_ctl start: %v: %s", err, out)
	}
}

// stop stops the server (immediate shutdown: nothing in it is kept) and
// removes the cluster.
func (c *cluster) stop() {
	if c.dsn != "" {
		c.run(c.pgctl, "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "-t", "30", "stop")
	}
	os.RemoveAll(c.dir)
}

// run runs a server binary as the cluster's user, with a time limit.
func (c *cluster) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

// runAs is the credential to run the server with: nil when not root,
// else the "postgres" user's, else nobody's.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil && uid != 0 {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run the server as (initdb refuses root)")
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
