package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"kollect.dev/kollect/pipeline/tools/validate"
)

// NewPipelineCommand builds upstream's kollect-pipeline command line on
// this CLI, so that CI scripts written for it run unchanged: collect
// --config DIR [--output DIR|-] [--format ndjson|yaml|json] [--log-level
// LEVEL], validate --config DIR and init. The binary installed (or linked)
// as kollect-pipeline runs it as its root; kollect pipeline runs it too.
func NewPipelineCommand(use, version string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: "Upstream kollect-pipeline's command line: one-shot collection with a kubeconfig",
		Long: `The command line of upstream's kollect-pipeline, for scripts written for it:
collect --config DIR, validate --config DIR and init. kollect collect and
kollect validate do the same with more choices (-f files, -o table, --sink FILE, --watch).`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.AddCommand(newPipelineCollect(), newPipelineValidate(), NewInitCommand())
	return cmd
}

type pipelineCollect struct {
	config, output, format, logLevel string
	collectOptions
}

func newPipelineCollect() *cobra.Command {
	var p pipelineCollect
	cmd := &cobra.Command{
		Use:   "collect --config DIR [--output DIR|-]",
		Short: "Collect once and export to the directory's sink, to files (--output DIR) or to stdout (--output -)",
		Long: `collect reads every *.yaml and *.yml file directly in --config (profiles, targets,
at most one sink, and the Secrets its secretRef names, where a value ${env:VAR} is read
from the environment), lists the selected objects with the kubeconfig, and exports one
envelope per target: to the directory's sink, to files under --output DIR, or as records
{context, targetNamespace, targetName, path, envelope} on stdout with --output -.

Exit codes: 0 every target exported, 1 some failed, 2 nothing exported or bad input;
with several contexts, the worst of theirs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := p.options()
			if err != nil {
				return err
			}
			stderr := &levelWriter{w: cmd.ErrOrStderr(), min: levels[p.logLevel]}
			return runCollect(cmd.Context(), o, cmd.OutOrStdout(), stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.config, "config", "", "Directory of profiles, targets, at most one sink and its Secrets (required).")
	f.StringVar(&p.kubeconfig, "kubeconfig", "", "Path to the kubeconfig (default $KUBECONFIG, then ~/.kube/config).")
	f.StringSliceVar(&p.contexts, "context", nil, "Kubeconfig contexts: names or globs, repeatable or comma-separated (default: the current one).")
	f.StringVar(&p.namespace, "namespace", "", "Collect only from this namespace (overrides every target's namespaces).")
	f.StringVar(&p.output, "output", "", "DIR: write each envelope under DIR (the local sink); -: print records on stdout. Without it, the directory's sink.")
	f.StringVar(&p.format, "format", "", "Record format with --output -: ndjson (default), yaml or json.")
	f.BoolVar(&p.dryRun, "dry-run", false, "Collect and report what would be written; write nothing.")
	f.StringVar(&p.logLevel, "log-level", "info", "Messages on stderr: debug, info, warn or error.")
	return cmd
}

// options maps upstream's flags onto collect's, with upstream's rules for
// what goes together.
func (p pipelineCollect) options() (collectOptions, error) {
	o := p.collectOptions
	if p.config == "" {
		return o, fatal("--config DIR is required")
	}
	if _, ok := levels[p.logLevel]; !ok {
		return o, fatal("--log-level %q: use debug, info, warn or error", p.logLevel)
	}
	if p.format != "" && p.output != "-" {
		return o, fatal("--format applies to --output - only")
	}
	cfg, err := Load([]string{p.config})
	if err != nil {
		return o, fatal("%v", err)
	}
	if len(cfg.Sinks) > 1 {
		return o, fatal("%s holds %d sinks: collect exports to at most one", p.config, len(cfg.Sinks))
	}
	o.files, o.output = []string{p.config}, "ndjson"
	switch p.output {
	case "":
		if len(cfg.Sinks) == 0 {
			return o, fatal("%s holds no sink: add one, or pass --output DIR or --output -", p.config)
		}
		o.sink = p.config
	case "-":
		if p.dryRun {
			return o, fatal("--dry-run cannot be combined with --output -: stdout is the output")
		}
		if p.format != "" {
			o.output = p.format
		}
		switch o.output {
		case "ndjson", "yaml", "json":
		default:
			return o, fatal("--format %q: use ndjson, yaml or json", p.format)
		}
	default:
		o.outputDir = p.output
	}
	if p.output != "" && len(cfg.Sinks) > 0 {
		return o, fatal("--output cannot be combined with the %s %q in %s: remove one", kindOf(cfg.Sinks[0]), cfg.Sinks[0].GetName(), p.config)
	}
	return o, nil
}

func newPipelineValidate() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "validate --config DIR",
		Short: "Check a configuration directory offline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fatal("--config DIR is required")
			}
			res, err := validate.Paths(cmd.Context(), []string{dir})
			if err != nil {
				return fatal("%v", err)
			}
			return pipelineReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), dir, res)
		},
	}
	cmd.Flags().StringVar(&dir, "config", "", "Directory of profiles, targets and sinks (required).")
	return cmd
}

// pipelineReport prints upstream's lines: warning: and invalid: on stderr,
// then "<dir>: valid (<p> profile(s), <t> target(s), <s> sink(s))".
func pipelineReport(stdout, stderr io.Writer, dir string, res *validate.Result) error {
	if invalid := printProblems(stderr, stderr, res); invalid > 0 {
		return &ExitError{Code: 2, Err: fmt.Errorf("%d problem(s) in %s", invalid, dir)}
	}
	sinks := res.Objects["KollectSnapshotSink"] + res.Objects["KollectDatabaseSink"] + res.Objects["KollectEventSink"]
	fmt.Fprintf(stdout, "%s: valid (%d profile(s), %d target(s), %d sink(s))\n", dir, res.Objects["KollectProfile"], res.Objects["KollectTarget"], sinks)
	return nil
}

// levels orders --log-level's values.
var levels = map[string]int{"debug": 0, "info": 1, "warn": 2, "error": 3}

// levelWriter passes the lines written to stderr at or above min: lines
// holding "error:" are errors, "warning:" warnings, any other (progress,
// what was written) information.
type levelWriter struct {
	w   io.Writer
	min int
}

func (l *levelWriter) Write(b []byte) (int, error) {
	level := levels["info"]
	switch {
	case bytes.Contains(b, []byte("error:")):
		level = levels["error"]
	case bytes.Contains(b, []byte("warning:")):
		level = levels["warn"]
	}
	if level < l.min {
		return len(b), nil
	}
	return l.w.Write(b)
}
