package topology

import (
	"math"
	"slices"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// Scenario is a validated, typed scenario: the services of a call graph, the
// workload offered at its entry, and the faults injected into it. It is pure
// data; package sim and package load give it behaviour.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Seed drives every random stream of a run. Default 1.
	Seed uint64 `yaml:"seed,omitempty"`
	// Duration is the arrival window. Every logical request offered in it is
	// followed to its outcome (bounded by its deadline).
	Duration time.Duration `yaml:"duration"`
	// Warmup: requests arriving before it are excluded from the summary.
	Warmup time.Duration `yaml:"warmup,omitempty"`
	// Interval is the time-series bucket width. Default 1s.
	Interval time.Duration `yaml:"interval,omitempty"`
	Workload Workload      `yaml:"workload"`
	Services []Service     `yaml:"services"`
	Faults   []Fault       `yaml:"faults,omitempty"`
	// Variants are named sets of overrides for `stormsim compare`.
	Variants []Variant `yaml:"variants,omitempty"`
	// Limits guard the simulator against runaway storms.
	Limits Limits `yaml:"limits,omitempty"`

	// File is the path the scenario was read from ("" if built in code).
	File string `yaml:"-"`

	// src and sets are what the scenario was loaded from, kept so that
	// WithSets can derive variants that are validated like the original.
	src  []byte
	sets []string
	// notes say what each pasted proxy config set and what it ignored.
	notes []string
}

// Workload is the traffic offered at the entry service.
type Workload struct {
	// Entry names the service the external client calls.
	Entry string `yaml:"entry"`
	// Arrival is poisson (default), constant, or closed (Clients users each
	// sending one request after the previous one ended plus ThinkTime).
	Arrival Arrival `yaml:"arrival,omitempty"`
	// Rate is logical requests per second (open loop).
	Rate float64 `yaml:"rate,omitempty"`
	// Schedule makes the rate piecewise constant: from each step's At on,
	// the rate is that step's Rate.
	Schedule  []RateStep    `yaml:"schedule,omitempty"`
	Clients   int           `yaml:"clients,omitempty"`
	ThinkTime time.Duration `yaml:"think_time,omitempty"`
	// Deadline is the end-to-end deadline of a logical request: the user
	// gives up after it. 0 means none (then every call needs a timeout).
	Deadline time.Duration `yaml:"deadline,omitempty"`
	// WriteFraction is the share of logical requests that are
	// non-idempotent writes.
	WriteFraction float64 `yaml:"write_fraction,omitempty"`
	// WriteMethod is the HTTP method of a write: POST (default), PUT,
	// PATCH or DELETE. Reverse proxies retry some and not others (the
	// nginx preset's hold_writes).
	WriteMethod string `yaml:"write_method,omitempty"`
	// IdempotencyKeys makes writes carry a key the committing service dedupes on.
	IdempotencyKeys bool `yaml:"idempotency_keys,omitempty"`
	// Client is the external client's call policy toward Entry (its To is ignored).
	Client Call `yaml:"client,omitempty"`
	// Instances is the number of client instances (a fleet): each holds its
	// own policy state (budget, breaker, throttle, balancer) and the logical
	// requests are dealt to them in turn. 0 means 1.
	Instances int `yaml:"instances,omitempty"`
	// Zones places the client instances: instance K is in zone
	// Zones[K mod len(Zones)]. None: the client has no zone.
	Zones []string `yaml:"zones,omitempty"`
	// Query makes the client ask the committing service by the write's key
	// after a write's outcome is unknown, instead of leaving it unknown
	// (converge.go); AlertAfter alerts on an intent still unknown that long
	// after its first attempt. Either makes the run report certainty.
	Query      *Query        `yaml:"query,omitempty"`
	AlertAfter time.Duration `yaml:"alert_after,omitempty"`
}

