package paste

import (
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stormsim/stormsim/policies"
)

// grpcMaxAttempts is A6's cap: "maxAttempts ... values greater than 5 are
// treated as 5".
const grpcMaxAttempts = 5

// grpcCodes are the gRPC status codes by name, as service configs spell them.
var grpcCodes = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
	"OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// grpcClass maps the status codes a stormsim callee can answer with to its
// outcome classes: UNAVAILABLE and RESOURCE_EXHAUSTED are refusals before
// the work (unavailable), DEADLINE_EXCEEDED is timeout, and INTERNAL,
// UNKNOWN and DATA_LOSS are definite errors (error).
var grpcClass = map[string]policies.Outcome{
	"UNAVAILABLE": policies.Unavailable, "RESOURCE_EXHAUSTED": policies.Unavailable,
	"DEADLINE_EXCEEDED": policies.Timeout,
	"INTERNAL":          policies.Error, "UNKNOWN": policies.Error, "DATA_LOSS": policies.Error,
}

// GRPCServiceConfig reads a gRPC service config (JSON, as in gRFC A2/A6)
// and returns the policies of method ("pkg.Service/Method"): the matching
// methodConfig's retryPolicy or hedgingPolicy, and retryThrottling as a
// token_bucket budget. A methodConfig matches by exact method first, then
// by service, then as the default (an empty name), as gRPC chooses. method
// may be empty when the config has a single methodConfig.
//
// retryPolicy becomes retry: maxAttempts (capped at 5), backoff
// min(initialBackoff·backoffMultiplier^(n−1), maxBackoff)·U(0.8, 1.2) (grpc-go's
// proportional jitter), on = retryableStatusCodes mapped to outcome classes,
// and perAttemptRecvTimeout as the attempt timeout. hedgingPolicy becomes
// hedge (maxAttempts capped at 5, hedgingDelay) with nonFatalStatusCodes as
// the classes that do not end the call.
func GRPCServiceConfig(file string, data []byte, method string) (Policies, error) {
	r := &reader{file: file}
	var p Policies
	root := r.parse(data)
	if root == nil {
		return p, r.err()
	}
	top := r.fields(root, "", []string{"methodConfig", "retryThrottling"}, map[string]string{
		"loadBalancingConfig": "stormsim calls one callee; load balancing is not modelled",
		"loadBalancingPolicy": "stormsim calls one callee; load balancing is not modelled",
		"healthCheckConfig":   "client-side health checking is not modelled",
	})
	if n := top["retryThrottling"]; n != nil {
		p.Budget = r.throttling(n, "retryThrottling")
	}
	mcs := map[int]*yaml.Node{}
	var mcList []*yaml.Node
	if n := top["methodConfig"]; n != nil {
		mcList = r.list(n, "methodConfig")
	}
	best, bestRank := -1, 0
	for i, mc := range mcList {
		mcs[i] = mc
		rank := r.matches(mc, "methodConfig["+strconv.Itoa(i)+"]", method)
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	switch {
	case len(mcList) == 0:
	case method == "" && len(mcList) > 1:
		r.add(top["methodConfig"], "methodConfig", "%d methodConfigs: name the one to use with grpc_method: pkg.Service/Method", len(mcList))
	case method == "":
		r.methodConfig(mcList[0], "methodConfig[0]", &p)
	case best < 0:
		r.add(top["methodConfig"], "methodConfig", "no methodConfig names %s, its service, or the default", method)
	default:
		r.methodConfig(mcs[best], "methodConfig["+strconv.Itoa(best)+"]", &p)
	}
	return p, r.err()
}

// matches ranks how well a methodConfig's names match method: 3 exact, 2
// its service, 1 the default, 0 none.
func (r *reader) matches(mc *yaml.Node, path, method string) int {
	if mc.Kind != yaml.MappingNode {
		return 0
	}
	svc, meth, _ := strings.Cut(method, "/")
	rank := 0
	for i := 0; i+1 < len(mc.Content); i += 2 {
		if mc.Content[i].Value != "name" || mc.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for _, nm := range mc.Content[i+1].Content {
			var s, m string
			for j := 0; nm.Kind == yaml.MappingNode && j+1 < len(nm.Content); j += 2 {
				switch nm.Content[j].Value {
				case "service":
					s = nm.Content[j+1].Value
				case "method":
					m = nm.Content[j+1].Value
				}
			}
			switch {
			case s == "" && m == "":
				rank = max(rank, 1)
			case s == svc && m == "":
				rank = max(rank, 2)
			case s == svc && m == meth:
				rank = max(rank, 3)
			}
		}
	}
	return rank
}

func (r *reader) methodConfig(n *yaml.Node, path string, p *Policies) {
	f := r.fields(n, path, []string{"name", "retryPolicy", "hedgingPolicy"}, map[string]string{
		"timeout":                 "the RPC deadline spans every attempt; set workload.deadline in the scenario instead",
		"waitForReady":            "connection readiness is not modelled",
		"maxRequestMessageBytes":  "message sizes are not modelled",
		"maxResponseMessageBytes": "message sizes are not modelled",
	})
	if f["retryPolicy"] != nil && f["hedgingPolicy"] != nil {
		r.add(f["hedgingPolicy"], path+".hedgingPolicy", "a methodConfig has retryPolicy or hedgingPolicy, not both (A6)")
		return
	}
	if n := f["retryPolicy"]; n != nil {
		r.retryPolicy(n, path+".retryPolicy", p)
	}
	if n := f["hedgingPolicy"]; n != nil {
		r.hedgingPolicy(n, path+".hedgingPolicy", p)
	}
}

func (r *reader) retryPolicy(n *yaml.Node, path string, p *Policies) {
	f := r.fields(n, path, []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier",
		"retryableStatusCodes", "perAttemptRecvTimeout"}, nil)
	rc := policies.RetryConfig{Backoff: policies.BackoffConfig{Jitter: "proportional", Spread: 0.2}}
	for _, k := range []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes"} {
		if f[k] == nil {
			r.add(n, join(path, k), "required (A6)")
		}
	}
	if v := f["maxAttempts"]; v != nil {
		if a, ok := r.integer(v, path+".maxAttempts", 2, math.MaxInt32); ok {
			rc.MaxAttempts = min(a, grpcMaxAttempts)
		}
	}
	if v := f["initialBackoff"]; v != nil {
		if d, ok := r.protoDuration(v, path+".initialBackoff"); ok && r.positive(v, path+".initialBackoff", d > 0) {
			rc.Backoff.Initial = d
		}
	}
	if v := f["maxBackoff"]; v != nil {
		if d, ok := r.protoDuration(v, path+".maxBackoff"); ok && r.positive(v, path+".maxBackoff", d > 0) {
			rc.Backoff.Max = d
		}
	}
	if v := f["backoffMultiplier"]; v != nil {
		if x, ok := r.number(v, path+".backoffMultiplier"); ok {
			if x < 1 {
				// grpc-go accepts (0, 1); stormsim's backoff never shrinks.
				r.add(v, path+".backoffMultiplier", "must be ≥ 1 in stormsim, got %s", shown(v.Value))
			} else {
				rc.Backoff.Multiplier = x
			}
		}
	}
	if rc.Backoff.Max > 0 && rc.Backoff.Max < rc.Backoff.Initial {
		// grpc-go caps every delay at maxBackoff, the first included.
		rc.Backoff.Initial = rc.Backoff.Max
	}
	if v := f["retryableStatusCodes"]; v != nil {
		rc.On = r.codes(v, path+".retryableStatusCodes")
	}
	if v := f["perAttemptRecvTimeout"]; v != nil {
		if d, ok := r.protoDuration(v, path+".perAttemptRecvTimeout"); ok && r.positive(v, path+".perAttemptRecvTimeout", d > 0) {
			p.Timeout = d
		}
	}
	p.Retry, p.Retried = rc, true
}

