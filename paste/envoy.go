package paste

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/policies"
)

// Envoy defaults (envoy/config/route/v3/route_components.proto and
// envoy/config/cluster/v3/circuit_breaker.proto).
const (
	envoyNumRetries      = 1
	envoyBaseInterval    = 25 * time.Millisecond
	envoyRateLimitedMax  = 300 * time.Second
	envoyMaxRetries      = 3
	envoyBudgetPercent   = 20
	envoyMinRetryConcurr = 3
	// envoyNoPercent stands for "no percentage" in a concurrency budget
	// whose limit is max_retries alone: ⌊1e-9 × active⌋ is 0 for any
	// realistic number of requests, so min_concurrency rules.
	envoyNoPercent = 1e-9
)

// envoyRetryOn maps Envoy's retry_on conditions to the outcome classes they
// retry: 5xx retries any 5xx, reset and per-try timeout; gateway-error
// 502/503/504 and per-try timeouts; reset, connect-failure and
// refused-stream failures before a response (unavailable, the class of
// refusals before the work); the gRPC conditions their status (see
// grpcClass); envoy-ratelimited a local rate limit's rejection.
var envoyRetryOn = map[string][]policies.Outcome{
	"5xx":                  {policies.Unavailable, policies.Timeout, policies.Error},
	"gateway-error":        {policies.Unavailable, policies.Timeout},
	"reset":                {policies.Unavailable},
	"reset-before-request": {policies.Unavailable},
	"connect-failure":      {policies.Unavailable},
	"refused-stream":       {policies.Unavailable},
	"envoy-ratelimited":    {policies.Unavailable},
	"unavailable":          {policies.Unavailable},
	"resource-exhausted":   {policies.Unavailable},
	"deadline-exceeded":    {policies.Timeout},
	"internal":             {policies.Error},
}

// httpClass maps an HTTP status to the outcome class a stormsim callee
// answers it for (load mode's ClassifyStatus): 503 and 429 unavailable, 504
// and 408 timeout, 409 conflict, 425 in_progress, anything else error.
func httpClass(code int) policies.Outcome {
	switch code {
	case 503, 429:
		return policies.Unavailable
	case 504, 408:
		return policies.Timeout
	case 409:
		return policies.Conflict
	case 425:
		return policies.InProgress
	}
	return policies.Error
}

// EnvoyRoute reads an Envoy route (YAML or JSON, a RouteConfiguration's
// virtual_hosts[].routes[] entry) and returns its route.retry_policy as
// stormsim policies: num_retries + 1 attempts, retry_on and
// retriable_status_codes as the retried classes, per_try_timeout as the
// attempt timeout, retry_back_off as full-jitter exponential backoff
// (base_interval, ×2, max_interval, default 10 × base), and
// rate_limited_retry_back_off as an honoured Retry-After capped at its
// max_interval. A route without retry_policy does not retry. name, match and
// route.cluster only select what the edge stands for.
func EnvoyRoute(file string, data []byte) (Policies, error) {
	r := &reader{file: file}
	p := Policies{Retried: true, Retry: policies.RetryConfig{MaxAttempts: 1}}
	root := r.parse(data)
	if root == nil {
		return p, r.err()
	}
	top := r.fields(root, "", []string{"name", "match", "route"}, map[string]string{
		"redirect":        "a redirect makes no upstream call",
		"direct_response": "a direct response makes no upstream call",
	})
	if top["route"] == nil {
		r.add(root, "route", "required: the route action holding retry_policy")
		return p, r.err()
	}
	act := r.fields(top["route"], "route", []string{"cluster", "retry_policy"}, map[string]string{
		"timeout":      "the route timeout spans every attempt; set workload.deadline in the scenario instead",
		"hedge_policy": "Envoy's hedge_policy is not translated; use the call's hedge keys",
		"idle_timeout": "stream idle timeouts are not modelled",
	})
	if n := act["retry_policy"]; n != nil {
		r.envoyRetryPolicy(n, "route.retry_policy", &p)
	}
	return p, r.err()
}

// envoyPreviousHosts is Envoy's retry host predicate that avoids the hosts
// a request already tried: retry.other_host.
const envoyPreviousHosts = "envoy.retry_host_predicates.previous_hosts"

