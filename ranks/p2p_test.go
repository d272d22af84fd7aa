package ranks_test

import (
	"testing"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

func TestPingPongSizes(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		for _, n := range []int{0, 1, 8, 36, 37, 4096, 16384, 16385, 1 << 20, 4<<20 + 3} {
			buf := make([]byte, n)
			if r.Rank == 0 {
				for i := range buf {
					buf[i] = byte(i*31 + n)
				}
				r.Check(ranks.Send(c, buf, 1, n%1000), "send")
				st, err := ranks.Recv(c, buf, 1, n%1000)
				r.Check(err, "recv")
				if st.Bytes != n || st.Source != 1 {
					r.Errorf("status %+v", st)
				}
			} else {
				st, err := ranks.Recv(c, buf, 0, n%1000)
				r.Check(err, "recv")
				if st.Bytes != n {
					r.Errorf("got %d bytes want %d", st.Bytes, n)
				}
				for i := range buf {
					if buf[i] != byte(i*31+n) {
						r.Fatalf("size %d: byte %d is %d", n, i, buf[i])
					}
				}
				r.Check(ranks.Send(c, buf, 0, n%1000), "send")
			}
		}
	})
}

func TestPingPongPipelined(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Env: []string{job.EnvNoCMA + "=1"}}, func(r *ranktest.R) {
		c := r.Comm
		for _, n := range []int{16385, 100000, 1 << 20, 4<<20 + 3} {
			buf := make([]int32, n/4)
			if r.Rank == 0 {
				for i := range buf {
					buf[i] = int32(i ^ n)
				}
				r.Check(ranks.Send(c, buf, 1, 7), "send")
			} else {
				st, err := ranks.Recv(c, buf, 0, 7)
				r.Check(err, "recv")
				if st.Count != n/4 {
					r.Errorf("count %d want %d", st.Count, n/4)
				}
				for i := range buf {
					if buf[i] != int32(i^n) {
						r.Fatalf("size %d: elem %d is %d", n, i, buf[i])
					}
				}
			}
		}
	})
}
