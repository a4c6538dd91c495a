package topology

import "fmt"

// Warnings returns what is valid in s but does not do what it looks like
// it does, each naming the keys that would fix it: a propagated deadline
// on an inner edge that the client never hands to the entry, full jitter
// from an initial backoff of 0 (no backoff at all), and a hint when every
// queue is unbounded and no service cancels the work its callers abandon
// (nothing bounds a storm). `stormsim validate` prints them.
func (s *Scenario) Warnings() []string {
	var out []string
	client := &s.Workload.Client
	out = append(out, backoffWarnings("workload.client", client)...)
	for i := range s.Services {
		svc := &s.Services[i]
		for _, c := range flatCalls(svc.Calls) {
			at := "services." + svc.Name + ".calls." + c.To
			if c.PropagateDeadline && !client.PropagateDeadline {
				out = append(out, at+".propagate_deadline: does nothing unless workload.client.propagate_deadline is true (the entry never learns the deadline)")
			}
			out = append(out, backoffWarnings(at, c)...)
		}
	}
	bounded := false
	for i := range s.Services {
		svc := &s.Services[i]
		bounded = bounded || svc.Queue != nil || svc.CancelOnTimeout || svc.RejectExpired
	}
	if !bounded && len(s.Services) > 0 {
		name := s.Services[len(s.Services)-1].Name
		out = append(out, fmt.Sprintf("hint: every queue is unbounded and work its callers abandoned is never cancelled, so nothing bounds a storm: "+
			"set services.NAME.queue, services.NAME.cancel_on_timeout or services.NAME.reject_expired (e.g. services.%s.queue=1000)", name))
	}
	return out
}

// backoffWarnings flags full jitter from an initial backoff of 0: the
// delay is U(0, 0), so retries are sent at once.
func backoffWarnings(at string, c *Call) []string {
	b := c.Retry.Backoff
	if c.Retry.MaxAttempts > 1 && b.Jitter == "full" && b.Initial == 0 {
		return []string{at + ".retry.backoff: jitter full with initial 0 waits 0 before every retry (no backoff); set backoff.initial"}
	}
	return nil
}

// flatCalls returns calls with parallel groups expanded into their members.
func flatCalls(calls []Call) []*Call {
	var out []*Call
	for i := range calls {
		if len(calls[i].Parallel) > 0 {
			out = append(out, flatCalls(calls[i].Parallel)...)
			continue
		}
		out = append(out, &calls[i])
	}
	return out
}
