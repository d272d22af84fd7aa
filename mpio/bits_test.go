package mpio

import (
	"math/rand/v2"
	"testing"
)

// setBits and nextBit against a bool per bit.
func TestBits(t *testing.T) {
	const n = 1000
	for it := range 2000 {
		rng := rand.New(rand.NewPCG(uint64(it), 1))
		bm := make([]uint64, (n+63)/64)
		ref := make([]bool, n)
		for range rng.IntN(5) + 1 {
			a := rng.Int64N(n)
			e := a + rng.Int64N(n-a+1)
			setBits(bm, a, e)
			for i := a; i < e; i++ {
				ref[i] = true
			}
		}
		for i := range int64(n) {
			if got := bm[i>>6]>>(i&63)&1 == 1; got != ref[i] {
				t.Fatalf("case %d: bit %d is %v, want %v", it, i, got, ref[i])
			}
		}
		from, to := rng.Int64N(n), int64(n)
		from = min(from, to)
		for _, set := range []bool{true, false} {
			want := to
			for i := from; i < to; i++ {
				if ref[i] == set {
					want = i
					break
				}
			}
			if got := nextBit(bm, from, to, set); got != want {
				t.Fatalf("case %d: nextBit(%d, %d, %v) = %d, want %d", it, from, to, set, got, want)
			}
		}
	}
}
