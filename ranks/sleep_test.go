package ranks_test

import (
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/shm"
)

// Receivers that sleep at once (SHMPI_SPIN=0, SHMPI_P2P_YIELDS=0) are woken by every kind of
// small send: blocking sends (sendInline), nonblocking ones (trySend),
// and bursts that travel in short records. Where the kernel has the
// global membarrier, senders publish without a fence and the sleeper's
// barrier stands in for it (engine.fenceSends): a wake-up lost to that
// would leave a receiver asleep until its sleep's timeout, which this
// test counts. With the fence forced (SHMPI_FENCE_SENDS=1) the same
// must hold.
func TestSleepingReceiversAreWoken(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		name := "barrier"
		env := []string{"SHMPI_SPIN=0", "SHMPI_P2P_YIELDS=0"}
		if fenced {
			name = "fenced"
			env = append(env, "SHMPI_FENCE_SENDS=1")
		}
		t.Run(name, func(t *testing.T) {
			o := ranktest.Options{N: 2, Cores: 2, Env: env, Quiet: true}
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				wantFence := fenced || !shm.HaveGlobalBarrier()
				if got := r.World.FencesSends(); got != wantFence {
					r.Errorf("fences its sends: %v, want %v", got, wantFence)
				}
				const rounds = 1500
				sleepyPingPong(r, rounds)
				if n := r.World.Sleeps(); n < rounds/10 {
					r.Errorf("%d waits went to sleep in %d rounds: the test does not test sleepers", n, rounds)
				}
				r.Logf("%d waits went to sleep", r.World.Sleeps())
				if n := r.World.SleepTimeouts(); n != 0 {
					r.Errorf("%d sleeps ended by their timeout: a wake-up was lost", n)
				}
			})
		})
	}
}

// sleepyPingPong: each round rank 0 sends a burst of 4 small messages
// (blocking, nonblocking, and back to back so that they pack into short
// records), and rank 1 answers with one blocking send, then one
// nonblocking one; every receive finds its message missing at first.
func sleepyPingPong(r *ranktest.R, rounds int) {
	c := r.Comm
	one := make([]byte, 1)
	eight := make([]byte, 8)
	for i := range rounds {
		if r.Rank == 0 {
			one[0] = byte(i)
			r.Check(ranks.Send(c, one, 1, 1), "send")
			reqs := make([]*ranks.Request, 3)
			for k := range reqs {
				eight[0] = byte(i + k)
				rq, err := ranks.Isend(c, eight, 1, 2)
				r.Check(err, "isend")
				reqs[k] = rq
			}
			r.Check(ranks.WaitAll(reqs, nil), "wait sends")
			_, err := ranks.Recv(c, one, 1, 3)
			r.Check(err, "recv answer")
			if one[0] != byte(i) {
				r.Fatalf("round %d: answer %d", i, one[0])
			}
			continue
		}
		_, err := ranks.Recv(c, one, 0, 1)
		r.Check(err, "recv")
		if one[0] != byte(i) {
			r.Fatalf("round %d: message %d", i, one[0])
		}
		for k := range 3 {
			_, err := ranks.Recv(c, eight, 0, 2)
			r.Check(err, "recv burst")
			if eight[0] != byte(i+k) {
				r.Fatalf("round %d: burst message %d is %d", i, k, eight[0])
			}
		}
		if i%2 == 0 {
			r.Check(ranks.Send(c, one, 0, 3), "send answer")
		} else {
			rq, err := ranks.Isend(c, one, 0, 3)
			r.Check(err, "isend answer")
			_, err = rq.Wait()
			r.Check(err, "wait answer")
		}
	}
}

// Every byte of small messages arrives, whatever its value: bursts that
// mix short, full and double inbox records over many laps of the inbox,
// every length from 0 to 110 (short, full and double records, and the
// first chunk sizes), bytes with the top bit set where records keep
// their guard words (data bytes 11, 43 and 75), through blocking and
// nonblocking sends.
func TestSmallMessageBytesIntact(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		fill := func(b []byte, round, n int) {
			for i := range b {
				b[i] = byte(0x80 | (round*31 + n*7 + i*13))
				if (round+i)%5 == 0 {
					b[i] &^= 0x80
				}
			}
		}
		const maxLen = 110
		want := make([]byte, maxLen)
		got := make([]byte, maxLen)
		for round := range 60 {
			if r.Rank == 0 {
				var reqs []*ranks.Request
				for n := range maxLen + 1 {
					b := make([]byte, n)
					fill(b, round, n)
					if n%2 == 0 {
						r.Check(ranks.Send(c, b, 1, n), "send")
						continue
					}
					rq, err := ranks.Isend(c, b, 1, n)
					r.Check(err, "isend")
					reqs = append(reqs, rq)
				}
				r.Check(ranks.WaitAll(reqs, nil), "wait sends")
				_, err := ranks.Recv(c, got[:1], 1, 99) // a ping-pong between bursts
				r.Check(err, "recv ack")
				continue
			}
			for n := range maxLen + 1 {
				fill(want[:n], round, n)
				st, err := ranks.Recv(c, got, 0, n)
				r.Check(err, "recv")
				if st.Bytes != n || string(got[:n]) != string(want[:n]) {
					r.Fatalf("round %d, %d bytes: got %x (%d bytes), want %x", round, n, got[:st.Bytes], st.Bytes, want[:n])
				}
			}
			r.Check(ranks.Send(c, got[:1], 0, 99), "send ack")
		}
	})
}

// A rank whose waits are marked to sleep at once (ext.SleepAtOnce, as
// coll's node-local phases across nodes mark theirs) sleeps without
// yielding first, however many times the marks nest; unmarked, a rank
// that outnumbers the cores yields before it sleeps.
func TestSleepAtOnce(t *testing.T) {
	o := ranktest.Options{N: 2, Cores: 1, Env: []string{"SHMPI_P2P_YIELDS=8"}, Quiet: true}
	ranktest.RunOpts(t, o, func(r *ranktest.R) {
		c := r.Comm
		b := make([]byte, 1)
		const rounds = 300
		marked := r.Rank == 1
		if marked {
			ranks.SleepAtOnce(c, true)
			ranks.SleepAtOnce(c, true)
			ranks.SleepAtOnce(c, false) // still marked once
		}
		y, s := r.World.Yields(), r.World.Sleeps()
		for i := range rounds {
			b[0] = byte(i)
			if r.Rank == 0 {
				r.Check(ranks.Send(c, b, 1, 1), "send")
				_, err := ranks.Recv(c, b, 1, 2)
				r.Check(err, "recv")
				continue
			}
			_, err := ranks.Recv(c, b, 0, 1)
			r.Check(err, "recv")
			r.Check(ranks.Send(c, b, 0, 2), "send")
		}
		yields, sleeps := r.World.Yields()-y, r.World.Sleeps()-s
		if marked {
			ranks.SleepAtOnce(c, false)
			if yields != 0 || sleeps < rounds/10 {
				r.Errorf("marked: %d yields and %d sleeps in %d rounds, want no yield and some sleeps", yields, sleeps, rounds)
			}
			return
		}
		if yields == 0 {
			r.Errorf("unmarked: no yield in %d rounds (%d sleeps)", rounds, sleeps)
		}
	})
}