func (r *reader) hedgingPolicy(n *yaml.Node, path string, p *Policies) {
	f := r.fields(n, path, []string{"maxAttempts", "hedgingDelay", "nonFatalStatusCodes"}, nil)
	h := &policies.HedgeConfig{}
	if v := f["maxAttempts"]; v == nil {
		r.add(n, path+".maxAttempts", "required (A6)")
	} else if a, ok := r.integer(v, path+".maxAttempts", 2, math.MaxInt32); ok {
		h.MaxAttempts = min(a, grpcMaxAttempts)
	}
	if v := f["hedgingDelay"]; v != nil {
		if d, ok := r.protoDuration(v, path+".hedgingDelay"); ok {
			h.Delay = d
		}
	}
	rc := policies.RetryConfig{MaxAttempts: 1}
	if v := f["nonFatalStatusCodes"]; v != nil {
		rc.On = r.codes(v, path+".nonFatalStatusCodes")
	}
	if len(rc.On) == 0 {
		// Every status is fatal: no class may be retried. in_progress is
		// retried whatever on says (the idempotency store asks for it), so
		// naming it alone retries nothing else.
		rc.On = []policies.RetryClass{policies.RetryClass(policies.InProgress.String())}
	}
	p.Hedge, p.Retry, p.Retried = h, rc, true
}

