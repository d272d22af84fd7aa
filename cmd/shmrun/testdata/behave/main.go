// Command behave is a rank program for shmrun's tests: -mode picks what
// it does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"syscall"

	"shmpi/ranks"
)

func main() {
	mode := flag.String("mode", "hello", "hello|stdin|env|die|finalize-exit1|block")
	how := flag.String("how", "exit", "for -mode die: exit or kill")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	c := w.Comm()
	me, n := c.Rank(), c.Size()
	switch *mode {
	case "hello":
		fmt.Printf("hello from %d\nsecond line from %d\n", me, me)
	case "stdin":
		b, _ := io.ReadAll(os.Stdin)
		fmt.Printf("rank %d stdin %q\n", me, b)
	case "env":
		fmt.Printf("rank %d env %s\n", me, os.Getenv("SHMRUN_TEST_VAR"))
	case "die":
		if me == 1 {
			// Wait until every other rank is about to block on us.
			for range n - 1 {
				if _, err := ranks.Recv(c, make([]byte, 1), ranks.AnySource, 1); err != nil {
					log.Fatal(err)
				}
			}
			if *how == "kill" {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			os.Exit(3)
		}
		if err := ranks.Send(c, []byte{1}, 1, 1); err != nil {
			log.Fatal(err)
		}
		_, err := ranks.Recv(c, make([]byte, 1), 1, 2)
		if errors.Is(err, ranks.ErrProcFailed) {
			fmt.Printf("rank %d got ErrProcFailed\n", me)
		} else {
			fmt.Printf("rank %d got %v\n", me, err)
			os.Exit(1)
		}
	case "finalize-exit1":
		w.Finalize()
		if me == 1 {
			os.Exit(1)
		}
		return
	case "block":
		fmt.Printf("ready %d pid %d\n", me, os.Getpid())
		ranks.Recv(c, make([]byte, 1), (me+1)%n, 99) // never sent
	}
	w.Finalize()
}
