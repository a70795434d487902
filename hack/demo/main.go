// Command demo runs Kollect's main job on this machine: `make demo`.
// See internal/demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"kollect.dev/kollect/internal/demo"
)

func main() {
	var o demo.Options
	flag.StringVar(&o.Dir, "dir", "demo", "Folder for the repository, the kubeconfig and component logs (emptied first).")
	flag.StringVar(&o.Assets, "assets", "bin/envtest", "Folder with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.")
	flag.BoolVar(&o.Cluster, "cluster", true, "Run kube-controller-manager, kube-scheduler and kwok so Deployments get Running Pods.")
	flag.BoolVar(&o.Keep, "keep", os.Getenv("DEMO_KEEP") != "", "Keep everything running after the story until Ctrl-C (also DEMO_KEEP=1).")
	flag.StringVar(&o.DuckDB, "duckdb", "", "Where DuckDB's Node API is installed (hack/duckdb.sh); empty skips the query over the Parquet export.")
	flag.Parse()
	o.Out = os.Stdout
	// Only the manager's errors; the story is the output.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	res, err := demo.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		stop()
		os.Exit(1) //nolint:gocritic // stop ran just above
	}
	fmt.Printf("demo: done in %s; %d commits in %s\n", time.Since(start).Round(100*time.Millisecond), res.Commits, res.Repo)
}
