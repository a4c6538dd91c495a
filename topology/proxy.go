package topology

import (
	"slices"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// writeMethods are the HTTP methods a workload's writes may use.
var writeMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// nginx's passive health check, as outlier detection: a server is down for
// fail_timeout (10 s) after max_fails (1) failed attempts; nginx's clock is
// in whole seconds.
var nginxOutlier = OutlierDetection{ConsecutiveFailures: 1, Interval: time.Second,
	BaseEjectionTime: 10 * time.Second, MaxEjectionTime: 10 * time.Second, MaxEjectionPercent: 100}

// proxyDefaults expands the rules of the reverse proxies' presets that
// depend on the rest of the scenario, after the retry block is resolved:
// each_server_once caps the attempts at the callee's replicas (0: one
// each); the nginx preset holds writes by the workload's write method
// (POST, LOCK, PATCH; not PUT, DELETE) and, toward more than one replica,
// brings nginx's passive health as outlier detection.
func (v *validator) proxyDefaults(c *Call, path string) {
	r := &c.Retry
	to := c.To
	if path == "workload.client" {
		to = v.sc.Workload.Entry
	}
	callee := v.sc.Service(to)
	if r.EachServerOnce && callee != nil {
		n := callee.ReplicaCount()
		if r.MaxAttempts == 0 || r.MaxAttempts > n {
			r.MaxAttempts = n
		}
	}
	if r.Preset != "nginx" {
		return
	}
	if !v.given(path + ".retry.hold_writes") {
		r.HoldWrites = slices.Contains(policies.NginxHeldMethods, v.sc.Workload.WriteMethod)
	}
	if callee != nil && callee.ReplicaCount() > 1 && c.OutlierDetection == nil && !v.givenUnder(path+".outlier_detection") {
		od := nginxOutlier
		c.OutlierDetection = &od
	}
}
