// Command benchsummary prints one line from a `stormsim load --format json`
// summary for make bench-load: offered vs target rate, late and unsent
// requests, success, p99, and transport failures.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/stormsim/stormsim/metrics"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchsummary SUMMARY.json")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsummary:", err)
		os.Exit(1)
	}
	var s metrics.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		fmt.Fprintln(os.Stderr, "benchsummary:", os.Args[1], err)
		os.Exit(1)
	}
	l := s.Load
	if l == nil {
		fmt.Fprintln(os.Stderr, "benchsummary: not a load summary:", os.Args[1])
		os.Exit(1)
	}
	ok := 0.0
	if s.Requests.Offered > 0 {
		ok = 100 * float64(s.Requests.Succeeded) / float64(s.Requests.Offered)
	}
	fmt.Printf("offered %.1f/s of %.1f/s (%+.2f%%)  late %d  unsent %d  ok %.2f%%  p99 %.2f ms  connect/timeout/reset %d/%d/%d\n",
		l.OfferedRPS, l.TargetRPS, 100*(l.OfferedRPS-l.TargetRPS)/l.TargetRPS, l.Late, l.Unsent, ok,
		s.LatencyMs.P99, l.ConnectFailures, l.Timeouts, l.Resets)
}
