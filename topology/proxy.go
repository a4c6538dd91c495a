package topology

import (
	"slices"
	"time"

	"github.com/stormsim/stormsim/paste"
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

// pasteProxies reads the reverse proxies' configs a call names
// (nginx_conf with nginx_location or nginx_upstream, haproxy_cfg with
// haproxy_backend) onto its keys. A proxy's config is the whole truth of
// the edge's retries, so it excludes the other pasted retry sources, and
// the servers it lists must be the callee's replicas.
func (v *validator) pasteProxies(c *Call, path string) {
	if (c.NginxLocation != "" || c.NginxUpstream != "") && c.NginxConf == "" {
		v.add(path+".nginx_conf", "needed: nginx_location and nginx_upstream select a part of it")
	}
	if c.HAProxyBackend != "" && c.HAProxyCfg == "" {
		v.add(path+".haproxy_cfg", "needed: haproxy_backend selects a backend in it")
	}
	sources := 0
	for _, f := range []string{c.GRPCServiceConfig, c.EnvoyRoute, c.NginxConf, c.HAProxyCfg} {
		if f != "" {
			sources++
		}
	}
	if sources > 1 && (c.NginxConf != "" || c.HAProxyCfg != "") {
		v.add(path, "a call's retries come from one pasted config: grpc_service_config, envoy_route, nginx_conf or haproxy_cfg")
		return
	}
	to := c.To
	if path == "workload.client" {
		to = v.sc.Workload.Entry
	}
	servers := func(key string, p paste.Policies) {
		if s := v.sc.Service(to); s != nil && p.Servers > 0 && p.Servers != s.ReplicaCount() {
			v.add(path+"."+key, "lists %d servers but %s has %d replicas: set services.%s.replicas to %d", p.Servers, to, s.ReplicaCount(), to, p.Servers)
		}
	}
	if f := c.NginxConf; f != "" {
		if data, file, ok := v.readPasted(f, path+".nginx_conf"); ok {
			p, err := paste.NginxConf(file, data, c.NginxLocation, c.NginxUpstream)
			v.pasted(c, path, "nginx_conf", p, err)
			if err == nil {
				servers("nginx_conf", p)
			}
		}
	}
	if f := c.HAProxyCfg; f != "" {
		if data, file, ok := v.readPasted(f, path+".haproxy_cfg"); ok {
			p, err := paste.HAProxyCfg(file, data, c.HAProxyBackend)
			v.pasted(c, path, "haproxy_cfg", p, err)
			if err == nil {
				servers("haproxy_cfg", p)
			}
		}
	}
}
