// Package pgtest starts a throwaway PostgreSQL server on loopback for tests
// and benchmarks: initdb into a temporary directory, then postgres with
// fsync off on a free port. PostgreSQL refuses to run as root, so when the
// tests run as root the server runs as the "postgres" user that Debian's
// package creates. It never skips: without the binaries it fails with the
// command that installs them.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Password is the superuser's password in every test server.
const Password = "kollect-test"

// Server is a running PostgreSQL.
type Server struct {
	Port     int
	settings []string
	dir      string
	bin      string
	cred     *syscall.Credential
	cmd      *exec.Cmd
	done     chan error
}

// TB is the part of testing.TB the helper uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	Logf(format string, args ...any)
}

// Start initialises and starts a server; it is stopped and removed when
// the test ends. settings are server settings (name=value) beyond the
// defaults, such as "max_connections=300".
func Start(tb TB, settings ...string) *Server {
	tb.Helper()
	s, err := New(settings...)
	if err != nil {
		tb.Fatalf("postgres test server: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New initialises and starts a server with settings (name=value) beyond
// the defaults; Close stops and removes it.
func New(settings ...string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, settings: settings}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user (created by Debian's postgresql package; run 'make test-deps'): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if s.dir, err = os.MkdirTemp("", "kollect-pg-"); err != nil {
		return nil, err
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return nil, err
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return nil, err
		}
	}
	pw := filepath.Join(s.dir, "pwfile")
	if err := s.writeFile(pw, Password+"\n"); err != nil {
		return nil, err
	}
	initdb := s.command(filepath.Join(bin, "initdb"), "-D", filepath.Join(s.dir, "data"), "-U", "postgres",
		"--pwfile="+pw, "--auth=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	if s.Port, err = freePort(); err != nil {
		return nil, err
	}
	if err := s.Restart(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// DSN is the superuser's URL for database db ("" for postgres).
func (s *Server) DSN(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable", Password, s.Port, db)
}

// Restart starts the server (again) on the same port and data, and waits
// until it accepts connections.
func (s *Server) Restart() error {
	if s.cmd != nil {
		return nil
	}
	args := []string{"-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.Port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=50"}
	for _, kv := range s.settings {
		args = append(args, "-c", kv) // a later setting wins
	}
	cmd := s.command(filepath.Join(s.bin, "postgres"), args...)
	log, err := os.OpenFile(filepath.Join(os.TempDir(), filepath.Base(s.dir)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait(); log.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.DSN(""))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case werr := <-s.done:
			s.cmd = nil
			return fmt.Errorf("postgres exited: %v (log: %s)", werr, log.Name())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after 30s: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down (fast shutdown) and keeps its data.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case _ = <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		_ = <-s.done
	}
	s.cmd = nil
}

// Close stops the server and removes its data.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(s.dir)
	os.Remove(filepath.Join(os.TempDir(), filepath.Base(s.dir)+".log"))
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	// The server dies with the test process, even when a test binary is
	// killed before its cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.cred != nil {
		cmd.SysProcAttr.Credential = s.cred
	}
	return cmd
}

func (s *Server) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

// binDir finds PostgreSQL's server binaries: pg_config, then Debian's
// versioned directories (newest first), then PATH.
func binDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); exists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if exists(filepath.Join(d, "initdb")) && exists(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if target, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(target), nil
		}
	}
	return "", fmt.Errorf("PostgreSQL server binaries not found; run 'make test-deps' (installs Debian's postgresql package)")
}

func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
