package coll_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shmpi/shmpi/coll"
)

type myFloat float32

// Sum's vectorized path gives, element for element, the bits of the
// scalar loop, at every length around its step sizes and for special
// values.
func TestSumMatchesScalar(t *testing.T) {
	special := []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-310}
	rng := rand.New(rand.NewPCG(1, 2))
	val := func() float64 {
		if rng.IntN(8) == 0 {
			return special[rng.IntN(len(special))]
		}
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10))
	}
	for n := 0; n < 300; n++ {
		a64, b64 := make([]float64, n), make([]float64, n)
		a32, b32 := make([]float32, n), make([]float32, n)
		am, bm := make([]myFloat, n), make([]myFloat, n)
		for i := range n {
			a64[i], b64[i] = val(), val()
			a32[i], b32[i] = float32(a64[i]), float32(b64[i])
			am[i], bm[i] = myFloat(a32[i]), myFloat(b32[i])
		}
		want64, want32 := make([]float64, n), make([]float32, n)
		for i := range n {
			want64[i] = a64[i] + b64[i]
			want32[i] = a32[i] + b32[i]
		}
		coll.Sum(a64, b64)
		coll.Sum(a32, b32)
		coll.Sum(am, bm)
		for i := range n {
			if math.Float64bits(a64[i]) != math.Float64bits(want64[i]) && !(math.IsNaN(a64[i]) && math.IsNaN(want64[i])) {
				t.Fatalf("float64 n=%d i=%d: %v, want %v", n, i, a64[i], want64[i])
			}
			if math.Float32bits(a32[i]) != math.Float32bits(want32[i]) && !(a32[i] != a32[i] && want32[i] != want32[i]) {
				t.Fatalf("float32 n=%d i=%d: %v, want %v", n, i, a32[i], want32[i])
			}
			if math.Float32bits(float32(am[i])) != math.Float32bits(want32[i]) && !(am[i] != am[i] && want32[i] != want32[i]) {
				t.Fatalf("named float32 n=%d i=%d: %v, want %v", n, i, am[i], want32[i])
			}
		}
	}
}
