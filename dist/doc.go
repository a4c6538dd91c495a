// Package dist turns a scenario's distribution of durations (topology.Dist)
// into a Sampler. The simulator and the emulated HTTP services both draw
// service times and network delays through it, so a scenario means the same
// thing in both modes.
//
// The kinds and what a Sample is (all in nanoseconds, never negative, capped
// at MaxInt64/4 so that a draw can be added to a clock):
//
//	constant     value; draws nothing from the stream
//	exponential  mean · Exp(1)
//	uniform      min + U·(max − min)
//	normal       mean + stddev · N(0,1), truncated at 0 by rejection: the
//	             normal conditioned on ≥ 0, whose mean is
//	             μ + σ·φ(α)/(1 − Φ(α)) with α = −μ/σ
//	lognormal    exp(μ + σ·N(0,1)); from p50 and p99: μ = ln p50,
//	             σ = (ln p99 − μ)/z₀.₉₉; from mean m and stddev s:
//	             σ² = ln(1 + s²/m²), μ = ln m − σ²/2
//	mixture      mode i with probability weight_i / Σ weight (one uniform
//	             draw picks it, mode i owning [cum_{i−1}, cum_i)), then that
//	             mode's draw
//	empirical    one of the loaded samples, uniformly
//
// A Sampler holds no random state: the caller passes its own stream, so each
// component of a run draws from its own seeded stream and the draw sequence
// is reproducible. The zero Sampler is a constant 0. A Sampler is immutable
// after New and safe for concurrent use when each goroutine passes its own
// stream.
package dist
