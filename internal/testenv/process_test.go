package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMain lets the test binary play the manager for StartProcess: with
// FAKE_MANAGER_STARTS set, it counts its start in that file, fails as a
// manager does whose port was taken until it has been started
// FAKE_MANAGER_FAILS times, and then serves /readyz until it is killed.
func TestMain(m *testing.M) {
	if counter := os.Getenv("FAKE_MANAGER_STARTS"); counter != "" {
		os.Exit(fakeManager(counter))
	}
	os.Exit(m.Run())
}

func fakeManager(counter string) int {
	b, _ := os.ReadFile(counter)
	n, _ := strconv.Atoi(string(b))
	n++
	if err := os.WriteFile(counter, []byte(strconv.Itoa(n)), 0o600); err != nil {
		return 2
	}
	fails, _ := strconv.Atoi(os.Getenv("FAKE_MANAGER_FAILS"))
	if n <= fails {
		fmt.Println("kollect: create manager: failed to new pprof listener: listen tcp 127.0.0.1:1: bind: address already in use")
		return 1
	}
	for _, a := range os.Args[1:] {
		if addr, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			http.HandleFunc("/readyz", func(http.ResponseWriter, *http.Request) {})
			_ = http.ListenAndServe(addr, nil)
		}
	}
	return 3
}

func TestStartProcessRetriesWhenAPortWasTaken(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fails, wantStarts int
		wantErr           bool
	}{
		{0, 1, false},
		{2, 3, false},
		{3, 3, true},
	} {
		t.Run(fmt.Sprintf("%d failures", tc.fails), func(t *testing.T) {
			dir := t.TempDir()
			counter := filepath.Join(dir, "starts")
			p, err := StartProcess(context.Background(), ProcessOptions{Binary: self, Log: filepath.Join(dir, "log"), AddrFlags: []string{"--pprof-bind-address"},
				Env: []string{"FAKE_MANAGER_STARTS=" + counter, "FAKE_MANAGER_FAILS=" + strconv.Itoa(tc.fails)}})
			if p != nil {
				defer p.Kill()
			}
			b, _ := os.ReadFile(counter)
			if starts, _ := strconv.Atoi(string(b)); starts != tc.wantStarts {
				t.Fatalf("started %d times, want %d", starts, tc.wantStarts)
			}
			if tc.wantErr {
				if err == nil || !errors.Is(err, errAddrInUse) || !strings.Contains(err.Error(), "address already in use") {
					t.Fatalf("err = %v, want the port's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Addrs["--pprof-bind-address"] == "" || p.MetricsAddr == "" || p.ProbeAddr != p.Addrs["--health-probe-bind-address"] {
				t.Fatalf("addresses not handed out: %+v", p.Addrs)
			}
			if !p.Ready() {
				t.Fatal("not ready")
			}
		})
	}
}
