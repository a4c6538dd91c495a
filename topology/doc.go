// Package topology holds the scenario: the services of a call graph, the
// workload offered at its entry, the faults injected into it and the policy
// settings of every call edge, as plain typed data. Package sim simulates a
// Scenario and package load drives or serves it over HTTP; topology itself
// has no behaviour.
//
// # Loading
//
// Load (and Parse, for bytes in memory) turns a YAML file into a validated
// Scenario in five steps:
//
//  1. parse the YAML into a yaml.Node tree, keeping every value's line;
//  2. apply --set overrides ("services.db.workers=4") to the tree, guided
//     by the Go types so an unknown key is caught at once; services are
//     addressed by name, calls by their callee or index, other lists by
//     index, and missing mappings are created;
//  3. decode the tree strictly: unknown or duplicate keys, malformed
//     durations and numbers, unknown names of enumerated keys (typed
//     strings such as Arrival or policies.BudgetKind) and wrong shapes are
//     problems; the decoder records which keys each block wrote;
//  4. fill the documented defaults (seed 1, interval 1s, fanout 1, ...;
//     docs/scenario.md lists them all) and resolve each retry, budget and
//     breaker block once, with policies' Resolve: its preset, then the keys
//     the file wrote (zero included), then the kind's defaults. The
//     simulator and load mode build from these resolved configs as they
//     are (Call.EdgeConfig), so what validate judged is what runs;
//  5. validate: references, call cycles, ranges, distributions (loading
//     empirical sample files), each policy's own Validate (whose
//     *policies.FieldError names the field, joined here to the block's
//     path and line), and that every variant's overrides apply.
//
// Every problem found is returned at once as Problems, sorted by line, each
// naming its file and line (or the --set that introduced it) and the
// field's path: "scenario.yaml:14: services[2].workers: must be > 0, got -3".
//
// When no service is marked commits: true, the committing service is the
// one reached from the entry by following each service's first call until a
// service that calls nothing.
//
// # Zero values and concurrency
//
// A zero Scenario is not valid (it has no duration and no services); build
// scenarios with Load or Parse. A loaded Scenario is not modified by this
// package afterwards: WithSets and Variant return new values. Concurrent
// reads of a Scenario are safe; Load and Parse share no state and may run
// concurrently.
package topology
