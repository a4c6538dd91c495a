package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/capacity"
	"github.com/stormsim/stormsim/experiments"
	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/k8s"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(&command{
		name:    "k8s",
		summary: "render Kubernetes manifests that run a sharded sweep, capacity search or load test",
		usage:   "render --mode sweep|capacity|load --scenario FILE --shards N --image IMG [flags] [-- ARGS...]",
		example: `  stormsim k8s render --mode sweep --scenario retry-storm.yaml --shards 8 --image ghcr.io/me/stormsim:v1 \
      -- --param workload.rate --range 100:2000:50 --replicas 5 | kubectl apply -f -
  stormsim k8s render --mode load --scenario chain.yaml --shards 4 --image ghcr.io/me/stormsim:v1 \
      --start-at 2026-12-01T10:00:00Z -- --target http://gateway.shop:8080 --allow-remote`,
		new: func() subcommand { return new(k8sCommand) },
	})
}

// k8sCommand is `stormsim k8s`: its flags, and the run that uses them.
type k8sCommand struct {
	// fs tells where -- split the arguments.
	fs       *pflag.FlagSet
	o        k8s.Options
	scenario string
}

// flags declares the command's flags on fs.
func (c *k8sCommand) flags(fs *pflag.FlagSet) {
	c.fs = fs
	fs.StringVar(&c.scenario, "scenario", "", "the scenario `FILE` (or canned experiment name) stored in the ConfigMap")
	fs.StringVar(&c.o.Mode, "mode", "", "the command each pod runs: "+strings.Join(k8s.Modes, ", "))
	fs.IntVar(&c.o.Shards, "shards", 0, "number of shards: the Indexed Job's completions")
	fs.IntVar(&c.o.Parallelism, "parallelism", 0, "shards running at once (default: all; load always runs all)")
	fs.StringVar(&c.o.Image, "image", "", "container `IMAGE` built from the Dockerfile")
	fs.StringArrayVar(&c.o.Args, "args", nil, "an `ARG` for the command, after the ones the manifest sets (repeatable; or put them all after --)")
	fs.StringVar(&c.o.Name, "name", "", "name of the Jobs and of the results directory (default stormsim-MODE-SCENARIO)")
	fs.StringVar(&c.o.Namespace, "namespace", "", "namespace written into every object (default: kubectl's)")
	fs.StringVar(&c.o.StartAt, "start-at", "", "load: the shared start `time` (RFC 3339), a few minutes after you apply")
	fs.StringVar(&c.o.PVC, "pvc", "", "results PersistentVolumeClaim `NAME` (default stormsim-results)")
	fs.StringVar(&c.o.PVCSize, "pvc-size", "", "also render the claim, ReadWriteMany, of this `SIZE` (e.g. 10Gi); omit to use an existing one")
	fs.StringVar(&c.o.StorageClass, "storage-class", "", "storage class of a rendered claim")
	fs.StringVar(&c.o.Resources.CPU, "cpu", "", "CPU request per pod (default: measured per mode, see docs/scale-out.md)")
	fs.StringVar(&c.o.Resources.Memory, "memory", "", "memory request and limit per pod")
	fs.IntVar(&c.o.BackoffLimitPerIndex, "retries", 1, "retries of one failed shard before the Job fails")
	fs.DurationVar(&c.o.MergeWait, "merge-wait", 6*time.Hour, "how long the merge Job waits for the shards")
	fs.StringVar(&c.o.Run, "run", "", "label the run `LABEL` (one per apply): the shards get --run LABEL and the merge Job waits for this run's shards, not a previous apply's")
}

