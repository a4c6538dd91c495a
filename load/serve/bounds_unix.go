//go:build unix

package serve

import "syscall"

// serveConnBudget is the connections a process's services accept at once:
// half its file-descriptor limit, leaving the rest to its outgoing
// connections and files.
func serveConnBudget() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(min(rl.Cur/2, 1<<20))
}
