package server

// MaxBuffered is how many bytes of lines a LogWriter keeps for an output
// that takes none.
const MaxBuffered = maxBuffered
