// Package cputime reads the CPU time the process has used, so benchmarks
// can report CPU seconds beside wall time: on a shared machine the CPU
// figure is the steadier one.
package cputime