// run runs the command with the arguments left after the flags.
func (c *k8sCommand) run(_ context.Context, args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "render" {
		return &exitError{exitUsage, errors.New("want 'stormsim k8s render ...'")}
	}
	if dash := c.fs.ArgsLenAtDash(); dash >= 0 {
		if dash != 1 {
			return &exitError{exitUsage, fmt.Errorf("unexpected arguments before --: %q", args[1:dash])}
		}
		c.o.Args = append(c.o.Args, args[dash:]...)
	} else if len(args) > 1 {
		return &exitError{exitUsage, fmt.Errorf("unexpected arguments %q (put the command's own arguments after --)", args[1:])}
	}
	if c.scenario == "" {
		return &exitError{exitUsage, errors.New("--scenario FILE is required")}
	}
	if c.o.Mode == "" || c.o.Shards == 0 || c.o.Image == "" {
		return &exitError{exitUsage, errors.New("--mode, --shards and --image are required")}
	}
	if c.o.BackoffLimitPerIndex < 0 {
		return &exitError{exitUsage, fmt.Errorf("--retries must be ≥ 0, got %d", c.o.BackoffLimitPerIndex)}
	}
	if c.o.BackoffLimitPerIndex == 0 {
		c.o.BackoffLimitPerIndex = -1 // k8s.Options: -1 means no retries
	}
	data, err := scenarioBytes(c.scenario)
	if err != nil {
		return err
	}
	// Validate here, where the error can name the file and line,
	// rather than in N pods on the cluster.
	sc, err := loadScenario(c.scenario, nil)
	if err != nil {
		return err
	}
	// Load pods drive the scenario's services as 'stormsim serve' runs
	// them, and serve refuses what only the simulator runs: refuse it
	// here, at its line, instead of in every pod.
	if c.o.Mode == "load" && !c.o.DrivesTarget() {
		if probs := sc.SimulatorOnly(); len(probs) > 0 {
			return probs
		}
	}
	c.o.Scenario, c.o.ScenarioName = data, sc.Name
	if c.o.Files, err = sampleFiles(sc); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := k8s.Render(&buf, c.o); err != nil {
		return err
	}
	if err := checkPodArgs(c.o.Mode, c.o.Args, sc); err != nil {
		return &exitError{exitUsage, err}
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// scenarioBytes returns a scenario file's content, or a canned
// experiment's when no such file exists (as loadScenario resolves it).
func scenarioBytes(arg string) ([]byte, error) {
	b, err := inputfile.Read(arg, topology.MaxFileSize)
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if data, ok := experiments.Lookup(arg); ok {
		return data, nil
	}
	return nil, fmt.Errorf("%s: no such file, and no canned experiment of that name", arg)
}

// checkPodArgs parses the arguments the pods will pass to 'stormsim MODE'
// with that command's own flags, and checks what the command requires, so
// a mistake is reported at render time, naming the flag, rather than by
// every pod of the Job on the cluster.
func checkPodArgs(mode string, args []string, sc *topology.Scenario) error {
	c, ok := commands[mode]
	if !ok {
		return fmt.Errorf("no command %q", mode)
	}
	flags := pflag.NewFlagSet(mode, pflag.ContinueOnError)
	flags.SetOutput(io.Discard)
	c.new().flags(flags)
	if err := flags.Parse(args); err != nil {
		return fmt.Errorf("the pods would run 'stormsim %s' and fail: %w", mode, err)
	}
	val := func(name string) string { return flags.Lookup(name).Value.String() }
	switch mode {
	case "sweep":
		if !flags.Changed("param") {
			return errors.New("sweep needs --param PATH after --")
		}
		if flags.Changed("values") == flags.Changed("range") {
			return errors.New("sweep needs exactly one of --values and --range after --")
		}
	case "capacity":
		if !flags.Changed("slo") {
			return errors.New("capacity needs --slo EXPR after --, e.g. -- --slo 'p99<300ms,success>=99.9%'")
		}
		s, err := capacity.ParseSLO(val("slo"))
		if err != nil {
			return err
		}
		if err := s.Check(sc); err != nil {
			return err
		}
	}
	return nil
}

// sampleFiles returns the files sc's empirical distributions read, to ship
// in the ConfigMap at the same paths relative to the scenario; the pods
// could not read them otherwise. A path outside the scenario's directory
// cannot be shipped and is an error naming it.
func sampleFiles(sc *topology.Scenario) ([]k8s.File, error) {
	var files []k8s.File
	seen := map[string]bool{}
	var walk func(v reflect.Value) error
	walk = func(v reflect.Value) error {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				return walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				if err := walk(v.Index(i)); err != nil {
					return err
				}
			}
		case reflect.Struct:
			if d, ok := v.Interface().(topology.Dist); ok && d.Dist == "empirical" && d.File != "" && !seen[d.File] {
				seen[d.File] = true
				rel := filepath.ToSlash(filepath.Clean(d.File))
				if !filepath.IsLocal(rel) || sc.File == "" {
					return fmt.Errorf("%s: empirical sample file %s: the pods cannot read it; give a path inside the scenario's directory so it is shipped in the ConfigMap", sc.Name, d.File)
				}
				// A ConfigMap holds at most 1 MiB: so can no sample file in it.
				b, err := inputfile.Read(filepath.Join(filepath.Dir(sc.File), d.File), 1<<20)
				if err != nil {
					return err
				}
				files = append(files, k8s.File{Path: rel, Data: b})
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					if err := walk(v.Field(i)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return files, walk(reflect.ValueOf(sc))
}
