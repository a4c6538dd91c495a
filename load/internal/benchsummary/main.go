// Command benchsummary prints one line per run for make bench-load, ending
// in CLEAN or DIRTY: a run is clean when it offered its target rate within
// 1 % and at least 99 % of its requests succeeded (the criterion used to
// compare the highest clean rate of stormsim and vegeta).
//
//	benchsummary stormsim SUMMARY.json [CPU [TARGETCPU]]  a `stormsim load --format json` summary
//	benchsummary vegeta REPORT.json RATE [CPU]            a `vegeta report -type=json` report
//	benchsummary ghz REPORT.json RATE [CPU [TARGETCPU]]   a `ghz -O json` report (gRPC)
//
// CPU, if given, is a file holding the load generator's user and system CPU
// seconds (GNU time's -f '%U %S'): the line then gives its CPU time per
// request, the budget that matters when it shares the cores with its target.
// TARGETCPU, in the same form, is the target's CPU over the run: the line
// then gives the target's CPU time per request too, which says whether the
// target rather than the generator bounds the clean rate.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/stormsim/stormsim/metrics"
)

func main() {
	if len(os.Args) < 3 {
		fail(2, "usage: benchsummary stormsim SUMMARY.json [CPU] | benchsummary vegeta REPORT.json RATE [CPU] | benchsummary ghz REPORT.json RATE")
	}
	b, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail(1, err.Error())
	}
	switch os.Args[1] {
	case "stormsim":
		var s metrics.Summary
		if err := json.Unmarshal(b, &s); err != nil || s.Load == nil {
			fail(1, fmt.Sprintf("%s: not a load summary (%v)", os.Args[2], err))
		}
		l := s.Load
		ok := 0.0
		if s.Requests.Offered > 0 {
			ok = float64(s.Requests.Succeeded) / float64(s.Requests.Offered)
		}
		fmt.Printf("offered %.1f/s of %.1f/s (%+.2f%%)  late %d  unsent %d  ok %.2f%%  p99 %.2f ms  connect/timeout/reset %d/%d/%d  %s%s%s\n",
			l.OfferedRPS, l.TargetRPS, 100*(l.OfferedRPS-l.TargetRPS)/l.TargetRPS, l.Late, l.Unsent, 100*ok,
			s.LatencyMs.P99, l.ConnectFailures, l.Timeouts, l.Resets, cpuPerRequest(3, s.Requests.Offered), targetCPU(4, s.Requests.Offered), verdict(l.OfferedRPS, l.TargetRPS, ok))
	case "vegeta":
		if len(os.Args) != 4 && len(os.Args) != 5 {
			fail(2, "usage: benchsummary vegeta REPORT.json RATE [CPU]")
		}
		target, err := strconv.ParseFloat(os.Args[3], 64)
		if err != nil {
			fail(2, "RATE: "+err.Error())
		}
		var r struct {
			Rate      float64 `json:"rate"`
			Success   float64 `json:"success"`
			Requests  int64   `json:"requests"`
			Latencies struct {
				P99 float64 `json:"99th"`
			} `json:"latencies"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			fail(1, fmt.Sprintf("%s: %v", os.Args[2], err))
		}
		fmt.Printf("offered %.1f/s of %.1f/s (%+.2f%%)  requests %d  ok %.2f%%  p99 %.2f ms  %s%s\n",
			r.Rate, target, 100*(r.Rate-target)/target, r.Requests, 100*r.Success, r.Latencies.P99/1e6, cpuPerRequest(4, r.Requests), verdict(r.Rate, target, r.Success))
	case "ghz":
		if len(os.Args) < 4 || len(os.Args) > 6 {
			fail(2, "usage: benchsummary ghz REPORT.json RATE [CPU [TARGETCPU]]")
		}
		target, err := strconv.ParseFloat(os.Args[3], 64)
		if err != nil {
			fail(2, "RATE: "+err.Error())
		}
		var r struct {
			Count     int64            `json:"count"`
			Rps       float64          `json:"rps"`
			Codes     map[string]int64 `json:"statusCodeDistribution"`
			Latencies []struct {
				Percentage int   `json:"percentage"`
				Latency    int64 `json:"latency"` // ns
			} `json:"latencyDistribution"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			fail(1, fmt.Sprintf("%s: %v", os.Args[2], err))
		}
		ok, p99 := 0.0, 0.0
		if r.Count > 0 {
			ok = float64(r.Codes["OK"]) / float64(r.Count)
		}
		for _, l := range r.Latencies {
			if l.Percentage == 99 {
				p99 = float64(l.Latency) / 1e6
			}
		}
		fmt.Printf("offered %.1f/s of %.1f/s (%+.2f%%)  requests %d  ok %.2f%%  p99 %.2f ms  %s%s%s\n",
			r.Rps, target, 100*(r.Rps-target)/target, r.Count, 100*ok, p99, cpuPerRequest(4, r.Count), targetCPU(5, r.Count), verdict(r.Rps, target, ok))
	default:
		fail(2, "benchsummary: want stormsim, vegeta or ghz, got "+os.Args[1])
	}
}

// cpuPerRequest returns "cpu N µs/req  " for n requests and the CPU file
// that is argument i, or "" when that argument is absent.
func cpuPerRequest(i int, n int64) string {
	if len(os.Args) <= i {
		return ""
	}
	b, err := os.ReadFile(os.Args[i])
	if err != nil {
		fail(1, err.Error())
	}
	s, err := formatCPU(string(b), n)
	if err != nil {
		fail(1, fmt.Sprintf("%s: %v", os.Args[i], err))
	}
	return s
}

// targetCPU returns "target " and cpuPerRequest's text for the target's
// CPU file that is argument i, or "" when that argument is absent.
func targetCPU(i int, n int64) string {
	if s := cpuPerRequest(i, n); s != "" {
		return "target " + s
	}
	return ""
}

// formatCPU formats the user and system seconds in text (GNU time's
// '%U %S') per request of n.
func formatCPU(text string, n int64) (string, error) {
	var user, sys float64
	if _, err := fmt.Sscan(text, &user, &sys); err != nil {
		return "", fmt.Errorf("want user and system CPU seconds (GNU time -f '%%U %%S'): %w", err)
	}
	if n <= 0 {
		return "cpu - µs/req  ", nil
	}
	return fmt.Sprintf("cpu %.1f µs/req  ", (user+sys)*1e6/float64(n)), nil
}

func verdict(offered, target, ok float64) string {
	if offered >= 0.99*target && offered <= 1.01*target && ok >= 0.99 {
		return "CLEAN"
	}
	return "DIRTY"
}

func fail(code int, msg string) {
	fmt.Fprintln(os.Stderr, "benchsummary:", msg)
	os.Exit(code)
}
