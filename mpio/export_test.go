package mpio

import "github.com/shmpi/shmpi/internal/ext"

// SetRoundHook sets the function that every member runs in every round
// of a collective access, before the round's barrier (for kill tests).
func SetRoundHook(h func(op string, round int)) { ext.IORoundHook = h }
