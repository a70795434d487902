package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitRemote serves a bare repository over git's smart HTTP protocol
// (git-http-backend) from the harness. A file:// remote would make the
// operator run git receive-pack and upload-pack as its own children: their
// memory and the files they write (the remote's objects) would count
// against the operator's memory cgroup and compete with it for the page
// cache, where a real remote is a service on the network.
type gitRemote struct {
	srv *http.Server
	url string
}

// serveGit initialises a bare repository at bare, with pushes over HTTP
// allowed, and serves it on a loopback port; git's messages go to log.
// The remote never collects its garbage itself (receive.autogc): a push
// would then wait for it, on the cores the operator is measured on.
func serveGit(bare string, log io.Writer) (*gitRemote, error) {
	for _, args := range [][]string{
		{"init", "--bare", "-q", "-b", "main", bare},
		{"--git-dir", bare, "config", "http.receivepack", "true"},
		{"--git-dir", bare, "config", "receive.autogc", "false"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("git %s: %v: %s", args[0], err, out)
		}
	}
	// The remote logs each ref a push moved, with the time it moved: the
	// timeline of exports as the remote saw them (pushLog).
	hook := "#!/bin/sh\nnow=$(date +%s%N)\nwhile read old new ref; do echo \"$now $new $ref\" >> " + shellQuote(filepath.Join(bare, pushLogFile)) + "; done\n"
	if err := os.WriteFile(filepath.Join(bare, "hooks", "post-receive"), []byte(hook), 0o755); err != nil {
		return nil, fmt.Errorf("git remote hook: %w", err)
	}
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w", err)
	}
	backend := &cgi.Handler{
		Path:   filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:    []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=loadtest"},
		Stderr: log,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("git remote: %w", err)
	}
	r := &gitRemote{srv: &http.Server{Handler: backend, ReadHeaderTimeout: 10 * time.Second},
		url: "http://" + ln.Addr().String() + "/" + filepath.Base(bare)}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("loadtest: git remote: %v\n", err)
		}
	}()
	return r, nil
}

func (r *gitRemote) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

// pushLogFile, in the bare repository, holds one line per ref a push
// moved: the time in Unix nanoseconds, the new commit and the ref.
const pushLogFile = "pushes.log"

// push is one ref the remote moved.
type push struct {
	at     time.Time
	commit string
	ref    string
}

// pushLog reads the remote's pushes to ref, in the order they landed.
func pushLog(bare, ref string) ([]push, error) {
	b, err := os.ReadFile(filepath.Join(bare, pushLogFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []push
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ns int64
		var p push
		if _, err := fmt.Sscan(line, &ns, &p.commit, &p.ref); err != nil || p.ref != ref {
			continue
		}
		p.at = time.Unix(0, ns)
		out = append(out, p)
	}
	return out, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
