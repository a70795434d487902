package main

import (
	"bytes"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestCommands(t *testing.T) {
	cases := []struct {
		args    []string
		want    []string
		wantErr bool
	}{
		{args: []string{"version"}, want: []string{version}},
		{args: []string{"manager", "--version"}, want: []string{version}},
		{args: []string{"manager", "--help"}, want: []string{
			"--metrics-bind-address", "--health-probe-bind-address", "--leader-elect",
			"--allow-private-sinks", "--tenant-mode", "--max-export-bytes", "--zap-log-level", "--kubeconfig",
		}},
		{args: []string{"manager", "--no-such-flag"}, wantErr: true, want: []string{"unknown flag"}},
		{args: []string{"manager", "--kubeconfig", "/no/such/kubeconfig"}, wantErr: true, want: []string{"/no/such/kubeconfig"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := run(t, tc.args...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("want error %v, got %v\n%s", tc.wantErr, err, out)
			}
			text := out
			if err != nil {
				text += err.Error()
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("output does not mention %q:\n%s", w, text)
				}
			}
		})
	}
}