// RateStep is one step of a piecewise-constant rate schedule.
type RateStep struct {
	At   time.Duration `yaml:"at"`
	Rate float64       `yaml:"rate"`
}

// Service is one service of the call graph.
type Service struct {
	Name string `yaml:"name"`
	// Workers is the number of requests served at once (threads).
	Workers int `yaml:"workers"`
	// Queue is the waiting room beyond the workers; a full queue rejects
	// with Unavailable. nil means unbounded; 0 means no waiting room.
	Queue *int `yaml:"queue,omitempty"`
	// ServiceTime is the work an attempt does holding a worker, before its
	// downstream calls.
	ServiceTime Dist `yaml:"service_time"`
	// SlowdownPerInflight is added to each service time for every other
	// request in flight at the service when the work starts (contention).
	SlowdownPerInflight time.Duration `yaml:"slowdown_per_inflight,omitempty"`
	// ErrorRate is the probability an attempt ends in ErrorClass after doing its work.
	ErrorRate float64 `yaml:"error_rate,omitempty"`
	// ErrorClass is the class of injected errors: error (default), unavailable or timeout.
	ErrorClass ErrorClass `yaml:"error_class,omitempty"`
	// DownstreamFailure is what this service answers when a downstream call
	// finally fails: propagate (default: the downstream call's class, a
	// local timeout answered as timeout, a breaker or throttle fast-fail as
	// unavailable), unavailable, error or timeout.
	DownstreamFailure DownstreamFailure `yaml:"downstream_failure,omitempty"`
	// CancelOnTimeout stops an attempt's work when its caller gives up.
	// Default false: the server keeps working for nobody.
	CancelOnTimeout bool `yaml:"cancel_on_timeout,omitempty"`
	// RejectExpired drops work whose propagated deadline passed before it starts.
	RejectExpired bool `yaml:"reject_expired,omitempty"`
	// Commits marks the service that executes a write's side effect.
	// Default: the last service reached from the entry.
	Commits bool `yaml:"commits,omitempty"`
	// Idempotency configures the committing service's idempotency store.
	Idempotency *Idempotency `yaml:"idempotency,omitempty"`
	// Overload is the service's own protection: limits, queue discipline,
	// CoDel, shedding, pushback.
	Overload policies.OverloadConfig `yaml:"overload,omitempty"`
	// Calls are made in order after the service time, holding the worker.
	Calls []Call `yaml:"calls,omitempty"`
	// Consumes makes the service the consumer group of a topic.
	Consumes *Consume `yaml:"consumes,omitempty"`
	// ExternalEffect makes the service's work an effect outside the
	// system (an e-mail, a payment), counted per execution; nil: none.
	ExternalEffect *ExternalEffect `yaml:"external_effect,omitempty"`
	// VersionedWrite makes each attempt a read-modify-write of one entity
	// that can conflict with a concurrent writer; nil: none.
	VersionedWrite *VersionedWrite `yaml:"versioned_write,omitempty"`
	// Replicas runs the service as this many identical replicas, each with
	// Workers workers, its own queue, fault state and policy state for its
	// outgoing calls; callers spread their attempts over them (Call.Balance).
	// 0 means 1.
	Replicas int `yaml:"replicas,omitempty"`
	// Zones places the replicas: replica K is in zone Zones[K mod
	// len(Zones)]. None: the service has no zone.
	Zones []string `yaml:"zones,omitempty"`
	// QueryTime is the service time of the service's query-by-key
	// endpoint (status and fact queries); nil: it has none, and a fact
	// query to it cannot tell. Recovery and Reconciliation are the
	// committing service's convergence jobs (converge.go).
	QueryTime      *Dist           `yaml:"query_time,omitempty"`
	Recovery       *Recovery       `yaml:"recovery,omitempty"`
	Reconciliation *Reconciliation `yaml:"reconciliation,omitempty"`
}

// ZoneOf is the zone of replica rep of s ("" without zones).
func (s *Service) ZoneOf(rep int) string { return zoneOf(s.Zones, rep) }

