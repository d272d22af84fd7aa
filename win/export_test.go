package win

// RaceEnabled tells the tests that count allocations that the race
// detector is on: its sync.Pool drops items at random.
const RaceEnabled = raceEnabled
