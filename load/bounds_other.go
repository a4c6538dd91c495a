//go:build !unix

package load

// serveConnBudget is the connections a process's services accept at once.
func serveConnBudget() int { return 1024 }