func (r *reader) envoyRetryPolicy(n *yaml.Node, path string, p *Policies) {
	f := r.fields(n, path, []string{"retry_on", "num_retries", "per_try_timeout", "retry_back_off",
		"retriable_status_codes", "rate_limited_retry_back_off", "retry_host_predicate"}, map[string]string{
		"host_selection_retry_max_attempts": "stormsim reselects while an untried replica remains (retry.other_host)",
		"retry_priority":                    "priorities are not modelled",
		"retriable_headers":                 "stormsim answers carry no custom headers",
		"retriable_request_headers":         "stormsim requests carry no custom headers",
		"per_try_idle_timeout":              "stream idle timeouts are not modelled",
	})
	rc := &p.Retry
	if v := f["retry_host_predicate"]; v != nil {
		for i, pr := range r.list(v, path+".retry_host_predicate") {
			pp := path + ".retry_host_predicate[" + strconv.Itoa(i) + "]"
			pf := r.fields(pr, pp, []string{"name", "typed_config"}, nil)
			if nv := pf["name"]; nv == nil {
				r.add(pr, pp+".name", "required")
			} else if name, ok := r.str(nv, pp+".name"); ok {
				if name != envoyPreviousHosts {
					r.add(nv, pp+".name", "%s is not supported (stormsim: %s, as retry.other_host)", shown(name), envoyPreviousHosts)
					continue
				}
				rc.OtherHost = true
			}
		}
	}
	rc.MaxAttempts = envoyNumRetries + 1
	if v := f["num_retries"]; v != nil {
		if k, ok := r.integer(v, path+".num_retries", 0, 1000); ok {
			rc.MaxAttempts = k + 1
		}
	}
	set := map[policies.Outcome]bool{}
	statusCodes := false
	if v := f["retry_on"]; v == nil {
		r.add(n, path+".retry_on", "required: Envoy retries nothing without it")
	} else if s, ok := r.str(v, path+".retry_on"); ok {
		for _, cond := range strings.Split(s, ",") {
			cond = strings.TrimSpace(cond)
			if cond == "retriable-status-codes" {
				statusCodes = true
				continue
			}
			cl, ok := envoyRetryOn[cond]
			if !ok {
				r.add(v, path+".retry_on", "condition %s is not supported (stormsim: %s, retriable-status-codes)", shown(cond), strings.Join(envoyConds(), ", "))
				continue
			}
			for _, o := range cl {
				set[o] = true
			}
		}
	}
	if v := f["retriable_status_codes"]; v != nil {
		if !statusCodes {
			r.add(v, path+".retriable_status_codes", "Envoy uses it only with retry_on: retriable-status-codes")
		}
		for i, c := range r.list(v, path+".retriable_status_codes") {
			cp := path + ".retriable_status_codes[" + strconv.Itoa(i) + "]"
			code, ok := r.integer(c, cp, 100, 599)
			if !ok {
				continue
			}
			o := httpClass(code)
			if o == policies.Conflict {
				r.add(c, cp, "409: stormsim never retries a conflict (an idempotency key reused with another payload)")
				continue
			}
			set[o] = true
		}
	}
	rc.On = classes(set)
	if len(rc.On) == 0 {
		rc.On = []policies.RetryClass{policies.RetryClass(policies.InProgress.String())} // retries nothing else
	}
	if v := f["per_try_timeout"]; v != nil {
		if d, ok := r.protoDuration(v, path+".per_try_timeout"); ok {
			p.Timeout = d
		}
	}
	b := policies.BackoffConfig{Initial: envoyBaseInterval, Multiplier: 2, Jitter: "full"}
	if v := f["retry_back_off"]; v != nil {
		bf := r.fields(v, path+".retry_back_off", []string{"base_interval", "max_interval"}, nil)
		if bv := bf["base_interval"]; bv == nil {
			r.add(v, path+".retry_back_off.base_interval", "required")
		} else if d, ok := r.protoDuration(bv, path+".retry_back_off.base_interval"); ok && r.positive(bv, path+".retry_back_off.base_interval", d > 0) {
			b.Initial = d
		}
		if mv := bf["max_interval"]; mv != nil {
			if d, ok := r.protoDuration(mv, path+".retry_back_off.max_interval"); ok {
				if d < b.Initial {
					r.add(mv, path+".retry_back_off.max_interval", "must be ≥ base_interval")
				}
				b.Max = d
			}
		}
	}
	if b.Max == 0 {
		b.Max = 10 * b.Initial
	}
	rc.Backoff = b
	if v := f["rate_limited_retry_back_off"]; v != nil {
		rf := r.fields(v, path+".rate_limited_retry_back_off", []string{"reset_headers", "max_interval"}, nil)
		if rh := rf["reset_headers"]; rh == nil {
			r.add(v, path+".rate_limited_retry_back_off.reset_headers", "required")
		} else {
			for i, h := range r.list(rh, path+".rate_limited_retry_back_off.reset_headers") {
				hp := path + ".rate_limited_retry_back_off.reset_headers[" + strconv.Itoa(i) + "]"
				hf := r.fields(h, hp, []string{"name", "format"}, nil)
				if nv := hf["name"]; nv != nil && !strings.EqualFold(nv.Value, "retry-after") {
					r.add(nv, hp+".name", "stormsim callees send Retry-After only, not %s", shown(nv.Value))
				}
				if fv := hf["format"]; fv != nil && fv.Value != "SECONDS" {
					r.add(fv, hp+".format", "stormsim's Retry-After is in SECONDS, not %s", shown(fv.Value))
				}
			}
		}
		p.HonorPushback, p.MaxPushback = true, envoyRateLimitedMax
		if mv := rf["max_interval"]; mv != nil {
			if d, ok := r.protoDuration(mv, path+".rate_limited_retry_back_off.max_interval"); ok {
				p.MaxPushback = d
			}
		}
	}
}

