package traces

import (
	"fmt"
	"strings"
	"time"
)

// ServerLatency reads the durations of service's successful server spans
// in a trace file, the latency source of `tune traces:FILE#SERVICE`, with a
// note of how many attempts it left out. As with a results directory,
// failed attempts are left out: a refusal is answered at once, and taking
// it for a latency sample would recommend timeouts of microseconds.
func ServerLatency(path, service string) ([]time.Duration, string, error) {
	spans, _, err := ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var out []time.Duration
	failed := 0
	have := map[string]bool{}
	for i := range spans {
		s := &spans[i]
		if s.Kind != Server {
			continue
		}
		have[s.Service] = true
		if s.Service != service {
			continue
		}
		if s.Failed {
			failed++
			continue
		}
		out = append(out, s.Duration())
	}
	if len(out) == 0 {
		if failed > 0 {
			return nil, "", fmt.Errorf("%s: all %d server spans of %q failed: no latency samples", path, failed, service)
		}
		return nil, "", fmt.Errorf("%s: no server spans of service %q (have: %s)", path, service, strings.Join(sortedKeys(have), ", "))
	}
	return out, fmt.Sprintf("%d of %d server spans dropped (failed): only successful attempts are latency samples", failed, failed+len(out)), nil
}
