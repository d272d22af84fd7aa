// Command ulfm_revoke measures how long a revoke takes to reach every
// member: rank 0 revokes a fresh Dup of the world once every other member
// is blocked in a Recv on it (from a rank that never sends), and the
// figure is the time from just before Revoke until the last member has
// returned ErrRevoked.
//
//	shmrun -n 8 ./ulfm_revoke [-i 50]
//
// With -spinning the members do not sleep first: each tells rank 0 it
// is about to block, and rank 0 revokes as soon as all have said so, so
// that the revoke reaches members still polling (the spin phase of ranks
// that do not outnumber cores, about 0.5 ms here). Ranks that outnumber
// cores yield and sleep at once, so -spinning means little for them.
//
// Times are wall-clock (time.Now().UnixNano(): CLOCK_REALTIME through the
// vDSO, one clock for every process of the machine). The row has the
// median and the 90th percentile over -i revokes, in microseconds.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

func main() {
	iters := flag.Int("i", 50, "revokes measured")
	spinning := flag.Bool("spinning", false, "revoke while the members still spin in their Recv, not once they sleep")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	c := w.Comm()
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	var lat []float64
	for range *iters {
		d, err := c.Dup()
		must(err)
		var start, end int64
		if c.Rank() == 0 && *spinning {
			// Every other member says it is about to block in its Recv.
			for range c.Size() - 1 {
				_, err := ranks.Recv(c, []byte(nil), ranks.AnySource, 2)
				must(err)
			}
			start = time.Now().UnixNano()
			must(ulfm.Revoke(d))
		} else if c.Rank() == 0 {
			// Wait until every other member sleeps in its Recv.
			for {
				n := 0
				for _, f := range w.Fates()[1:] {
					if f.Blocked && f.Op == "Recv" {
						n++
					}
				}
				if n == c.Size()-1 {
					break
				}
				time.Sleep(50 * time.Microsecond) // polling the table, not ordering ranks
			}
			start = time.Now().UnixNano()
			must(ulfm.Revoke(d))
		} else {
			if *spinning {
				must(ranks.Send(c, []byte(nil), 0, 2))
			}
			_, err := ranks.Recv(d, make([]byte, 1), 0, 1)
			end = time.Now().UnixNano()
			if !errors.Is(err, ranks.ErrRevoked) {
				log.Fatalf("rank %d: Recv returned %v, want ErrRevoked", c.Rank(), err)
			}
		}
		must(d.Free())
		last, err := coll.AllreduceValue(c, end, coll.Max[int64])
		must(err)
		if c.Rank() == 0 && c.Size() > 1 {
			lat = append(lat, float64(last-start)/1e3)
		}
	}
	if c.Rank() == 0 && len(lat) > 0 {
		slices.Sort(lat)
		fmt.Printf("# ranks  median_us  p90_us\n%-7d  %9.2f  %6.2f\n", c.Size(), lat[len(lat)/2], lat[len(lat)*9/10])
	}
}
