package topology

import "fmt"

// crashWarnings flags each call that can wait forever on a crashed owner:
// an owner that crashes after its steps (faults[].crash_owner) sends no
// reply, so a call to its service with neither a timeout (timeout or
// first_byte_timeout) nor an end-to-end deadline that reaches it never
// learns of the crash, and its intents stay in flight. Each warning is
// "file:line: path: msg" at the call.
func (s *Scenario) crashWarnings() []string {
	crashes := map[string]int{} // service -> index of its first crash_owner fault
	for i := len(s.Faults) - 1; i >= 0; i-- {
		if f := &s.Faults[i]; f.CrashOwner > 0 {
			crashes[f.Service] = i
		}
	}
	if len(crashes) == 0 {
		return nil
	}
	reached := s.deadlineReaches()
	var out []string
	check := func(path, from, to string, c *Call, hasDeadline bool) {
		k, ok := crashes[to]
		if !ok || c.Timeout > 0 || c.FirstByteTimeout > 0 || hasDeadline {
			return
		}
		out = append(out, s.ProblemAt(path, "warning: no timeout and no deadline toward %s, whose owners crash (faults[%d].crash_owner): "+
			"a crashed owner never replies, so %s never learns of the crash and its intents stay in flight; set timeout (or workload.deadline, propagated to %s)",
			to, k, from, from).String())
	}
	w := &s.Workload
	check("workload.client", "the client", w.Entry, &w.Client, w.Deadline > 0)
	for i := range s.Services {
		svc := &s.Services[i]
		var walk func(calls []Call, path string)
		walk = func(calls []Call, path string) {
			for j := range calls {
				c, p := &calls[j], fmt.Sprintf("%s[%d]", path, j)
				if len(c.Parallel) > 0 {
					walk(c.Parallel, p+".parallel")
					continue
				}
				check(p, svc.Name, c.To, c, reached[svc.Name])
			}
		}
		walk(svc.Calls, fmt.Sprintf("services[%d].calls", i))
	}
	return out
}

// deadlineReaches returns the services whose attempts carry the
// end-to-end deadline: the entry when the client propagates it, and the
// callee of every call with propagate_deadline from such a service.
func (s *Scenario) deadlineReaches() map[string]bool {
	reached := map[string]bool{}
	w := &s.Workload
	if w.Deadline <= 0 || !w.Client.PropagateDeadline {
		return reached
	}
	reached[w.Entry] = true
	for grew := true; grew; {
		grew = false
		for i := range s.Services {
			if !reached[s.Services[i].Name] {
				continue
			}
			for _, c := range flatCalls(s.Services[i].Calls) {
				if c.PropagateDeadline && !reached[c.To] {
					reached[c.To], grew = true, true
				}
			}
		}
	}
	return reached
}
