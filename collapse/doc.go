// Package collapse estimates how likely a simulated system is to reach a
// level — a queue of 500, a flood of attempts — within a horizon: the
// chance of tipping into a retry storm, far too small to see by running
// the simulator.
//
// Split estimates it by multilevel splitting on stormsim's own simulation,
// restarting runs from the states where earlier runs crossed intermediate
// levels (sim.Trajectory). Solve answers from a continuous-time Markov
// chain where the scenario has one (Fit): the M/M/c/K birth-death queue
// exactly, the single-queue retry model approximately, by uniformization.
// The two are cross-checks of each other; the simulation is the reference.
package collapse
