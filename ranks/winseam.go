package ranks

import "github.com/shmpi/shmpi/internal/ext"

// What package win needs of a communicator, through internal/ext.

func init() {
	ext.Pid = func(comm any, r int) int { c := comm.(*Comm); return int(c.e.t.CB(c.group[r]).Pid.Load()) }
}
