package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	scenario := flag.String("scenario", "10k", "A scenario name from loadtest/scenarios or a scenario file.")
	out := flag.String("out", "loadtest/reports", "Folder for the report.")
	binary := flag.String("kollect", "", "The kollect binary the cluster mode runs as the operator (default: built from this tree).")
	kubeconfig := flag.String("kubeconfig", "", "Cluster mode: load this kubeconfig's current context instead of a local control plane.")
	memLimit := flag.String("gomemlimit", "", "Cluster mode: the operator's GOMEMLIMIT, such as 300MiB (overrides the scenario's goMemLimit).")
	flag.Parse()
	path := *scenario
	if !strings.ContainsAny(path, "/.") {
		path = filepath.Join("loadtest", "scenarios", path+".yaml")
	}
	s, err := LoadScenario(path)
	if err != nil {
		fail(err)
	}
	if *memLimit != "" {
		s.GoMemLimit = *memLimit
	}
	if *kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			fail(fmt.Errorf("kubeconfig %s: %w", *kubeconfig, err))
		}
		s.Cluster = cfg.Host
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if s.Mode == "cluster" && *binary == "" {
		*binary = filepath.Join(os.TempDir(), "kollect-loadtest-operator")
		if b, err := exec.Command("go", "build", "-o", *binary, "kollect.dev/kollect").CombinedOutput(); err != nil {
			fail(fmt.Errorf("build the operator: %v: %s", err, b))
		}
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "loadtest: "+format+"\n", a...) }
	logf("scenario %s (%s mode, %d objects)", s.Name, s.Mode, s.Objects)
	rep, err := Run(ctx, s, *binary, *kubeconfig, logf)
	if rep != nil {
		dir := filepath.Join(*out, s.Name+"-"+rep.StartedAt.UTC().Format("20060102-150405"))
		files, werr := rep.Write(dir)
		rep.Summary(os.Stdout)
		if werr != nil {
			logf("writing the report: %v", werr)
		}
		logf("report: %s", strings.Join(files, ", "))
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadtest:", err)
	os.Exit(1)
}