func envoyConds() []string {
	var s []string
	for k := range envoyRetryOn {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// EnvoyCluster reads an Envoy cluster (YAML or JSON) and returns the retry
// limit its circuit_breakers set for the DEFAULT priority: retry_budget as a
// concurrency budget (budget_percent, default 20; min_retry_concurrency,
// default 3), or, without one, max_retries (default 3) concurrent retries.
// A cluster without circuit_breakers still limits retries to 3 at once, as
// Envoy does. name only selects what the edge stands for.
func EnvoyCluster(file string, data []byte) (Policies, error) {
	r := &reader{file: file}
	p := Policies{Budget: &policies.BudgetConfig{Kind: policies.BudgetConcurrency, Percent: envoyNoPercent, MinConcurrency: envoyMaxRetries}}
	root := r.parse(data)
	if root == nil {
		return p, r.err()
	}
	top := r.fields(root, "", []string{"name", "circuit_breakers", "lb_policy", "least_request_lb_config", "outlier_detection"}, nil)
	r.envoyBalance(top, &p)
	if od := top["outlier_detection"]; od != nil {
		p.Outlier = r.envoyOutlier(od, "outlier_detection")
	}
	cb := top["circuit_breakers"]
	if cb == nil {
		return p, r.err()
	}
	cf := r.fields(cb, "circuit_breakers", []string{"thresholds"}, map[string]string{
		"per_host_thresholds": "stormsim calls one callee host",
	})
	if th := cf["thresholds"]; th != nil {
		for i, t := range r.list(th, "circuit_breakers.thresholds") {
			r.envoyThreshold(t, "circuit_breakers.thresholds["+strconv.Itoa(i)+"]", p.Budget)
		}
	}
	return p, r.err()
}

// envoyBalance reads a cluster's lb_policy: ROUND_ROBIN, RANDOM, and
// LEAST_REQUEST with its default choice_count of 2 (p2c).
func (r *reader) envoyBalance(top map[string]*yaml.Node, p *Policies) {
	lb, cfg := top["lb_policy"], top["least_request_lb_config"]
	if lb == nil {
		if cfg != nil {
			r.add(cfg, "least_request_lb_config", "only with lb_policy: LEAST_REQUEST")
		}
		return
	}
	name, ok := r.str(lb, "lb_policy")
	if !ok {
		return
	}
	switch name {
	case "ROUND_ROBIN":
		p.Balance = "round_robin"
	case "RANDOM":
		p.Balance = "random"
	case "LEAST_REQUEST":
		p.Balance = "p2c"
		if cfg != nil {
			cf := r.fields(cfg, "least_request_lb_config", []string{"choice_count"}, nil)
			if cc := cf["choice_count"]; cc != nil {
				r.integer(cc, "least_request_lb_config.choice_count", 2, 2) // stormsim's p2c draws two
			}
		}
	default:
		r.add(lb, "lb_policy", "%s is not supported (stormsim: ROUND_ROBIN, RANDOM, LEAST_REQUEST)", shown(name))
	}
	if cfg != nil && name != "LEAST_REQUEST" {
		r.add(cfg, "least_request_lb_config", "only with lb_policy: LEAST_REQUEST")
	}
}

// envoyOutlier reads the consecutive-5xx part of a cluster's
// outlier_detection; enforcing_consecutive_5xx must stay 100 (always
// eject).
func (r *reader) envoyOutlier(n *yaml.Node, path string) *Outlier {
	f := r.fields(n, path, []string{"consecutive_5xx", "interval", "base_ejection_time", "max_ejection_time",
		"max_ejection_percent", "enforcing_consecutive_5xx"}, map[string]string{
		"consecutive_gateway_failure":        "stormsim counts every failure class as consecutive_5xx",
		"success_rate_minimum_hosts":         "success-rate ejection is not modelled",
		"success_rate_request_volume":        "success-rate ejection is not modelled",
		"success_rate_stdev_factor":          "success-rate ejection is not modelled",
		"enforcing_success_rate":             "success-rate ejection is not modelled",
		"failure_percentage_threshold":       "failure-percentage ejection is not modelled",
		"split_external_local_origin_errors": "local-origin errors are counted with the others",
	})
	o := &Outlier{}
	if v := f["consecutive_5xx"]; v != nil {
		o.ConsecutiveFailures, _ = r.integer(v, path+".consecutive_5xx", 1, 1<<31-1)
	}
	for _, d := range []struct {
		key string
		to  *time.Duration
	}{{"interval", &o.Interval}, {"base_ejection_time", &o.BaseEjectionTime}, {"max_ejection_time", &o.MaxEjectionTime}} {
		if v := f[d.key]; v != nil {
			if x, ok := r.protoDuration(v, path+"."+d.key); ok && r.positive(v, path+"."+d.key, x > 0) {
				*d.to = x
			}
		}
	}
	if v := f["max_ejection_percent"]; v != nil {
		if k, ok := r.integer(v, path+".max_ejection_percent", 0, 100); ok {
			o.MaxEjectionPercent = float64(k)
		}
	}
	if v := f["enforcing_consecutive_5xx"]; v != nil {
		r.integer(v, path+".enforcing_consecutive_5xx", 100, 100)
	}
	return o
}

func (r *reader) envoyThreshold(n *yaml.Node, path string, b *policies.BudgetConfig) {
	f := r.fields(n, path, []string{"priority", "max_retries", "retry_budget", "track_remaining"}, map[string]string{
		"max_connections":      "client-side connection limits are not modelled",
		"max_pending_requests": "client-side queueing limits are not modelled",
		"max_requests":         "client-side concurrency limits are not modelled",
		"max_connection_pools": "connection pools are not modelled",
	})
	if v := f["priority"]; v != nil && v.Value != "DEFAULT" {
		r.add(v, path+".priority", "only DEFAULT is modelled: stormsim has one priority")
		return
	}
	if v := f["max_retries"]; v != nil {
		if k, ok := r.integer(v, path+".max_retries", 1, 1<<31-1); ok {
			b.MinConcurrency = k
		}
	}
	rb := f["retry_budget"]
	if rb == nil {
		return
	}
	// With a retry_budget, Envoy ignores max_retries.
	b.Percent, b.MinConcurrency = envoyBudgetPercent, envoyMinRetryConcurr
	bf := r.fields(rb, path+".retry_budget", []string{"budget_percent", "min_retry_concurrency"}, map[string]string{
		"budget_interval": "only the in-flight budget (budget_interval unset) is modelled",
	})
	if v := bf["budget_percent"]; v != nil {
		pf := r.fields(v, path+".retry_budget.budget_percent", []string{"value"}, nil)
		if pv := pf["value"]; pv != nil {
			if x, ok := r.number(pv, path+".retry_budget.budget_percent.value"); ok {
				if x <= 0 || x > 100 {
					r.add(pv, path+".retry_budget.budget_percent.value", "must be in (0, 100], got %s", shown(pv.Value))
				} else {
					b.Percent = x
				}
			}
		}
	}
	if v := bf["min_retry_concurrency"]; v != nil {
		if k, ok := r.integer(v, path+".retry_budget.min_retry_concurrency", 0, 1<<31-1); ok {
			b.MinConcurrency = k
		}
	}
}
