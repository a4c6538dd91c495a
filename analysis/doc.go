// Package analysis runs experiments made of many simulations: comparisons of
// policy variants, parameter sweeps with replicas and confidence intervals,
// and the search for metastable failures.
//
// # Runs and randomness
//
// Every function takes a Runner (one scenario to one metrics.Result; the
// command line passes the simulator) and a Builder (a variant plus --set
// overrides to a fresh topology.Scenario; ScenarioBuilder makes one from a
// scenario loaded from YAML). Nothing here reads the clock or a global
// random source: the results are a pure function of the inputs.
//
// Compare runs the variants once each and prints them side by side; the
// first column, Baseline, is always the scenario as written (Variants).
//
// All variants of one replica run with the same seed. Because the simulator
// gives each component (the arrivals, each service, each policy) its own
// random stream, variants then see the same arrivals and service times —
// common random numbers — and differences between columns are due to the
// policies, not to sampling noise. Replica r of a scenario with seed s runs
// with ReplicaSeed(s, r): s itself for r = 0, a SplitMix64 mix of (s, r)
// otherwise.
//
// # Sweeps
//
// A Sweep's work units are numbered point-major, then variant, then replica
// (Sweep.Units). Outputs are always written in that order, whatever the
// number of workers. A Shard I/N runs the units whose index is ≡ I (mod N);
// MergeRows joins shard outputs into exactly the unsharded rows.
//
// Aggregates give, per point and variant, each measure's mean over the
// replicas and a 95 % confidence interval mean ± t(0.975, n−1)·s/√n, with
// Student's t quantile and the sample standard deviation s.
//
// # Metastability
//
// A system is metastable when it stays degraded after the trigger that
// degraded it is gone. Detect scores each time-series interval against a
// baseline taken before the trigger (as the metastability monitor of the
// DesCartes simulator does):
//
//	baseline    b  = mean goodput of the whole intervals in [warm-up, trigger start)
//	tolerance   τ  = max(Tolerance, NoiseZ·sd/b), sd the baseline intervals' standard deviation
//	recovered      ⇔ goodput ≥ (1 − τ)·b  and  amplification ≤ (1 + τa)·ba
//
// where ba is the baseline of the per-interval amplification (the largest
// over services of attempts/offered) and τa is AmpTolerance widened by noise
// the same way. The system recovers when Consecutive recovered intervals in
// a row begin within RecoveryBound after the trigger ends; the time to
// recover is the start of the first of them minus the trigger's end.
// DetectorConfig's zero value uses the documented defaults (tolerance 0.1,
// amplification tolerance 0.2, noise z 3, K = 3, bound 30s).
//
// RunMetastable applies the detector at each load level and variant;
// MetastableReport.Boundary gives the highest level that still recovers. A
// Ramp steps the load up and back down; HysteresisOf reads goodput against
// offered load on both paths, which differ when the system is metastable.
//
// # Concurrency
//
// RunSweep and Compare call their Runner from up to Workers goroutines at
// once (an errgroup with that limit); the first failure stops the runs not
// yet started. Everything else runs in the caller's goroutine. The types
// hold no hidden state and are safe to share once built.
package analysis
