package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// mm1Process is issue 24's whole-process M/M/1 scenario.
const mm1Process = "../../sim/testdata/bench/mm1-timeouts.yaml"

// BenchmarkMM1Process compares whole processes, as issue 24 asks:
// `stormsim run` of sim/testdata/bench/mm1-timeouts.yaml (an M/M/1 queue,
// about 2M customers, a per-attempt timeout and a deadline) against
// mm1floor, the hand-specialized loop as a program of its own, simulating
// the same queue as long. Each round runs both, one after the other, and
// reads each child's CPU time (user + system) from the kernel, so start-up,
// parsing and the output count too. It reports their CPU seconds per run
// and process-ratio, stormsim's over the floor's (issue 24: at most 2 with
// timers on). timers=off runs both without timeout and deadline.
//
// Each round also runs both processes on one simulated second
// (startup_cpu_s, floor_startup_cpu_s): what a process costs besides its
// event loop (start-up, scenario, build, output), so that the ratio can be
// split into the part the loop owes and the part the process does.
// procs=1 runs stormsim with GOMAXPROCS=1 from its start, to measure what
// the idle second P costs a single run.
func BenchmarkMM1Process(b *testing.B) {
	sc, err := topology.Load(mm1Process, nil)
	if err != nil {
		b.Fatal(err)
	}
	timeout := sc.Workload.Client.Timeout
	if dl := sc.Workload.Deadline; dl > 0 && (timeout == 0 || dl < timeout) {
		timeout = dl // the attempt's timer: the client timeout cut to the deadline
	}
	cli := buildMain(b, ".")
	fl := buildMain(b, "../../sim/internal/floor/mm1floor")
	d := strconv.FormatFloat(sc.Duration.Seconds(), 'g', -1, 64)
	for _, tc := range []struct {
		name    string
		sets    []string
		timeout time.Duration
		env     []string // stormsim's environment beyond the benchmark's
	}{
		{"timers=on", nil, timeout, nil},
		{"timers=on/procs=1", nil, timeout, []string{"GOMAXPROCS=1"}},
		{"timers=off", []string{"--set", "workload.client.timeout=0", "--set", "workload.deadline=0"}, 0, nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var cliCPU, floorCPU, cliStart, floorStart time.Duration
			to := strconv.FormatFloat(tc.timeout.Seconds(), 'g', -1, 64)
			args := append([]string{"run", mm1Process, "--format", "json"}, tc.sets...)
			for b.Loop() {
				out, cpu := runChild(b, tc.env, cli, args...)
				cliCPU += cpu
				var sum metrics.Summary
				if err := json.Unmarshal(out, &sum); err != nil {
					b.Fatalf("stormsim run: %v", err)
				}
				out, cpu = runChild(b, nil, fl, "-duration", d, "-timeout", to)
				floorCPU += cpu
				sameQueue(b, sum.Requests.Offered, string(out))
				_, cpu = runChild(b, tc.env, cli, append(args, "--set", "duration=1s")...)
				cliStart += cpu
				_, cpu = runChild(b, nil, fl, "-duration", "1", "-timeout", to)
				floorStart += cpu
			}
			n := float64(b.N)
			b.ReportMetric(cliCPU.Seconds()/n, "stormsim_cpu_s")
			b.ReportMetric(floorCPU.Seconds()/n, "floor_cpu_s")
			b.ReportMetric(float64(cliCPU)/float64(floorCPU), "process-ratio")
			b.ReportMetric(cliStart.Seconds()/n, "startup_cpu_s")
			b.ReportMetric(floorStart.Seconds()/n, "floor_startup_cpu_s")
			// The loops' own ratio: each process less its one-second run.
			b.ReportMetric(float64(cliCPU-cliStart)/float64(floorCPU-floorStart), "loop-ratio")
		})
	}
}

// sameQueue checks that the floor simulated as many customers as stormsim
// offered: both are Poisson counts of mean λ·duration (2M, standard
// deviation 1414) from different random streams, so 1 % apart is over 14
// standard deviations — a different window, not chance.
func sameQueue(b *testing.B, offered int64, floorOut string) {
	b.Helper()
	f := strings.Fields(floorOut)
	if len(f) != 3 {
		b.Fatalf("mm1floor printed %q", floorOut)
	}
	served, err1 := strconv.ParseInt(f[0], 10, 64)
	timedOut, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("mm1floor printed %q", floorOut)
	}
	if n := served + timedOut; offered == 0 || math.Abs(float64(n-offered)) > 0.01*float64(offered) {
		b.Fatalf("the floor simulated %d customers, stormsim %d: not the same queue", n, offered)
	}
}

// runChild runs bin with env added to the benchmark's environment and
// returns its standard output and CPU time.
func runChild(b *testing.B, env []string, bin string, args ...string) ([]byte, time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s %s: %v: %s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return out, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
