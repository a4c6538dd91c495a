// Package model is the compiled meaning of a scenario, shared by the
// simulator (package sim) and the real services of load mode (package
// load): the plan, Compile's resolved form of a scenario that both modes
// bind (replicas with their streams and faults, steps with their members
// and quorums, the client fleet, the arrivals), the named random streams,
// the one rule that combines overlapping faults, and the clock-free
// machines: the callee that decides what happens to an attempt at a
// service, the step machine of a parallel group (Quorum), the balancer, the
// arrivals, the broker's. Which service commits writes is topology's rule
// (topology.Scenario.Committer), which the plan records.
//
// Like package policies, nothing here reads a clock or blocks: time is an
// argument and randomness an injected stream. The simulator drives a Callee
// from engine events on its virtual clock; `stormsim serve` drives the very
// same Callee from HTTP handlers under a mutex with the wall clock. A
// scenario therefore means the same thing in both modes because both run
// this code.
package model