// ZoneOf is the zone of client instance k ("" without zones).
func (w *Workload) ZoneOf(k int) string { return zoneOf(w.Zones, k) }

func zoneOf(zones []string, k int) string {
	if len(zones) == 0 {
		return ""
	}
	return zones[k%len(zones)]
}

// ReplicaCount is the number of replicas of s (at least 1).
func (s *Service) ReplicaCount() int { return max(s.Replicas, 1) }

// Call is one downstream call made by a service (or by the external client),
// or a fan-out group of calls made in parallel.
type Call struct {
	// To names the callee. Empty for a Parallel group.
	To string `yaml:"to,omitempty"`
	// Fanout makes N identical calls to To in parallel (default 1).
	Fanout int `yaml:"fanout,omitempty"`
	// Parallel is a group of calls made at once instead of a single call.
	Parallel []Call `yaml:"parallel,omitempty"`
	// Publish makes this step publish an event instead of calling a service.
	Publish *Publish `yaml:"publish,omitempty"`
	// WaitFor is the quorum of a Fanout or Parallel group: the group
	// succeeds when this many calls succeeded; 0 means all.
	WaitFor int `yaml:"wait_for,omitempty"`
	// Irrevocable marks the step as one that cannot be taken back once
	// sent (a payment handed to its channel): from its first attempt sent,
	// neither the caller's cancellation nor the deadline stops the attempt
	// making it, which runs its remaining steps to the end.
	Irrevocable bool `yaml:"irrevocable,omitempty"`

	// Timeout bounds each attempt; 0 means none (the deadline still applies).
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// PoolTimeout, ConnectTimeout, TLSTimeout and FirstByteTimeout bound
	// the phases of an attempt beside Timeout; 0 leaves a phase unbounded.
	// The first three fail the attempt as not_sent.
	PoolTimeout      time.Duration `yaml:"pool_timeout,omitempty"`
	ConnectTimeout   time.Duration `yaml:"connect_timeout,omitempty"`
	TLSTimeout       time.Duration `yaml:"tls_timeout,omitempty"`
	FirstByteTimeout time.Duration `yaml:"first_byte_timeout,omitempty"`
	// QueueTimeout makes Pool a proxy's per-server queue (HAProxy's server
	// maxconn with timeout queue): an attempt that waited this long for a
	// slot of its replica is answered unavailable by the proxy and never
	// reaches the server. It needs Pool and excludes PoolTimeout; 0: none.
	QueueTimeout time.Duration `yaml:"queue_timeout,omitempty"`
	// Pool models the edge's connections; nil means none (every attempt
	// is sent at once, as before).
	Pool *Pool `yaml:"pool,omitempty"`
	// PropagateDeadline gives the callee the remaining end-to-end budget.
	PropagateDeadline bool `yaml:"propagate_deadline,omitempty"`
	// Query makes the caller, after this call's outcome is unknown, ask
	// its target (the committing service) by the write's key on the
	// schedule of workload.query, over this edge and under its policy,
	// instead of answering unknown (edgequery.go); nil: no queries.
	Query *Query `yaml:"query,omitempty"`
	// Network is the one-way delay of the edge, applied each way.
	Network *Dist `yaml:"network,omitempty"`

	Retry         policies.RetryConfig     `yaml:"retry,omitempty"`
	Budget        *policies.BudgetConfig   `yaml:"budget,omitempty"`
	Breaker       *policies.BreakerConfig  `yaml:"breaker,omitempty"`
	Hedge         *policies.HedgeConfig    `yaml:"hedge,omitempty"`
	Throttle      *policies.ThrottleConfig `yaml:"throttle,omitempty"`
	HonorPushback bool                     `yaml:"honor_pushback,omitempty"`
	// SendRate limits how fast the caller sends attempts on this call: an
	// attempt without a token waits for the next fill.
	SendRate *policies.RateLimitConfig `yaml:"send_rate,omitempty"`
	// MaxPushback caps an honoured retry-after (default 30s).
	MaxPushback time.Duration `yaml:"max_pushback,omitempty"`
	// Balance spreads the call's attempts over the callee's replicas:
	// round_robin (default), random, least_request (fewest outstanding) or
	// p2c (the fewer outstanding of two random replicas).
	Balance Balance `yaml:"balance,omitempty"`
	// OutlierDetection ejects a callee replica after consecutive failures,
	// as Envoy's outlier detection does.
	OutlierDetection *OutlierDetection `yaml:"outlier_detection,omitempty"`
	// ZoneAware sends attempts to the callee's replicas in the caller's
	// zone while one of them is eligible (not ejected, not already tried),
	// else to any.
	ZoneAware bool `yaml:"zone_aware,omitempty"`
	// CrossZoneNetwork is added to Network, each way, for an attempt to a
	// replica in another zone than the caller's (the simulator only).
	CrossZoneNetwork *Dist `yaml:"cross_zone_network,omitempty"`

	// GRPCServiceConfig names a gRPC service config file whose methodConfig
	// for GRPCMethod ("pkg.Service/Method"; optional when it has one) sets
	// retry or hedge, and whose retryThrottling sets budget (package paste).
	GRPCServiceConfig string `yaml:"grpc_service_config,omitempty"`
	GRPCMethod        string `yaml:"grpc_method,omitempty"`
	// EnvoyRoute names an Envoy route file whose retry_policy sets retry,
	// timeout and honored pushback; EnvoyCluster an Envoy cluster file whose
	// circuit_breakers set budget.
	EnvoyRoute   string `yaml:"envoy_route,omitempty"`
	EnvoyCluster string `yaml:"envoy_cluster,omitempty"`
	// NginxConf names an nginx configuration whose location NginxLocation
	// (its arguments as written) or upstream NginxUpstream sets retry,
	// timeout, connect_timeout, balance and outlier_detection, as nginx
	// retries toward the callee's replicas; HAProxyCfg an HAProxy
	// configuration whose backend HAProxyBackend does (package paste).
	NginxConf      string `yaml:"nginx_conf,omitempty"`
	NginxLocation  string `yaml:"nginx_location,omitempty"`
	NginxUpstream  string `yaml:"nginx_upstream,omitempty"`
	HAProxyCfg     string `yaml:"haproxy_cfg,omitempty"`
	HAProxyBackend string `yaml:"haproxy_backend,omitempty"`
}

