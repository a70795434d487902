package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// flags are the harness's command-line settings.
type flags struct {
	scenario, out, binary, kubeconfig, memLimit, limit, cpuProfile string
	plotTenants                                                    string
	reports                                                        []string // with plotTenants
	runs                                                           int
	operatorProfile                                                string
	operatorProfileFor                                             time.Duration
}

// parseFlags reads the command line with a flag set of its own:
// controller-runtime registers -kubeconfig on the global one.
func parseFlags(args []string) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.StringVar(&f.scenario, "scenario", "10k", "A scenario name from loadtest/scenarios or a scenario file.")
	fs.StringVar(&f.out, "out", "", "Folder for the report (default: loadtest/reports in the checkout).")
	fs.StringVar(&f.binary, "kollect", "", "The kollect binary the cluster mode runs as the operator (default: built from this tree).")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Cluster mode: load this kubeconfig's current context instead of a local control plane.")
	fs.StringVar(&f.memLimit, "gomemlimit", "", "Cluster mode: the operator's GOMEMLIMIT, such as 300MiB (overrides the scenario's goMemLimit).")
	fs.StringVar(&f.limit, "memory-limit", "", "Cluster mode: run the operator in a memory cgroup with this limit, such as 250Mi, as a pod's resources.limits.memory does (needs a writable cgroup: root); the operator sets its soft limit from it, as in a pod, unless -gomemlimit says otherwise.")
	fs.IntVar(&f.runs, "runs", 1, "Run the scenario this many times, each on a fresh control plane and operator, and write the distribution of the figures (<scenario>-runs-<time>.md in -out).")
	fs.StringVar(&f.operatorProfile, "operator-cpuprofile", "", "Cluster mode: write the operator's CPU profile, from the first create on, to this file.")
	fs.DurationVar(&f.operatorProfileFor, "operator-cpuprofile-for", 30*time.Second, "How long -operator-cpuprofile profiles.")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "Write the harness's CPU profile here (in engine mode, the engine's from the first event until the sink holds every row).")
	fs.StringVar(&f.plotTenants, "plot-tenants", "", "Run nothing: draw the figures of the tenants reports (report.json files) named after the flags against the number of teams, into this PNG.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.plotTenants != "" {
		f.reports = fs.Args()
		return f, nil
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if !strings.ContainsAny(f.scenario, "/.") || f.out == "" {
		root, err := repoRoot()
		if err != nil {
			return f, err
		}
		if !strings.ContainsAny(f.scenario, "/.") {
			f.scenario = filepath.Join(root, "loadtest", "scenarios", f.scenario+".yaml")
		}
		if f.out == "" {
			f.out = filepath.Join(root, "loadtest", "reports")
		}
	}
	return f, nil
}

func main() {
	f, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fail(err)
	}
	if f.plotTenants != "" {
		if err := plotTenants(f.plotTenants, f.reports); err != nil {
			fail(err)
		}
		return
	}
	s, err := LoadScenario(f.scenario)
	if err != nil {
		fail(err)
	}
	if f.memLimit != "" {
		s.GoMemLimit = f.memLimit
	}
	if f.limit != "" {
		s.MemoryLimit = f.limit
	}
	s.OperatorProfile, s.OperatorProfileFor = f.operatorProfile, f.operatorProfileFor
	if f.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			fail(fmt.Errorf("kubeconfig %s: %w", f.kubeconfig, err))
		}
		s.Cluster = cfg.Host
	}
	var profile io.Writer
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			fail(err)
		}
		defer pf.Close()
		profile = pf
		if s.Mode != "engine" { // engine mode profiles its measured section alone
			if err := pprof.StartCPUProfile(pf); err != nil {
				fail(err)
			}
			defer pprof.StopCPUProfile()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if s.Mode != "engine" && f.binary == "" {
		f.binary = filepath.Join(os.TempDir(), "kollect-loadtest-operator")
		root, err := repoRoot()
		if err != nil {
			fail(err)
		}
		build := exec.Command("go", "build", "-o", f.binary, operatorModule)
		build.Dir = root
		if b, err := build.CombinedOutput(); err != nil {
			fail(fmt.Errorf("build the operator: %v: %s", err, b))
		}
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "loadtest: "+format+"\n", a...) }
	logf("scenario %s (%s mode, %d objects)", s.Name, s.Mode, s.Objects)
	var reps []*Report
	for run := 1; run <= max(1, f.runs); run++ {
		if f.runs > 1 {
			logf("run %d of %d", run, f.runs)
		}
		rep, err := Run(ctx, s, f.binary, f.kubeconfig, profile, logf)
		if rep != nil {
			dir := filepath.Join(f.out, s.Name+"-"+rep.StartedAt.UTC().Format("20060102-150405"))
			files, werr := rep.Write(dir)
			rep.Summary(os.Stdout)
			if werr != nil {
				logf("writing the report: %v", werr)
			}
			logf("report: %s", strings.Join(files, ", "))
			reps = append(reps, rep)
		}
		if err != nil {
			fail(err)
		}
	}
	if len(reps) > 1 {
		table := Distribution(reps)
		fmt.Print(table)
		name := filepath.Join(f.out, s.Name+"-runs-"+reps[0].StartedAt.UTC().Format("20060102-150405")+".md")
		if err := os.WriteFile(name, []byte(table), 0o644); err != nil {
			fail(err)
		}
		logf("distribution: %s", name)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadtest:", err)
	os.Exit(1)
}