func (r *reader) positive(n *yaml.Node, path string, ok bool) bool {
	if !ok {
		r.add(n, path, "must be > 0 (A6)")
	}
	return ok
}

// codes maps a list of status codes (names or numbers) to outcome classes.
func (r *reader) codes(n *yaml.Node, path string) []policies.RetryClass {
	set := map[policies.Outcome]bool{}
	items := r.list(n, path)
	if n.Kind == yaml.SequenceNode && len(items) == 0 {
		r.add(n, path, "must not be empty (A6)")
	}
	for i, c := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		name := strings.ToUpper(c.Value)
		if k, err := strconv.Atoi(c.Value); err == nil && k >= 0 && k < len(grpcCodes) {
			name = grpcCodes[k]
		}
		if !contains(grpcCodes, name) {
			r.add(c, p, "unknown gRPC status code %s", shown(c.Value))
			continue
		}
		o, ok := grpcClass[name]
		if !ok {
			r.add(c, p, "%s: no stormsim callee answers with it (stormsim maps UNAVAILABLE and RESOURCE_EXHAUSTED to unavailable, DEADLINE_EXCEEDED to timeout, INTERNAL, UNKNOWN and DATA_LOSS to error)", name)
			continue
		}
		set[o] = true
	}
	return classes(set)
}

func (r *reader) throttling(n *yaml.Node, path string) *policies.BudgetConfig {
	f := r.fields(n, path, []string{"maxTokens", "tokenRatio"}, nil)
	b := &policies.BudgetConfig{Kind: policies.BudgetTokenBucket}
	if v := f["maxTokens"]; v == nil {
		r.add(n, path+".maxTokens", "required (A6)")
	} else if x, ok := r.number(v, path+".maxTokens"); ok {
		if x <= 0 || x > 1000 {
			r.add(v, path+".maxTokens", "must be in (0, 1000] (A6), got %s", shown(v.Value))
		} else {
			b.MaxTokens = x
		}
	}
	if v := f["tokenRatio"]; v == nil {
		r.add(n, path+".tokenRatio", "required (A6)")
	} else if x, ok := r.number(v, path+".tokenRatio"); ok {
		// A6: "tokenRatio ... will be truncated to three decimal places".
		x = math.Trunc(x*1000) / 1000
		if x <= 0 {
			r.add(v, path+".tokenRatio", "must be > 0 after truncation to 3 decimals (A6), got %s", shown(v.Value))
		} else {
			b.TokenRatio = x
		}
	}
	return b
}