// EdgeConfig is the call's policy in the policies package's form, the one
// conversion the simulator and load mode build their edges from. The
// retry, budget and breaker configs are the resolved ones the loader
// validated, so what the run builds is what validate judged.
func (c *Call) EdgeConfig() policies.EdgeConfig {
	return policies.EdgeConfig{
		Timeout: c.Timeout, Retry: c.Retry, Budget: c.Budget, Breaker: c.Breaker,
		Hedge: c.Hedge, Throttle: c.Throttle, HonorPushback: c.HonorPushback, MaxPushback: c.MaxPushback,
		SendRate: c.SendRate,
		Phases: policies.PhaseTimeouts{Pool: c.PoolTimeout, Connect: c.ConnectTimeout,
			TLS: c.TLSTimeout, FirstByte: c.FirstByteTimeout, Queue: c.QueueTimeout},
	}
}

// Dist is a distribution of durations.
//
//	constant     value
//	exponential  mean
//	uniform      min, max
//	normal       mean, stddev (truncated at 0)
//	lognormal    p50, p99 (or mean, stddev)
//	mixture      modes: [{weight, <dist>}...] (bimodal and beyond)
//	empirical    file (one sample per line, in unit; default ms), resampled
type Dist struct {
	Dist   DistKind      `yaml:"dist"`
	Value  time.Duration `yaml:"value,omitempty"`
	Mean   time.Duration `yaml:"mean,omitempty"`
	Stddev time.Duration `yaml:"stddev,omitempty"`
	Min    time.Duration `yaml:"min,omitempty"`
	Max    time.Duration `yaml:"max,omitempty"`
	P50    time.Duration `yaml:"p50,omitempty"`
	P99    time.Duration `yaml:"p99,omitempty"`
	Modes  []Mode        `yaml:"modes,omitempty"`
	File   string        `yaml:"file,omitempty"`
	Unit   TimeUnit      `yaml:"unit,omitempty"`

	// Samples holds an empirical distribution's samples, loaded from File
	// (relative to the scenario's directory) at load time.
	Samples []time.Duration `yaml:"-"`
}

