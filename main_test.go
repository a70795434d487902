package main

import (
	"bytes"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runAs(t, "kollect", args...)
}

func runAs(t *testing.T, argv0 string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand(argv0)
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

// Installed as kubectl-kollect, the binary is a kubectl plugin: kubectl
// runs it with the arguments after "kollect", and its help says so.
func TestKubectlPlugin(t *testing.T) {
	out, err := runAs(t, "/usr/local/bin/kubectl-kollect", "collect", "--help")
	if err != nil || !strings.Contains(out, "kubectl kollect collect") {
		t.Fatalf("help as a kubectl plugin: %v\n%s", err, out)
	}
	if out, err := runAs(t, "/usr/local/bin/kubectl-kollect", "version"); err != nil || strings.TrimSpace(out) != version {
		t.Fatalf("kubectl kollect version: %q %v", out, err)
	}
	if out, _ := run(t, "--help"); strings.Contains(out, "kubectl kollect") {
		t.Error("the plain binary calls itself a kubectl plugin")
	}
}

// Invoked as /manager, as upstream's Deployment calls the image, the
// binary is the manager: its flags come without a subcommand.
func TestUpstreamManagerEntrypoint(t *testing.T) {
	for _, tc := range []struct {
		argv0 string
		args  []string
		want  string
	}{
		{"/manager", []string{"--version"}, version},
		{"/manager", []string{"--help"}, "--leader-elect"},
		{"/kollect", []string{"version"}, version},
	} {
		out, err := runAs(t, tc.argv0, commandLine(tc.argv0, tc.args)...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s %v: %v\n%s", tc.argv0, tc.args, err, out)
		}
	}
	if out, err := runAs(t, "/manager", commandLine("/manager", []string{"--no-such-flag"})...); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("/manager --no-such-flag: %v\n%s", err, out)
	}
}

// Invoked as kollect-pipeline, as upstream's CI scripts call its pipeline
// CLI, the binary is that CLI: collect --config, validate --config, init.
func TestUpstreamPipelineEntrypoint(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--version"}, version},
		{[]string{"collect", "--help"}, "--config"},
		{[]string{"validate", "--help"}, "--config"},
		{[]string{"init", "--help"}, "--output-dir"},
		{[]string{"completion", "bash"}, "kollect-pipeline"},
	} {
		out, err := runAs(t, "/usr/local/bin/kollect-pipeline", commandLine("/usr/local/bin/kollect-pipeline", tc.args)...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("kollect-pipeline %v: %v\n%s", tc.args, err, out)
		}
	}
	if out, err := run(t, "pipeline", "collect", "--help"); err != nil || !strings.Contains(out, "--output DIR|-") {
		t.Errorf("kollect pipeline collect --help: %v\n%s", err, out)
	}
}
