package metrics

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FormatText writes the short human summary printed by `stormsim run`: the
// verdict when there is one, the outcome of the logical requests, goodput,
// end-to-end latency, amplification, how the writes converged when the
// scenario follows them after UNKNOWN, what irrevocable steps, external
// effects and versioned writes did when it has them, then one line per
// service.
func FormatText(w io.Writer, s *Summary) error {
	ew := NewErrWriter(w)
	p := ew.Printf
	p("scenario %s  seed %d  %s %.1fs  status %s\n", s.Scenario, s.Seed, s.Clock(), s.SimTimeS, orDash(string(s.Status)))
	if d := s.Diverged; d != nil {
		p("DIVERGED at %.1fs: %s", d.AtS, d.Reason)
		if d.Service != "" {
			p(" (%s queue %d)", d.Service, d.Queue)
		}
		p("\n")
	}
	if s.Verdict != nil {
		writeVerdict(ew, s.Verdict)
	}
	if s.SLO != nil {
		p("slo        %s\n", s.SLO.Line())
	}
	for _, h := range s.Hints {
		p("%s\n", h)
	}
	rq := s.Requests
	p("requests   offered %d  succeeded %d (%s)  failed %d (%s)  unknown %d (%s)\n",
		rq.Offered, rq.Succeeded, pct(rq.Succeeded, rq.Offered), rq.Failed, pct(rq.Failed, rq.Offered), rq.Unknown, pct(rq.Unknown, rq.Offered))
	p("goodput    %s req/s\n", num(s.GoodputRPS))
	if l := s.LatencyMs; rq.Succeeded > 0 {
		p("latency    mean %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s (ms, over the %d succeeded requests only)\n",
			num(l.Mean), num(l.P50), num(l.P90), num(l.P99), num(l.P999), num(l.Max), rq.Succeeded)
	} else {
		p("latency    - (no request succeeded: no latency to report)\n")
	}
	var lost []string
	for _, l := range []struct {
		what string
		l    *Latency
	}{{"failed", s.LatencyFailedMs}, {"unknown", s.LatencyUnknownMs}} {
		if l.l != nil {
			lost = append(lost, fmt.Sprintf("%d %s after mean %s, p50 %s, p99 %s", l.l.Count, l.what, num(l.l.Mean), num(l.l.P50), num(l.l.P99)))
		}
	}
	if len(lost) > 0 {
		p("           %s (ms)\n", strings.Join(lost, "; "))
	}
	if l := s.LatencyAllMs; l != nil && len(lost) > 0 {
		p("           all %d requests, each at its time to its outcome: mean %s, p50 %s, p99 %s (ms; what an SLO's p99(all) reads)\n",
			l.Count, num(l.Mean), num(l.P50), num(l.P99))
	}
	p("amplify    %s× (busiest service: its attempts over the whole run, drain included, per request offered)", num(s.Amplification))
	if s.Duplicates > 0 || s.Writes {
		p("  duplicates %d", s.Duplicates)
	}
	p("\n")
	if l := s.Load; l != nil && len(l.Statuses) > 0 {
		p("statuses   %s\n", statusBreakdown(l.Statuses))
	}
	writeConnLines(ew, s.Edges)
	writeCertainty(ew, s)
	writeEffects(ew, s) // effects_text.go
	if ew.Err() != nil {
		return ew.Err()
	}
	if len(s.Services) == 0 {
		return nil
	}
	p("\n")
	table := [][]string{{"service", "attempts", "amp", "ok", "rejected", "timed out", "util", "queue mean", "queue max", "p99 ms"}}
	for _, v := range s.Services {
		row := []string{v.Name, itoa(v.Attempts), num(v.Amplification), itoa(v.Succeeded),
			itoa(v.Rejected), itoa(v.TimedOut), strconv.FormatFloat(100*v.Utilization, 'f', 1, 64) + "%",
			num(v.QueueMean), itoa(v.QueueMax), num(v.LatencyMs.P99)}
		if s.Load != nil && slices.Contains(s.Load.Unmeasured, v.Name) {
			for i := 6; i < len(row); i++ {
				row[i] = "-" // the target's own view: not seen by the driver
			}
		}
		table = append(table, row)
	}
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	// Names left-aligned, numbers right-aligned, two spaces apart.
	for _, row := range table {
		p("%-*s", widths[0], row[0])
		for i, c := range row[1:] {
			p("  %*s", widths[i+1], c)
		}
		p("\n")
	}
	writeConsumers(ew, s.Services)
	return ew.Err()
}

// num prints a float with 3 significant digits, or more for whole values,
// never in exponent form: readable at a glance.
func num(x float64) string {
	switch ax := max(x, -x); {
	case ax >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case ax >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case ax >= 1 || ax == 0:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func pct(n, of int64) string {
	if of == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// statusBreakdown lists HTTP answers by status code, in code order, each
// with its share of all answers: "200: 9667 (99.6%)  503: 42 (0.4%)".
func statusBreakdown(st map[string]int64) string {
	var total int64
	codes := make([]string, 0, len(st))
	for c, n := range st {
		codes = append(codes, c)
		total += n
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%s: %d (%s)", c, st[c], pct(st[c], total))
	}
	return strings.Join(parts, "  ")
}
