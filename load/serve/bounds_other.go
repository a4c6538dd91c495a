//go:build !unix

package serve

// serveConnBudget is the connections a process's services accept at once.
func serveConnBudget() int { return 1024 }
