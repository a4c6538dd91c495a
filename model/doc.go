// Package model is the compiled meaning of a scenario, shared by the
// simulator (package sim) and the real services of load mode (package
// load): the named random streams, the one rule that picks the committing
// service, the one rule that combines overlapping faults, and the callee
// state machine that decides what happens to an attempt at a service.
//
// Like package policies, nothing here reads a clock or blocks: time is an
// argument and randomness an injected stream. The simulator drives a Callee
// from engine events on its virtual clock; `stormsim serve` drives the very
// same Callee from HTTP handlers under a mutex with the wall clock. A
// scenario therefore means the same thing in both modes because both run
// this code.
package model
