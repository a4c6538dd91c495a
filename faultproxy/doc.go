// Package faultproxy is an HTTP/1.1 (and, with H2C, h2c) reverse proxy that puts per-request
// faults between a client and a real upstream: the reply lost after the
// upstream did the work, a reset before or after forwarding, added
// latency, a 503 with Retry-After, a blackhole. It is `stormsim proxy`,
// and the proxy `stormsim audit` puts in front of every instance of the
// service it audits.
//
// # Faults
//
// The faults are topology.ProxyFault lines — the scenario's fault
// vocabulary (at, for, latency_add, error_rate, drop_response) plus the
// proxy's own outcomes — each applying during its window, counted from
// Config.Epoch, to the requests it matches. For every request and line the
// proxy draws one number u in [0, 1) from a stream seeded by Config.Seed
// and keyed by the request's X-Stormsim-Request-Id and X-Stormsim-Attempt
// (by its arrival number when it has none), so the same run of requests
// meets the same faults whatever the order they arrive in; the line's
// probabilities split [0, 1) in the order reset_before, blackhole,
// error_rate, reset_after, drop_response. The first line that picks an
// outcome decides it; latencies of every matching line add up.
//
// A Rule, consulted before the lines, decides per request in code: the
// audit uses it to drop the reply of one attempt, to hold requests until
// it releases them (a barrier for concurrent first requests), and to learn
// when a request has been written to the upstream.
//
// # What each outcome does
//
//	none            forward; deliver the upstream's answer
//	reset_before    reset the client's connection (TCP RST); not forwarded
//	blackhole       not forwarded, never answered; the connection is held
//	                until the client closes it (or MaxHold)
//	error           answer 503 (Retry-After when set); not forwarded
//	reset_after     forward, read the whole answer, reset the connection
//	drop_response   forward, read the whole answer, then close the
//	                connection (drop: close) or hold it unanswered until the
//	                client gives up (drop: hold)
//
// # HTTP semantics
//
// Connections from the client are kept alive, and so are the proxy's
// connections to the upstream. The request body is read whole before
// forwarding (at most MaxBodyBytes, else 413; reading it is what sends
// 100 Continue to a client that expects it), and so is the answer (at most
// MaxResponseBytes, else 502), which is what lets the proxy drop a reply
// the upstream completed. Hop-by-hop headers (Connection and the fields it
// names, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade) are
// not forwarded either way; an answer the upstream sent chunked is sent
// chunked, with its trailers, and one with a length keeps it. A header
// block over MaxHeaderBytes is refused with 431 by the server Listen
// starts. An upstream that cannot be reached is a 502 naming it.
//
// With Config.H2C the server also accepts HTTP/2 without TLS (prior
// knowledge, as gRPC clients speak it) and forwards those requests over
// h2c, TE: trailers included; there a drop or reset resets the request's
// stream (the connection carries others) and a hold keeps the stream
// unanswered.
//
// # Records and metrics
//
// Every request gets one Record — its request id, idempotency key,
// attempt, method, path, the fault and who decided it, the upstream's
// status and the timings — written as a JSON line to Config.Log and
// passed to Config.OnRecord, and counted in Metrics (Prometheus,
// stormsim_proxy_requests_total by fault).
//
// # Concurrency
//
// A Proxy is an http.Handler safe for concurrent use. Config is read once
// by New.
package faultproxy
