package win

// RaceEnabled tells the tests that count allocations that the race
// detector is on: its sync.Pool drops items at random.
const RaceEnabled = raceEnabled

// LockState is target t's lock word and the bit-or of its shared
// holders' bitmap words, as in the window's memory.
func LockState(w *Win, t int) (word, holders uint64) {
	for i := range w.holderWords(t) {
		holders |= w.holderWords(t)[i].Load()
	}
	return w.control(t).lock.Load(), holders
}