// Mode is one weighted component of a mixture.
type Mode struct {
	Weight float64 `yaml:"weight"`
	Dist   `yaml:",inline"`
}

// Fault changes a service during a window [At, At+For).
type Fault struct {
	Service string        `yaml:"service"`
	At      time.Duration `yaml:"at"`
	For     time.Duration `yaml:"for"`
	// Capacity multiplies the service's workers (0.5 halves them, 0 stops it).
	Capacity *float64 `yaml:"capacity,omitempty"`
	// LatencyAdd is added to every service time.
	LatencyAdd time.Duration `yaml:"latency_add,omitempty"`
	// ErrorRate replaces the service's error rate.
	ErrorRate *float64 `yaml:"error_rate,omitempty"`
	// DropResponse is the probability that a reply is lost after the work is done.
	DropResponse float64 `yaml:"drop_response,omitempty"`
	// Crash probabilities at the asynchronous boundaries: a dual-write
	// producer after its commit and before its publish (the event is
	// lost); an outbox publisher after publishing a row and before marking
	// it sent (it is published again); a consumer between its effect and
	// its ack (a redelivery, or with ack: before_effect a lost effect).
	CrashBetweenCommitAndPublish float64 `yaml:"crash_between_commit_and_publish,omitempty"`
	CrashBetweenPublishAndMark   float64 `yaml:"crash_between_publish_and_mark,omitempty"`
	CrashBetweenEffectAndAck     float64 `yaml:"crash_between_effect_and_ack,omitempty"`
	// CrashOwner is the probability that an owner of a write at the
	// committing service dies after its downstream steps and before it
	// records the result: the record stays PROCESSING, the reply never
	// goes (recovery, converge.go, settles it).
	CrashOwner float64 `yaml:"crash_owner,omitempty"`
	// Background marks a condition of the whole run (a steady rate of
	// crashes or lost replies) rather than the event the run recovers
	// from: the verdict's trigger leaves it out, so the baseline before
	// the trigger and the recovery after it both include it.
	Background bool `yaml:"background,omitempty"`
	// ResetConnections closes every pooled connection to the service when
	// the fault starts (a deploy): callers must connect and handshake again.
	ResetConnections bool `yaml:"reset_connections,omitempty"`
	// RefuseConnections makes the replicas hit refuse every connection
	// (a dead server): an attempt sent to one fails not_sent at once and
	// never reaches it. The simulator's; serve refuses the scenario.
	RefuseConnections bool `yaml:"refuse_connections,omitempty"`
	// Replica, Replicas and ReplicaFraction confine the fault to some
	// replicas of the service (at most one of them): replica K (0-based),
	// a list of them, or the first ⌈fraction × replicas⌉. None: every replica.
	Replica         *int     `yaml:"replica,omitempty"`
	Replicas        []int    `yaml:"replicas,omitempty"`
	ReplicaFraction *float64 `yaml:"replica_fraction,omitempty"`
	// Zone confines the fault to the service's replicas in that zone.
	Zone string `yaml:"zone,omitempty"`
}

