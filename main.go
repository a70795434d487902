// Command kollect is the Kollect operator and its command-line tools.
//
//	kollect manager   run the operator
//	kollect collect   collect once with a kubeconfig and print the rows
//	kollect validate  check manifests offline
//	kollect pipeline  upstream kollect-pipeline's command line
//	kollect version   print the version
//
// Installed on the PATH as kubectl-kollect, it is also a kubectl plugin:
// kubectl kollect collect -f pipeline.yaml. Invoked as kollect-pipeline it
// is upstream's pipeline CLI (collect --config DIR), and as manager the
// operator.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	// Trusted CA roots compiled in, used when the system has none (the
	// container image has no CA file).
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"kollect.dev/kollect/pipeline/manager"
	"kollect.dev/kollect/pipeline/tools/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	root := newRootCommand(os.Args[0])
	root.SetArgs(commandLine(os.Args[0], os.Args[1:]))
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		var exit *cli.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code)
		}
		os.Exit(2)
	}
}

// commandLine is the command line the tree runs for a binary invoked as
// argv0 with args. Invoked as manager (the image's /manager, which
// upstream's Deployments, CSVs and kustomize overlays name as their
// command, with only flags as arguments), it runs the manager.
func commandLine(argv0 string, args []string) []string {
	if filepath.Base(argv0) == "manager" {
		return append([]string{"manager"}, args...)
	}
	return args
}

// newRootCommand builds the command tree; argv0 is how it was invoked:
// installed as kubectl-kollect, it is a kubectl plugin and its help says
// `kubectl kollect …`.
func newRootCommand(argv0 string) *cobra.Command {
	root := &cobra.Command{
		Use:           "kollect",
		Short:         "Kollect turns live cluster state into a durable inventory",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if filepath.Base(argv0) == "kollect-pipeline" {
		// Upstream's pipeline CLI, which its CI scripts call by name.
		return cli.NewPipelineCommand("kollect-pipeline", version)
	}
	if filepath.Base(argv0) == "kubectl-kollect" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kollect"}
	}
	root.AddCommand(newManagerCommand(), cli.NewCollectCommand(), cli.NewValidateCommand(), cli.NewInitCommand(), cli.NewPipelineCommand("pipeline", version), newVersionCommand())
	return root
}

func newManagerCommand() *cobra.Command {
	var opts manager.Options
	var showVersion bool
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the Kollect operator",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				fmt.Fprintln(cmd.OutOrStdout(), version)
				return nil
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.Zap)))
			for _, f := range manager.Ignored(cmd.Flags()) {
				ctrl.Log.Info("flag has no effect in this version", "flag", f)
			}
			cfg, err := ctrl.GetConfig()
			if kubeconfig != "" {
				cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			}
			if err != nil {
				return fmt.Errorf("load kubeconfig: %w", err)
			}
			return manager.Run(ctrl.SetupSignalHandler(), cfg, opts)
		},
	}
	opts.BindFlags(cmd.Flags())
	cmd.Flags().BoolVar(&showVersion, "version", false, "Print the version and exit.")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig (default: in-cluster config, then $KUBECONFIG, then ~/.kube/config).")
	return cmd
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version)
		},
	}
}
