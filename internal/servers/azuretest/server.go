// Package azuretest runs Azurite's Blob service (from npm, installed by
// make test-deps) on loopback for the test: the Azure Blob API with the
// well-known development account. Stop and Restart take it down and bring
// it back on the same port with its data (kept on disk).
package azuretest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"kollect.dev/kollect/internal/sinktest"
)

// The development account every Azurite accepts.
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// TB is the part of testing.TB Start needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Server is one Azurite Blob service.
type Server struct {
	// URL is the service endpoint (http://127.0.0.1:port); an account's
	// containers are at URL/devstoreaccount1/<container>.
	URL      string
	port     int
	bin, dir string
	cmd      *exec.Cmd
	exited   chan error
}

// Binary finds azurite-blob: $KOLLECT_AZURITE, else the copy make
// test-deps installs under the user cache.
func Binary() (string, error) {
	if p := os.Getenv("KOLLECT_AZURITE"); p != "" {
		return p, nil
	}
	return sinktest.CachedTool(filepath.Join("azurite-current", "node_modules", ".bin", "azurite-blob"))
}

// Start runs Azurite for the test, or fails it: a missing server is an
// error, never a skip.
func Start(tb TB) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatalf("azuretest: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("azuretest: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), port: port, bin: bin, dir: tb.TempDir()}
	if err := s.Restart(); err != nil {
		tb.Fatalf("azuretest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Restart starts a stopped server on its port, with its data.
func (s *Server) Restart() error {
	cmd := exec.Command(s.bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(s.port), "--location", s.dir,
		"--disableTelemetry", "--silent", "--skipApiVersionCheck", "--loose")
	logf, err := os.Create(filepath.Join(s.dir, "azurite.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	s.cmd, s.exited = cmd, make(chan error, 1)
	go func() { s.exited <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "azurite.log"))
			return fmt.Errorf("azurite exited at start: %v\n%s", err, log)
		default:
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("azurite did not listen within 60s")
}

// Stop takes the server down; its data stays on disk.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// Azurite keeps its metadata in memory and saves it when it exits:
	// ask it to stop, as an outage of a real service keeps its data.
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case _ = <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		_ = <-s.exited
	}
	s.cmd = nil
}

// CreateContainer makes a container.
func (s *Server) CreateContainer(ctx context.Context, name string) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	_, err = c.CreateContainer(ctx, name, nil)
	return err
}

// Client is an Azure SDK client of the development account.
func (s *Server) Client() (*azblob.Client, error) {
	cred, err := azblob.NewSharedKeyCredential(Account, Key)
	if err != nil {
		return nil, err
	}
	return azblob.NewClientWithSharedKeyCredential(s.URL+"/"+Account+"/", cred, nil)
}
