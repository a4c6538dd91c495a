// Package capacity finds how much load a scenario can take while meeting a
// service-level objective, in steady state and after its faults, and which
// resource or policy setting would make it meet the objective at a target
// load. It is the engine of `stormsim capacity`.
//
// # Objectives
//
// An SLO is a comma-separated list of terms, all of which must hold:
//
//	p99<300ms,success>=99.9%,amplification<=1.5,db.utilization<0.8
//
// Run-wide metrics are the end-to-end latencies of succeeded requests (p50,
// p90, p99, p999, mean, max), the shares of offered requests that
// succeeded, failed or ended unknown, goodput and amplification; per-service
// ones are written SERVICE.METRIC (utilization, queue, queue_max, attempts,
// p50, p99, rejected). A latency of a run in which nothing succeeded is
// +Inf, so a collapsed system never meets a latency objective.
//
// # The judgement at one point
//
// A point (one value of the searched parameter) runs n replicas; replica r
// uses the seed analysis.ReplicaSeed(seed, r) at every point, so points
// differ by the parameter, not by their random numbers (common random
// numbers). For each of the k terms, the replicas' metric gives a mean m,
// a sample standard deviation s and one-sided bounds
//
//	m ± t(1 − α/k, n − 1)·s/√n      (α = 1 − Confidence; Bonferroni over k terms)
//
// A term holds when the bound on the far side meets its threshold (the
// upper bound for p99<…, the lower bound for success>=…), fails when the
// bound on the near side misses it, and is unsure otherwise. The SLO holds
// in steady state when every term holds: then, with probability at least
// Confidence, every term's expected value meets its threshold. One
// replica gives the point estimate and no confidence; a replica that
// diverged fails the point.
//
// When the scenario has faults, each replica also runs with them, and the
// metastability detector of package analysis (analysis.Detect) judges
// whether goodput and amplification came back to their pre-fault baseline
// within the recovery bound. Recovery holds when all n replicas recover;
// the one-sided Clopper–Pearson bound then says that a run recovers with
// probability at least (1 − Confidence)^(1/n) (RecoveryLowerBound). It
// fails when fewer than half recover, and is unsure in between. The
// steady-state runs drop the faults; both drop any rate schedule, since
// capacity is about a constant load.
//
// # The search
//
// Run evaluates both ends of the range, decides on which side the SLO
// holds (a load holds below its capacity, a worker count above its need),
// then bisects: first to where the SLO stops being shown to hold (unsure
// counts as not holding, so the answer errs low), then, unless PassOnly,
// between there and the nearest point shown to fail. The answer is thus
// "holds at a with 95 % confidence; fails at b", with the points between
// unsure. Each phase takes at most ⌈log2((Hi − Lo)/Resolution)⌉ steps, and
// each step runs n (or 2n with faults) simulations; integer parameters
// visit integers only. The runs of a step (Search.Runs) are a pure
// function of the inputs and of the verdicts before it, so the runs of
// each step can be split between processes: with Options.Exchange (for
// example a DirExchange on a shared volume) each shard runs its share,
// receives the others' results, and every shard reaches the unsharded
// outcome; MergeShards checks their reports agree.
//
// The bound of the answer is read at the point beyond it: the steady-state
// SLO, recovery after the faults, or both. The bottleneck is the service
// with the highest utilization there.
//
// # Concurrency
//
// Run calls its analysis.Runner from up to Options.Workers goroutines at
// once (the evaluation pool, pool.go: an errgroup with that limit; the
// first failure stops the runs not yet started); everything else happens
// in the caller's goroutine. Search, Outcome and Report are plain values,
// safe to share once built.
package capacity
