package sinks_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"kollect.dev/kollect/sinks"
)

func TestClientsShareOnePerKeyAndCloseWithTheLast(t *testing.T) {
	var c sinks.Clients
	opened, closed := map[string]int{}, map[string]int{}
	open := func(key string) func() (any, func(), error) {
		return func() (any, func(), error) {
			opened[key]++
			return key, func() { closed[key]++ }, nil
		}
	}
	v1, r1, _ := c.Acquire("postgres", "a", open("a"))
	v2, r2, _ := c.Acquire("postgres", "a", open("a"))
	_, r3, _ := c.Acquire("mongodb", "a", open("mongo a")) // another kind: another client
	_, r4, _ := c.Acquire("postgres", "b", open("b"))
	if v1 != v2 || opened["a"] != 1 || c.Open() != 3 {
		t.Fatalf("one key opened %d clients (%v, %v); %d open, want 3", opened["a"], v1, v2, c.Open())
	}
	r1()
	r1() // a second release of one acquisition is ignored
	if closed["a"] != 0 {
		t.Fatal("the client closed while another backend holds it")
	}
	r2()
	r3()
	r4()
	if closed["a"] != 1 || closed["mongo a"] != 1 || closed["b"] != 1 || c.Open() != 0 {
		t.Fatalf("closed %v, %d open; want each closed once, none open", closed, c.Open())
	}
	if _, _, err := c.Acquire("postgres", "bad", func() (any, func(), error) { return nil, nil, errors.New("refused") }); err == nil || c.Open() != 0 {
		t.Fatalf("a client that failed to open: %v, %d open", err, c.Open())
	}
	var none *sinks.Clients // no sharing: a client of one's own
	_, r, _ := none.Acquire("postgres", "a", open("a"))
	r()
	if opened["a"] != 2 || closed["a"] != 2 {
		t.Fatalf("without Clients: opened %d, closed %d, want 2 and 2", opened["a"], closed["a"])
	}
}

// TestClientsOpenAgainOnlyAfterTheLastCloseEnds: a client that owns state
// (a Git mirror's directory) is not opened again while its last release
// is still closing it.
func TestClientsOpenAgainOnlyAfterTheLastCloseEnds(t *testing.T) {
	var c sinks.Clients
	closing, release := make(chan struct{}), make(chan struct{})
	var closed atomic.Bool
	_, r, err := c.Acquire("git-mirror", "repo", func() (any, func(), error) {
		return 1, func() { close(closing); <-release; closed.Store(true) }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	go r()
	<-closing // the close has begun and is held
	reopened := make(chan bool, 1)
	go func() {
		_, r2, err := c.Acquire("git-mirror", "repo", func() (any, func(), error) {
			reopened <- closed.Load()
			return 2, func() {}, nil
		})
		if err == nil {
			r2()
		}
	}()
	select {
	case <-reopened:
		t.Fatal("the client was opened again while its close was under way")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if afterClose := <-reopened; !afterClose {
		t.Fatal("the client was opened again before its close ended")
	}
}

// TestAClientThatDoesNotOpenHoldsOnlyItsOwnKey: a server that does not
// answer keeps its own client opening (and a second sink of it waits for
// that one open), while sinks of other servers get theirs at once.
func TestAClientThatDoesNotOpenHoldsOnlyItsOwnKey(t *testing.T) {
	var c sinks.Clients
	answer := make(chan struct{})
	var opens atomic.Int32
	slow := func() (any, func(), error) {
		opens.Add(1)
		<-answer
		return "nats", func() {}, nil
	}
	first, second := make(chan any, 1), make(chan any, 1)
	go func() { v, _, _ := c.Acquire("nats", "down", slow); first <- v }()
	for opens.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	go func() { v, _, _ := c.Acquire("nats", "down", slow); second <- v }()

	other := make(chan any, 1)
	go func() {
		v, _, _ := c.Acquire("postgres", "up", func() (any, func(), error) { return "pg", func() {}, nil })
		other <- v
	}()
	select {
	case v := <-other:
		if v != "pg" {
			t.Fatalf("the other key's client is %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a client of another key waited for one that does not open")
	}
	select {
	case <-first:
		t.Fatal("the slow client was handed out before it opened")
	case <-second:
		t.Fatal("a second sink of the slow client got one before it opened")
	default:
	}
	close(answer)
	if a, b := <-first, <-second; a != "nats" || b != "nats" || opens.Load() != 1 {
		t.Fatalf("the slow key gave %v and %v after %d opens, want one client opened once", a, b, opens.Load())
	}
}