// ReplicasHit lists the replicas (0-based, ascending) of service s that f
// affects.
func (f *Fault) ReplicasHit(s *Service) []int {
	n := s.ReplicaCount()
	var out []int
	switch {
	case f.Zone != "":
		for r := range n {
			if s.ZoneOf(r) == f.Zone {
				out = append(out, r)
			}
		}
	case f.Replica != nil:
		out = []int{*f.Replica}
	case len(f.Replicas) > 0:
		seen := make(map[int]bool)
		for _, r := range f.Replicas {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
		slices.Sort(out)
	case f.ReplicaFraction != nil:
		k := int(math.Ceil(*f.ReplicaFraction*float64(n) - 1e-9))
		for r := range min(k, n) {
			out = append(out, r)
		}
	default:
		for r := range n {
			out = append(out, r)
		}
	}
	return out
}

// OutlierDetection is Envoy's consecutive-failure outlier detection on a
// call edge: a replica that fails ConsecutiveFailures attempts in a row
// (errors, unavailable, timeouts, the caller's own timeouts included) is
// ejected from the balancer for BaseEjectionTime × the number of times it
// was ejected (capped at MaxEjectionTime), returning at the next tick of
// Interval; each Interval it spends back in service lowers that multiplier
// by one. At most MaxEjectionPercent of the replicas are ejected at once,
// but always at least one may be.
type OutlierDetection struct {
	// ConsecutiveFailures ejects after this many failures in a row (default 5).
	ConsecutiveFailures int `yaml:"consecutive_failures,omitempty"`
	// Interval is the sweep period (default 10s).
	Interval time.Duration `yaml:"interval,omitempty"`
	// BaseEjectionTime is the first ejection's length (default 30s).
	BaseEjectionTime time.Duration `yaml:"base_ejection_time,omitempty"`
	// MaxEjectionTime caps an ejection's length (default 300s).
	MaxEjectionTime time.Duration `yaml:"max_ejection_time,omitempty"`
	// MaxEjectionPercent caps the share of replicas ejected at once (default 10).
	MaxEjectionPercent float64 `yaml:"max_ejection_percent,omitempty"`
}

// Idempotency configures a committing service's idempotency store.
type Idempotency struct {
	// Retention is how long a completed key is remembered (default 24h).
	Retention time.Duration `yaml:"retention,omitempty"`
	// Lease is how long an owner may hold a key in PROCESSING (default 10s).
	Lease time.Duration `yaml:"lease,omitempty"`
	// InProgressRetryAfter is the retry-after sent with "in progress" (default 100ms).
	InProgressRetryAfter time.Duration `yaml:"in_progress_retry_after,omitempty"`
}

// Variant is a named set of --set overrides for comparison.
type Variant struct {
	Name string   `yaml:"name"`
	Set  []string `yaml:"set"`
}

// Limits stop a run that grows without bound (reported as diverged).
type Limits struct {
	// MaxInflight: attempts alive at once across all services (default 1,000,000).
	MaxInflight int `yaml:"max_inflight,omitempty"`
	// MaxEvents: events processed in one run (default 2e9).
	MaxEvents int64 `yaml:"max_events,omitempty"`
	// MaxEventRate: events per simulated second, counted over each
	// interval (default 2e7, about one second of this tool's work per
	// simulated second on a 2-core machine). A storm that packs more events
	// into simulated time than that is a runaway, whatever its length.
	MaxEventRate float64 `yaml:"max_event_rate,omitempty"`
	// MaxDrain: simulated time allowed after the arrival window for the
	// work still in the system to finish (default 1h). Slow work (a
	// latency_add of 2400h) otherwise kept the run, and a time-series row
	// per interval, going until it drained.
	MaxDrain time.Duration `yaml:"max_drain,omitempty"`
}

// Service returns the service with that name, or nil.
func (s *Scenario) Service(name string) *Service {
	for i := range s.Services {
		if s.Services[i].Name == name {
			return &s.Services[i]
		}
	}
	return nil
}
