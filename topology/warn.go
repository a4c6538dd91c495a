package topology

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Warnings returns what is valid in s but does not do what it looks like
// it does, each naming the keys that would fix it: a propagated deadline
// on an inner edge that the client never hands to the entry, full jitter
// from an initial backoff of 0 (no backoff at all), and a hint when every
// queue is unbounded and no service cancels the work its callers abandon
// (nothing bounds a storm), and a call that never learns of an owner
// crash (crashWarnings). `stormsim validate` prints them.
func (s *Scenario) Warnings() []string {
	out := slices.Clone(s.notes)
	client := &s.Workload.Client
	out = append(out, backoffWarnings("workload.client", client)...)
	out = append(out, phaseWarnings("workload.client", client)...)
	for i := range s.Services {
		svc := &s.Services[i]
		for _, c := range flatCalls(svc.Calls) {
			at := "services." + svc.Name + ".calls." + c.To
			if c.PropagateDeadline && !client.PropagateDeadline {
				out = append(out, at+".propagate_deadline: does nothing unless workload.client.propagate_deadline is true (the entry never learns the deadline)")
			}
			out = append(out, backoffWarnings(at, c)...)
			out = append(out, s.replicaWarnings(at, c)...)
			out = append(out, phaseWarnings(at, c)...)
		}
	}
	out = append(out, s.replicaWarnings("workload.client", client)...)
	out = append(out, s.fleetWarnings()...)
	out = append(out, s.crashWarnings()...)
	bounded := false
	for i := range s.Services {
		bounded = bounded || len(unboundedKeys(&s.Services[i])) < 3
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

// DrainHint returns a hint when a run that ended at simulated time end
// drained for longer than 3x its arrival window after the window closed,
// naming the unset keys that would bound that work: each service's
// queue, cancel_on_timeout and reject_expired, workload.deadline, and
// limits.max_drain. It returns "" for a shorter drain. The simulator puts
// it in the run's summary, so run, compare and sweep all carry it.
func (s *Scenario) DrainHint(end time.Duration) string {
	drain := end - s.Duration
	if s.Duration <= 0 || drain <= 3*s.Duration {
		return ""
	}
	var keys []string
	for i := range s.Services {
		keys = append(keys, unboundedKeys(&s.Services[i])...)
	}
	if s.Workload.Deadline == 0 {
		keys = append(keys, "workload.deadline")
	}
	keys = append(keys, "limits.max_drain")
	return fmt.Sprintf("hint: work drained for %.1fs after the %v arrival window (more than 3x): bound it with %s or %s",
		drain.Seconds(), s.Duration, strings.Join(keys[:len(keys)-1], ", "), keys[len(keys)-1])
}

// unboundedKeys names the keys of svc left unset that would bound the
// work queued at it or abandoned by its callers: the static hint in
// Warnings and the run-time DrainHint share it.
func unboundedKeys(svc *Service) []string {
	at := "services." + svc.Name
	var keys []string
	if svc.Queue == nil {
		keys = append(keys, at+".queue")
	}
	if !svc.CancelOnTimeout {
		keys = append(keys, at+".cancel_on_timeout")
	}
	if !svc.RejectExpired {
		keys = append(keys, at+".reject_expired")
	}
	return keys
}
