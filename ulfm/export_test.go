package ulfm

import "syscall"

// DieAt makes this rank SIGKILL itself when it reaches stage of a round.
func DieAt(stage string) {
	stageHook = func(s string) {
		if s == stage {
			syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}
