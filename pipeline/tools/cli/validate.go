package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"kollect.dev/kollect/pipeline/tools/validate"
)

// NewValidateCommand builds `kollect validate`.
func NewValidateCommand() *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR",
		Short: "Check Kollect manifests offline, with the rules the API server and the operator apply",
		Long: `validate checks Kollect manifests without a cluster: the CRD schemas and CEL rules
(with defaults applied, as the API server does), unknown fields, JSONPath and CEL
expressions, target selectors, and references between the given files.

It prints one line per problem (file: object: field: message) and exits 2 when
anything is invalid. References to objects outside the files are warnings.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := validate.Paths(cmd.Context(), files)
			if err != nil {
				return fatal("%v", err)
			}
			return report(cmd.OutOrStdout(), cmd.ErrOrStderr(), files, res)
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "Manifests to check: files or folders (repeatable).")
	return cmd
}

func report(stdout, stderr io.Writer, files []string, res *validate.Result) error {
	invalid := printProblems(stderr, stdout, res)
	kinds := make([]string, 0, len(res.Objects))
	for k, n := range res.Objects {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(kinds)
	if invalid > 0 {
		return &ExitError{Code: 2, Err: fmt.Errorf("%d problem(s) in %s", invalid, strings.Join(files, ", "))}
	}
	fmt.Fprintf(stdout, "%s: valid (%s)\n", strings.Join(files, ", "), strings.Join(kinds, ", "))
	return nil
}

// printProblems writes warnings to warnings and failures to invalid, one
// line each, and returns how many failures there were.
func printProblems(warnings, invalid io.Writer, res *validate.Result) int {
	n := 0
	for _, p := range res.Problems {
		if p.Warning {
			fmt.Fprintf(warnings, "warning: %s\n", p)
			continue
		}
		n++
		fmt.Fprintf(invalid, "invalid: %s\n", p)
	}
	return n
}
