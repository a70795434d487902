// Package natstest runs an embedded NATS server with JetStream on loopback
// for tests and benchmarks, and reads streams back. The server can be
// stopped and started again on the same port with the same store, to test
// outages.
package natstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Server is an embedded JetStream server.
type Server struct {
	opts *server.Options
	srv  *server.Server
}

// Start starts a server on a free loopback port; it is shut down and its
// store removed when the test ends. configure, when given, adjusts the
// server options (authentication, TLS).
func Start(tb TB, configure ...func(*server.Options)) *Server {
	tb.Helper()
	s, err := New(configure...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New starts a server on a free loopback port, outside a test (the load
// harness); Close shuts it down and removes its store.
func New(configure ...func(*server.Options)) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("nats: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "kollect-nats-")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true}}
	for _, c := range configure {
		c(s.opts)
	}
	if err := s.Restart(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Close shuts the server down and removes its store.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(s.opts.StoreDir)
}

// Connections counts the clients connected now.
func (s *Server) Connections() int { return s.srv.NumClients() }

// URL is the client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// Restart starts the server again with its store.
func (s *Server) Restart() error {
	if s.srv != nil {
		return nil
	}
	srv, err := server.NewServer(s.opts)
	if err != nil {
		return err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("nats server not ready after 10s")
	}
	s.srv = srv
	return nil
}

// Stop shuts the server down, keeping its store.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Message is one stored message.
type Message struct {
	Header natsgo.Header
	Data   []byte
}

// ReadAll returns every message of a stream, in order, read with a
// connection of its own.
func ReadAll(ctx context.Context, url, stream string) ([]Message, error) {
	nc, err := natsgo.Connect(url)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, info.State.Msgs)
	for seq := info.State.FirstSeq; len(out) < int(info.State.Msgs) && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", seq, err)
		}
		out = append(out, Message{Header: m.Header, Data: m.Data})
	}
	return out, nil
}
