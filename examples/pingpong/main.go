// Command pingpong bounces messages of growing size between ranks 0 and 1
// and checks every byte:
//
//	shmrun -n 2 ./pingpong
package main

import (
	"fmt"
	"log"
	"time"

	"github.com/shmpi/shmpi/ranks"
)

func main() {
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	c := w.Comm()
	if c.Size() < 2 {
		log.Fatal("pingpong needs 2 ranks: shmrun -n 2 ./pingpong")
	}
	me := c.Rank()
	if me > 1 {
		return
	}
	peer := 1 - me
	for size := 1; size <= 1<<22; size *= 4 {
		buf := make([]byte, size)
		const reps = 100
		start := time.Now()
		for i := 0; i < reps; i++ {
			if me == 0 {
				for j := range buf {
					buf[j] = byte(i + j)
				}
				must(ranks.Send(c, buf, peer, i))
				st, err := ranks.Recv(c, buf, peer, i)
				must(err)
				if st.Bytes != size || buf[size-1] != byte(i+size-1)+1 {
					log.Fatalf("size %d rep %d: bad reply", size, i)
				}
			} else {
				_, err := ranks.Recv(c, buf, peer, i)
				must(err)
				for j := range buf {
					buf[j]++
				}
				must(ranks.Send(c, buf, peer, i))
			}
		}
		if me == 0 {
			rt := time.Since(start) / reps
			fmt.Printf("%8d bytes: round trip %v, %.1f MB/s\n", size, rt, 2*float64(size)/rt.Seconds()/1e6)
		}
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
