// Command kubectl is the Kubernetes CLI, built from the Go module proxy for
// `make demo`, so a machine without kubectl can explore the demo cluster.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
