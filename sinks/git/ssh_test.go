package git_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh"

	"kollect.dev/kollect/sinks/git"
)

// sshRemote runs an SSH server on loopback that accepts one client key and
// serves git-upload-pack / git-receive-pack for local paths, as a Git host
// does. It returns the address and the server's known_hosts line.
func sshRemote(t *testing.T, clientKey ssh.PublicKey) (string, []byte) {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(k.Marshal(), clientKey.Marshal()) {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveSSH(c, cfg)
		}
	}()
	addr := l.Addr().String()
	return addr, []byte(fmt.Sprintf("[%s]:%s %s", strings.Split(addr, ":")[0], strings.Split(addr, ":")[1],
		ssh.MarshalAuthorizedKey(hostSigner.PublicKey())))
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		ch, requests, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer ch.Close()
			for req := range requests {
				if req.Type != "exec" {
					_ = req.Reply(false, nil)
					continue
				}
				var payload struct{ Command string }
				_ = ssh.Unmarshal(req.Payload, &payload)
				prog, arg, _ := strings.Cut(payload.Command, " ")
				_ = req.Reply(true, nil)
				cmd := exec.Command("git", strings.TrimPrefix(prog, "git-"), strings.Trim(arg, "'"))
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				status := uint32(0)
				if err := cmd.Run(); err != nil {
					status = 1
				}
				b := make([]byte, 4)
				binary.BigEndian.PutUint32(b, status)
				_, _ = ch.SendRequest("exit-status", false, b)
				return
			}
		}()
	}
}

func TestSSHRemoteWithKeyAndKnownHosts(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	clientPub, _ := ssh.NewPublicKey(pub)
	addr, knownHosts := sshRemote(t, clientPub)
	bare := remote(t)
	url := "ssh://git@" + addr + bare

	s, err := openSink(t, git.Config{URL: url, SSHKey: pem.EncodeToMemory(block), KnownHosts: knownHosts, MirrorDir: t.TempDir(), Layout: git.Layout{Format: "json"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(context.Background(), snap(row(t, "a", "x:1"))); err != nil {
		t.Fatalf("export over SSH: %v", err)
	}
	if got := gitCmd(t, bare, "ls-tree", "-r", "--name-only", "main"); got != "README.md\ninventory/default/demo-inventory.json" {
		t.Fatalf("files after an SSH push:\n%s", got)
	}

	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(other)
	wrongHosts := []byte(fmt.Sprintf("[127.0.0.1]:%s %s", strings.Split(addr, ":")[1], ssh.MarshalAuthorizedKey(otherSigner.PublicKey())))
	if err := git.Probe(context.Background(), git.Config{URL: url, SSHKey: pem.EncodeToMemory(block), KnownHosts: wrongHosts}); err == nil ||
		!strings.Contains(err.Error(), "not in known_hosts") {
		t.Errorf("an unknown host key must be refused, got %v", err)
	}
	if _, err := openSink(t, git.Config{URL: url, SSHKey: pem.EncodeToMemory(block)}); err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("ssh without known_hosts must be refused with a clear message, got %v", err)
	}
}

// With the guard installed, an ssh:// remote is dialled through it too
// (not through ALL_PROXY or a plain dial), and a refusal stops the probe.
func TestGitSSHDialsThroughTheGuard(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := ssh.MarshalPrivateKey(priv, "")
	clientPub, _ := ssh.NewPublicKey(pub)
	addr, knownHosts := sshRemote(t, clientPub)
	url := "ssh://git@" + addr + remote(t)
	var mu sync.Mutex
	var dialled []string
	refuse := false
	git.GuardHTTP(func(ctx context.Context, network, a string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		dialled = append(dialled, a)
		if refuse {
			return nil, errors.New("refused by the endpoint guard")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, a)
	})
	t.Cleanup(func() {
		client.InstallProtocol("http", githttp.DefaultClient)
		client.InstallProtocol("https", githttp.DefaultClient)
	})
	cfg := git.Config{URL: url, SSHKey: pem.EncodeToMemory(block), KnownHosts: knownHosts}
	if err := git.Probe(context.Background(), cfg); err != nil {
		t.Fatalf("probe through the guard: %v", err)
	}
	mu.Lock()
	if len(dialled) != 1 || dialled[0] != addr {
		t.Errorf("want %s dialled through the guard, got %v", addr, dialled)
	}
	refuse = true
	mu.Unlock()
	if err := git.Probe(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "refused by the endpoint guard") {
		t.Fatalf("want the guard's refusal, got %v", err)
	}
}

func TestCredentialsOverPlainHTTPAreRefused(t *testing.T) {
	cfg := git.Config{URL: "http://git.example.com/inventory.git", Token: "secret-token", MirrorDir: t.TempDir()}
	_, err := openSink(t, cfg)
	if err == nil || !strings.Contains(err.Error(), "plain http://") || strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("want a refusal without the token, got %v", err)
	}
	if err := git.Probe(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), git.AllowPlainHTTPCredentials) {
		t.Fatalf("probe: want a refusal naming the opt-in, got %v", err)
	}
	cfg.AllowPlainHTTPCredentials = true
	if _, err := openSink(t, cfg); err != nil {
		t.Fatalf("opted in: %v", err)
	}
	if _, err := openSink(t, git.Config{URL: "http://git.example.com/public.git", MirrorDir: t.TempDir()}); err != nil {
		t.Fatalf("no credentials, nothing to protect: %v", err)
	}
}
