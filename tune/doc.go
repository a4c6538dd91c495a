// Package tune recommends call policies for a chain of services from
// measured latency: per-hop attempt timeouts, which single layer retries and
// how often, a hedge delay, and a retry budget that bounds worst-case load
// amplification. It backs `stormsim tune`.
//
// # Inputs
//
// Each hop's samples are the latency of one attempt of the call into it, as
// its caller sees it (everything below it included). They come from a file
// of numbers or a CSV column (ReadSamples), vegeta results (ReadVegeta, 2xx
// only), a stormsim results directory (its histograms.json), or a
// scenario's service times (the unloaded latency down the chain); see
// Source. Readers' errors name the file and line.
//
// # Formulas
//
// All quantiles are nearest-rank on the empirical distribution:
// Quantile(q) is the ⌈q·n⌉-th smallest sample, and S(t) = P(X > t) is the
// fraction of samples above t.
//
//   - Attempt timeout T = Quantile(p) (default p99.9). Its predicted
//     spurious-timeout rate, attempts cut that would have succeeded, is S(T).
//   - Budget split, top-down: B₀ = deadline; B_{i+1} = B_i − own_i − response,
//     where own_i = p99_i − p99_{i+1} is hop i's own share of its latency
//     (the whole p99 for the last hop). Attempts that fit: ⌊B_i / T_i⌋. A hop
//     where not even one fits is an error (*DeadlineError) naming it.
//   - Retries at one layer only: with k attempts at each of N layers the
//     worst case is kᴺ attempts at the bottom; at one layer it is k. The
//     owner is the deepest hop whose budget fits two attempts, since its
//     retry repeats the least work; callers above it get timeouts long
//     enough to wait for its k attempts (T_i ≥ own_i + response + k·T_owner).
//   - Hedge after d = Quantile(h) (default p95): extra load S(d); latency of
//     min(X₁, d + X₂) has P(T > t) = S(t) for t < d and S(t)·S(t − d) for
//     t ≥ d, from which the hedged p99 is read.
//   - Retry budget ratio r for a worst-case amplification A: r = A − 1 at a
//     single layer; r = A^(1/N) − 1 if each of N layers retried, since
//     (1 + r)ᴺ = A.
//   - Mixed populations: a one- and a two-component Gaussian mixture are
//     fitted to log-latency by EM and compared by BIC; two well-separated
//     components (ΔBIC > 10, Ashman's D > 2) trigger a warning with
//     per-mode percentiles.
//
// # Zero values and concurrency
//
// A zero Options takes the documented defaults except Deadline, which is
// required. Samples is immutable once built and safe for concurrent reads;
// Plan and Comparison are plain values. Nothing here reads the clock or a
// global random source: scenario sampling is seeded.
package tune
