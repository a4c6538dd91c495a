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
//
// A service with no server spans of its own in the file (a target that
// is not instrumented, as `stormsim load --target --traces` sees it) is
// read from the client spans that name it as their peer.service instead:
// its attempts as their caller timed them, which is what tune wants of a
// hop. Attempts their caller abandoned (a hedge's loser) are left out
// with the failed ones.
func ServerLatency(path, service string) ([]time.Duration, string, error) {
	spans, _, err := ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	servers, peers := map[string]bool{}, map[string]bool{}
	out, failed, found := durationsOf(spans, servers, func(s *Span) string {
		if s.Kind == Server {
			return s.Service
		}
		return ""
	}, service)
	what, from, why := "server spans", "", "failed"
	if !found {
		what, from, why = "client spans", "no server spans of its own: read from the client spans naming it as peer.service; ", "failed or abandoned"
		out, failed, found = durationsOf(spans, peers, func(s *Span) string {
			if s.Kind == Client {
				return s.Peer
			}
			return ""
		}, service)
	}
	if !found {
		return nil, "", fmt.Errorf("%s: no server spans of service %q, nor client spans with peer.service %q (%s)", path, service, service, haveNames(servers, peers))
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("%s: all %d %s of %q failed: no latency samples", path, failed, what, service)
	}
	return out, fmt.Sprintf("%s%d of %d %s dropped (%s): only successful attempts are latency samples", from, failed, failed+len(out), what, why), nil
}

// durationsOf returns the durations of the successful spans that name
// names service, how many more of them failed, and whether any did; have
// collects every name seen ("" names nothing).
func durationsOf(spans []Span, have map[string]bool, name func(*Span) string, service string) (out []time.Duration, failed int, found bool) {
	for i := range spans {
		s := &spans[i]
		n := name(s)
		if n == "" {
			continue
		}
		have[n] = true
		if n != service {
			continue
		}
		found = true
		if s.Failed {
			failed++
			continue
		}
		out = append(out, s.Duration())
	}
	return out, failed, found
}

// haveNames says which services a trace file does hold spans of.
func haveNames(servers, peers map[string]bool) string {
	if len(servers) == 0 && len(peers) == 0 {
		return "it has no server spans, and no client spans naming a peer.service"
	}
	var parts []string
	if len(servers) > 0 {
		parts = append(parts, "server spans of: "+strings.Join(sortedKeys(servers), ", "))
	}
	if len(peers) > 0 {
		parts = append(parts, "client spans to: "+strings.Join(sortedKeys(peers), ", "))
	}
	return "have " + strings.Join(parts, "; ")
}
