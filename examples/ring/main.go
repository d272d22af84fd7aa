// Command ring passes a token around all ranks a number of times and
// reports the time per hop:
//
//	shmrun -n 64 ./ring -laps 1000
package main

import (
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/shmpi/shmpi/ranks"
)

func main() {
	laps := flag.Int("laps", 1000, "times the token goes around")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	c := w.Comm()
	me, n := c.Rank(), c.Size()
	next, prev := (me+1)%n, (me+n-1)%n
	token := []int64{0}
	start := time.Now()
	for lap := 0; lap < *laps; lap++ {
		if me == 0 {
			token[0]++
			if err := ranks.Send(c, token, next, 0); err != nil {
				log.Fatal(err)
			}
			if _, err := ranks.Recv(c, token, prev, 0); err != nil {
				log.Fatal(err)
			}
		} else {
			if _, err := ranks.Recv(c, token, prev, 0); err != nil {
				log.Fatal(err)
			}
			token[0]++
			if err := ranks.Send(c, token, next, 0); err != nil {
				log.Fatal(err)
			}
		}
	}
	if me == 0 {
		el := time.Since(start)
		want := int64(*laps * n)
		if token[0] != want {
			log.Fatalf("token is %d, want %d", token[0], want)
		}
		fmt.Printf("ring: %d ranks, %d laps, token %d, %v total, %.2f µs per hop\n",
			n, *laps, token[0], el.Round(time.Millisecond), float64(el.Microseconds())/float64(want))
	}
}
