package testenv

import (
	"fmt"
	"os"
	"testing"
	"time"

	"kollect.dev/kollect/internal/eventually"
)

// Main runs a package's tests against one control plane: it starts it,
// stores it in *env, runs m and stops it. Use it as the body of TestMain.
func Main(m *testing.M, env **Env) {
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// Eventually polls check until it returns nil, and fails the test with
// what and the last error once timeout has passed (eventually.Check).
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	eventually.Check(t, timeout, what, check)
}
